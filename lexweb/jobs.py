"""Shared rules for Procrastinate task arguments (ids and JSON primitives, never models)."""

from django.db import InterfaceError, OperationalError

from lexweb.errors import DomainError


def require_arg(value: object, kind: type, name: str) -> None:
    """Job arguments are JSON from the database: a hand-queued or stale job may carry anything.
    A wrong type fails that job with a clear message; the worker carries on."""
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DomainError(f"Task argument {name} must be {kind.__name__}, not {value!r:.40}.")


def database_lost(exc: BaseException) -> bool:
    """True when `exc` says the database connection went away (server killed, network cut).

    A job that meets it must not try to write a "failed" state (that write fails too, or, if
    the database is back, marks for good what a retry will finish): it re-raises, and the
    task's retry policy or stalled-job recovery runs it again from the start.
    """
    return isinstance(exc, OperationalError | InterfaceError)
