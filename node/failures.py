"""Reading Trio's exception groups: what actually went wrong inside a nursery."""

from __future__ import annotations


def leaves(error: BaseException) -> list[BaseException]:
    """The individual exceptions inside (possibly nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


Kinds = type[BaseException] | tuple[type[BaseException], ...]


def only(error: BaseException, kinds: Kinds) -> bool:
    """True if every exception inside `error` is one of `kinds`."""
    return all(isinstance(leaf, kinds) for leaf in leaves(error))
