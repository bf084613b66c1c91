"""Who is asking, from where: set once per request or connection, read by `audit_record`.

A context variable rather than a parameter threaded through every service: asgiref carries it
across sync/async hops, and code outside a request (worker, CLI) simply sees the defaults.
"""

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Origin:
    client_ip: str | None = None
    via: str = "cli"


_NOWHERE = Origin()
_origin: contextvars.ContextVar[Origin | None] = contextvars.ContextVar(
    "lexweb_origin", default=None
)


def current_origin() -> Origin:
    return _origin.get() or _NOWHERE


@contextmanager
def origin(*, client_ip: str | None, via: str) -> Iterator[None]:
    token = _origin.set(Origin(client_ip=client_ip, via=via))
    try:
        yield
    finally:
        _origin.reset(token)
