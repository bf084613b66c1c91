"""Shapes shared by every router: errors, the strict base for request bodies, and the status
fields of the contract."""

from collections.abc import Iterable
from typing import Annotated, Any

from django.db import models
from ninja import Path, Schema
from pydantic import AfterValidator, ConfigDict, WithJsonSchema, field_validator

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


class StrictIn(Schema):
    """Base for request bodies: unknown fields are an error, not silently ignored, and no string
    may contain NUL (PostgreSQL refuses it in text, which would otherwise surface as a 500)."""

    model_config = ConfigDict(extra="forbid", str_max_length=10_000)

    @field_validator("*", mode="before")
    @classmethod
    def _refuse_nul(cls, value: object) -> object:
        if _has_nul(value):
            raise ValueError("must not contain NUL (\\x00) characters")
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
