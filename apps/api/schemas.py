"""Shapes shared by every router: errors and the strict base for request bodies."""

from typing import Annotated

from ninja import Path, Schema
from pydantic import ConfigDict

# Database ids are positive 64-bit integers; anything else is a 422, never a database error.
ObjectId = Annotated[int, Path(ge=1, le=2**63 - 1)]


class StrictIn(Schema):
    """Base for request bodies: unknown fields are an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid", str_max_length=10_000)


class FieldErrorOut(Schema):
    loc: list[str | int]
    msg: str


class ErrorOut(Schema):
    detail: str
    code: str
    errors: list[FieldErrorOut] | None = None
