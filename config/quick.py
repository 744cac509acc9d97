"""Settings validated without pydantic, for the values that need no doubt.

`quick_settings(cls, values)` walks the settings dataclasses (config/settings.py)
beside the merged layers and returns the settings only when every value is
exactly of its field's type (an `int` that is not a `bool`, a `str`, a `list`,
a table for a section; a `str` or path for a `Path`, one of a `Literal`'s
words), within the field's `ge`/`le`, passing its `check`, with no key the
schema lacks and no required key missing. Anything else returns None, and
config/schema.py (pydantic, over the same dataclasses) decides and words the
errors. What this accepts pydantic accepts with the same result
(tests/config/test_quick.py checks this on generated layers), so the quick
path changes only how long a valid config takes to load.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from pathlib import Path, PurePath
from typing import Any, Literal


class _Doubt(Exception):
    """The quick path cannot vouch for a value; the full validation decides."""


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def quick_settings(cls: type, values: Any) -> Any | None:
    """An instance of dataclass `cls` from `values`, or None if any value is in doubt."""
    try:
        return _build(cls, values)
    except _Doubt:
        return None


def _build(cls: type, values: Any) -> Any:
    if type(values) is not dict:
        raise _Doubt
    hints = _hints(cls)
    chosen: dict[str, Any] = {}
    for spec in dataclasses.fields(cls):
        if spec.name in values:
            chosen[spec.name] = _value(hints[spec.name], spec.metadata, values[spec.name])
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            raise _Doubt  # a required key is missing
    if len(chosen) != len(values):
        raise _Doubt  # a key the schema does not have
    return cls(**chosen)


def _value(kind: Any, rules: Any, value: Any) -> Any:
    origin = typing.get_origin(kind)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return _build(kind, value)
    if origin is list:
        if type(value) is not list:
            raise _Doubt
        (item,) = typing.get_args(kind)
        return _checked(rules, [_value(item, {}, element) for element in value])
    if origin is Literal:
        if type(value) is not str or value not in typing.get_args(kind):
            raise _Doubt
        return value
    if origin in (typing.Union, _UnionType):
        if value is None and type(None) in typing.get_args(kind):
            return None
        for arm in [arm for arm in typing.get_args(kind) if arm is not type(None)]:
            try:
                return _value(arm, rules, value)
            except _Doubt:
                continue
        raise _Doubt
    if kind is Path:
        if not (type(value) is str and value) and not isinstance(value, PurePath):
            raise _Doubt
        return Path(value)
    if kind in (int, bool, str):
        if type(value) is not kind:
            raise _Doubt
    else:
        raise _Doubt  # a type this path does not know
    if value < rules.get("ge", value) or value > rules.get("le", value):
        raise _Doubt
    return _checked(rules, value)


def _checked(rules: Any, value: Any) -> Any:
    """`value`, if the field's `check` passes it (a list's check sees the whole list)."""
    if "check" in rules:
        try:
            rules["check"](value)
        except ValueError:
            raise _Doubt from None
    return value


_UnionType = type(int | None)
