# Cython declarations for storage/engine/ordertree.py (an augmenting .pxd): the same
# source runs plain, and compiled as `ordertree_native` (storage/engine/native.py).
cimport cython

cdef class Leaf:
    cdef public list keys

cdef class Inner:
    cdef public list children
    cdef public list counts
    cdef public list lows

cdef class OrderTree:
    cdef object _txn
    cdef object _db
    cdef object _tree_no
    cdef public object state
    cdef dict _nodes
    cdef set _dirty
    cdef set _freed

    cpdef list apply(self, list keys, object deltas)
    cpdef apply_into(self, list keys, signed char[::1] deltas, long long[::1] ranks)

    @cython.locals(
        inner=Inner, counts=list, lows=list, children=list, leaf=list, rebuilt=list,
        net=Py_ssize_t, child=Py_ssize_t, before=Py_ssize_t, first_touched=bint,
        found=Py_ssize_t, stop=Py_ssize_t, change=Py_ssize_t, size=Py_ssize_t,
        index=Py_ssize_t, at=Py_ssize_t, kept=Py_ssize_t, delta=Py_ssize_t, present=bint,
        places=list,
    )
    cdef Py_ssize_t _apply_node(
        self, object node_no, list keys, signed char[::1] deltas, Py_ssize_t lo, Py_ssize_t hi,
        Py_ssize_t base, long long[::1] ranks,
    ) except? -1

    cdef object _node(self, object node_no)

    @cython.locals(children=list, small=Py_ssize_t, index=Py_ssize_t)
    cpdef _repair_joint(self, Inner inner, Py_ssize_t joint)

@cython.locals(count=Py_ssize_t)
cdef Py_ssize_t _size(object node) except -1

@cython.locals(total=Py_ssize_t, count=Py_ssize_t)
cdef Py_ssize_t _weight(object node) except -1
