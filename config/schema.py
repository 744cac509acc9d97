"""The full validation of settings: pydantic models built from the settings dataclasses.

config/settings.py declares each setting once, as a dataclass field with its
rules in the field's metadata (`ge`, `le`, `check`, `doc`). `validate(kind,
values)` builds (once) a pydantic model per dataclass of `kind` with the same
types, defaults and rules (`extra="forbid"`, `check` as an after-validator),
validates the merged layers with it, and returns the dataclasses, or
pydantic's errors for config/settings.py to name by key and layer. It is
handed the settings' class rather than importing it, so the two modules do
not import each other. Imported only when config/quick.py doubts a value,
so pydantic loads only for such configs.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, create_model

T = typing.TypeVar("T")


def validate(kind: type[T], values: dict[str, Any]) -> tuple[T | None, list[Any]]:
    """(the `kind` dataclass of `values`, []) when they are valid, else (None, pydantic's
    error dicts)."""
    try:
        model = _model(kind).model_validate(values)  # type: ignore[arg-type]  # a class hashes
    except ValidationError as error:
        return None, list(error.errors())
    return _dataclass(kind, model), []


@functools.cache
def _model(cls: type) -> type[BaseModel]:
    hints = typing.get_type_hints(cls)
    definitions: dict[str, Any] = {}
    for spec in dataclasses.fields(cls):
        kind = _pydantic_type(hints[spec.name])
        rules = spec.metadata
        if "check" in rules:
            kind = Annotated[kind, AfterValidator(rules["check"])]
        limits = {key: rules[key] for key in ("ge", "le") if key in rules}
        if "doc" in rules:
            limits["description"] = rules["doc"]
        if spec.default is not dataclasses.MISSING:
            default = Field(spec.default, **limits)
        elif spec.default_factory is not dataclasses.MISSING:
            factory = spec.default_factory
            if dataclasses.is_dataclass(hints[spec.name]):
                factory = _model(hints[spec.name])
            default = Field(default_factory=factory, **limits)
        else:
            default = Field(..., **limits)
        definitions[spec.name] = (kind, default)
    config = ConfigDict(extra="forbid", frozen=True)
    return create_model(cls.__name__, __config__=config, **definitions)


def _pydantic_type(kind: Any) -> Any:
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return _model(kind)
    if typing.get_origin(kind) is list:
        (item,) = typing.get_args(kind)
        return list[_pydantic_type(item)]  # type: ignore[misc]  # a type made at run time
    return kind


def _dataclass(cls: type, model: BaseModel) -> Any:
    hints = typing.get_type_hints(cls)
    return cls(
        **{
            spec.name: _convert(hints[spec.name], getattr(model, spec.name))
            for spec in dataclasses.fields(cls)
        }
    )


def _convert(kind: Any, value: Any) -> Any:
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return _dataclass(kind, value)
    if typing.get_origin(kind) is list:
        (item,) = typing.get_args(kind)
        return [_convert(item, element) for element in value]
    return value
