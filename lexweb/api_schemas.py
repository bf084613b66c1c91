"""Shapes shared by every router: errors, the strict base for request bodies, the status fields
of the contract, and the mark an endpoint leaves for the idempotency guard."""

from collections.abc import Iterable
from types import UnionType
from typing import Annotated, Any, ClassVar, Union, get_args, get_origin

from django.db import models
from django.http import HttpRequest
from ninja import Path, Schema
from pydantic import AfterValidator, ConfigDict, ValidationInfo, WithJsonSchema, field_validator

# Database ids are positive 64-bit integers; anything else is a 422, never a database error.
ObjectId = Annotated[int, Path(ge=1, le=2**63 - 1)]


def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(key) or _has_nul(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return any(_has_nul(item) for item in value)
    return False


def _scalar(annotation: object) -> type | None:
    """bool, int or float when `annotation` is one of them (or Optional/Annotated of one)."""
    if annotation in (bool, int, float):
        return annotation
    if get_origin(annotation) in (Union, UnionType, Annotated):
        kinds = {_scalar(arg) for arg in get_args(annotation) if arg is not type(None)}
        kinds.discard(None)
        if len(kinds) == 1:
            return kinds.pop()
    return None


def _element(annotation: object) -> type | None:
    """The scalar of `list[X]` (or Optional/Annotated of one), if X is bool, int or float."""
    if get_origin(annotation) in (Union, UnionType, Annotated):
        found = {_element(arg) for arg in get_args(annotation) if arg is not type(None)}
        found.discard(None)
        return found.pop() if len(found) == 1 else None
    if get_origin(annotation) in (list, tuple, set):
        args = get_args(annotation)
        return _scalar(args[0]) if args else None
    return None


def _strict_error(kind: type, value: object) -> str | None:
    """Why `value` is not a JSON `kind` as sent (no "true" for true, no "5" or 5.0 for 5)."""
    if value is None:
        return None  # an optional field's null; a required one fails on its own
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    name = {bool: "true or false", int: "a whole number", float: "a number"}[kind]
    return None if ok else f"must be {name} as JSON, not {type(value).__name__} {value!r:.40}"


class StrictIn(Schema):
    """Base for request bodies: unknown fields are an error, not silently ignored; no string
    may contain NUL (PostgreSQL refuses it in text, which would otherwise surface as a 500); and
    booleans, ids and numbers must be sent as JSON booleans and numbers (the contract's strict
    types: "true", "5" or 5.0 are refused, never coerced)."""

    model_config = ConfigDict(extra="forbid", str_max_length=10_000)
    # False for the fields of a multipart form, which are strings by nature (DraftFormIn):
    # Pydantic then reads "5" as 5, as a form means it.
    json_types: ClassVar[bool] = True

    @field_validator("*", mode="before")
    @classmethod
    def _refuse_nul(cls, value: object) -> object:
        if _has_nul(value):
            raise ValueError("must not contain NUL (\\x00) characters")
        return value

    @field_validator("*", mode="before")
    @classmethod
    def _refuse_coercion(cls, value: object, info: ValidationInfo) -> object:
        field = cls.model_fields.get(info.field_name or "")
        if field is None or not cls.json_types:
            return value
        kind = _scalar(field.annotation)
        if kind is not None and (error := _strict_error(kind, value)):
            raise ValueError(error)
        element = _element(field.annotation)
        if element is not None and isinstance(value, list | tuple):
            for item in value:
                if error := _strict_error(element, item):
                    raise ValueError(f"each item {error}")
        return value


def status_type(choices: type[models.TextChoices], *, terminal: Iterable[str], about: str) -> Any:
    """A status field of the contract: a string of `choices` (anything else fails the response
    as a bug, never reaches a client), published in OpenAPI as an enum whose description says
    which values are terminal (the object changes no more by itself). Use it under
    `if TYPE_CHECKING: X = str else: X = status_type(...)` so type checkers see a str."""
    values = [str(value) for value in choices.values]
    ends = [str(value) for value in terminal]
    unknown = set(ends) - set(values)
    if unknown:
        raise ValueError(f"terminal values {sorted(unknown)} are not among {values}")

    def known(value: str) -> str:
        if value not in values:
            raise ValueError(f"{value!r} is not one of {values}")
        return value

    description = f"{about} Terminal: {', '.join(ends)}." if ends else about
    schema: dict[str, object] = {"type": "string", "enum": values, "description": description}
    if ends:
        schema["x-terminal"] = ends
    return Annotated[str, AfterValidator(known), WithJsonSchema(schema)]


class FieldErrorOut(Schema):
    loc: list[str | int]
    msg: str


class ErrorOut(Schema):
    detail: str
    code: str
    errors: list[FieldErrorOut] | None = None


def file_response_doc(media_type: str, description: str) -> dict[str, Any]:
    """`openapi_extra` for an operation that answers 200 with a file, not JSON: its media
    type ("*/*" where it is the stored file's own) and a binary body."""
    binary = {"schema": {"type": "string", "format": "binary"}}
    return {"responses": {200: {"description": description, "content": {media_type: binary}}}}


# An endpoint whose answer must not be stored for an Idempotency-Key replay (it holds a secret)
# marks its request; the API's idempotency guard (apps/api/idempotency.py) reads the mark.
NO_BODY_MARK = "_lexweb_idempotency_no_body"


def keep_no_body(request: HttpRequest, reason: str) -> None:
    """Called by an endpoint whose answer must not be stored (e.g. it holds a secret): the key
    is remembered with the status only; a replay answers 409 `idempotency_response_not_kept`
    saying `reason`."""
    setattr(request, NO_BODY_MARK, reason)
