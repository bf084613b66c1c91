"""Shared rules for Procrastinate task arguments (ids and JSON primitives, never models)."""

from lexweb.errors import DomainError


def require_arg(value: object, kind: type, name: str) -> None:
    """Job arguments are JSON from the database: a hand-queued or stale job may carry anything.
    A wrong type fails that job with a clear message; the worker carries on."""
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DomainError(f"Task argument {name} must be {kind.__name__}, not {value!r:.40}.")
