"""Shapes shared by every router: errors and the strict base for request bodies."""

from typing import Annotated

from ninja import Path, Schema
from pydantic import ConfigDict, field_validator

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


class FieldErrorOut(Schema):
    loc: list[str | int]
    msg: str


class ErrorOut(Schema):
    detail: str
    code: str
    errors: list[FieldErrorOut] | None = None
