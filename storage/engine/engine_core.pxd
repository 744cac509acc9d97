# Cython declarations for storage/engine/engine_core.py (an augmenting .pxd): the same
# source runs plain, and compiled as `engine_core_native` (storage/engine/native.py).
cimport cython

@cython.final
cdef class Member:
    cdef public bint dirty
    cdef public bytes key
    cdef public Py_ssize_t mark
    cdef public Py_ssize_t new_rank
    cdef public Py_ssize_t rank
    cdef public bytes ref
    cdef public bytes sort_id
    cdef public bytes stored
    cdef public bytes via

@cython.final
cdef class Rows:
    cdef public object txn
    cdef public object nodes_db
    cdef public object succ_db
    cdef public object pending_db
    cdef public object names_db
    cdef public bytes prefix
    cdef public dict members
    cdef public dict succ
    cdef public list dirty
    cdef public object cursor
    cdef public Py_ssize_t waves

    cpdef Member member(self, object ref)
    cpdef bytes keyed(self, Member member)
    cpdef list successor_refs(self, object ref)
    @cython.locals(succ=tuple)
    cpdef tuple successors(self, object ref)
    @cython.locals(succ=tuple, at=Py_ssize_t, end=Py_ssize_t)
    cpdef add_link(self, object link, Member new)

@cython.locals(
    present=list, rank=Py_ssize_t, found=Member, new=Member, holders=list, raised=list,
    missing=Py_ssize_t,
)
cpdef list add_event(
    Rows rows, object tree, object ref, list links, object sort_id, object stored
)

@cython.locals(
    number=Py_ssize_t, member=Member, raised=list, visited=list, heap="long long[::1]",
    size=Py_ssize_t, current=Member,
    candidate=Py_ssize_t, successor=Member,
)
cpdef list wave(Rows rows, Member new, list predecessors)

@cython.locals(at=Py_ssize_t, parent=Py_ssize_t)
cdef void _push(long long[::1] heap, Py_ssize_t size, long long value) noexcept

@cython.locals(least="long long", last="long long", at=Py_ssize_t, child=Py_ssize_t)
cdef long long _pop(long long[::1] heap, Py_ssize_t size) noexcept

@cython.locals(
    count=Py_ssize_t, keys=list, index=Py_ssize_t, member=Member, total=Py_ssize_t,
    order=list, ordered=list, deltas="signed char[::1]", olds="long long[::1]",
    seen=Py_ssize_t, slot=Py_ssize_t, ranks="long long[::1]", before="long long[::1]",
    new_at=Py_ssize_t, commands=list, marks="long long[::1]",
    old_at=Py_ssize_t, old_index=Py_ssize_t, src=Py_ssize_t, dst=Py_ssize_t,
)
cpdef list place(Rows rows, object tree, Member new, list raised)

@cython.locals(total=Py_ssize_t)
cdef Py_ssize_t _count_below(long long[::1] marks, Py_ssize_t index) noexcept

cdef void _mark(long long[::1] marks, Py_ssize_t index, Py_ssize_t size) noexcept

@cython.locals(rows=list)
cpdef bytes encode_log(list commands)
