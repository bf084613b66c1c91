"""What the event endpoints of every feed (a run's events, a case's events) read off a request:
where a stream starts, and how the request got in (for the access watch); and the turn a
stream's opening waits for."""

import functools
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponseBase
from ninja.errors import HttpError

from apps.accounts import streams as feed_streams
from apps.accounts.selectors import SocketAccess
from apps.accounts.types import AuthedRequest

MAX_SEQ = 2**63 - 1


def last_event_id(header: str | None, after: int) -> int:
    """Where a stream starts: the Last-Event-ID header when sent (and not empty), else `after`."""
    value: object = after
    if header is not None and header.strip():
        value = header.strip()
        if not value.isascii() or not value.isdigit():
            raise HttpError(422, "Last-Event-ID must be the number of an event (0 or more).")
        value = int(value)
    if not isinstance(value, int) or not 0 <= value <= MAX_SEQ:
        raise HttpError(422, "after must be 0 or more.")
    return value


def page_bounds(after: int, limit: int, most: int) -> None:
    """A 422 unless `after` is a number from 0 and `limit` from 1 to `most`."""
    if after < 0 or after > MAX_SEQ or not 1 <= limit <= most:
        raise HttpError(422, f"after must be 0 or more and limit from 1 to {most}.")


def stream_access(request: AuthedRequest, case_id: int) -> SocketAccess:
    """How this request got in (its token, or its browser session), for the access watch."""
    token = getattr(request, "api_token", None)
    if token is not None:
        return SocketAccess(
            user_id=token.user_id,
            token_id=token.pk,
            token_expires_at=token.expires_at,
            case_id=case_id,
        )
    return SocketAccess(
        user_id=request.auth.pk, session_key=request.session.session_key or "", case_id=case_id
    )


def opening_in_turn(
    run: Callable[..., HttpResponseBase],
) -> Callable[..., HttpResponseBase]:
    """A stream endpoint's whole sync run (bearer token, parameters, access check and audit in
    the services, the stream registered) in a database turn (apps/accounts/streams.py): a burst
    of openings takes a few connections in turn, and the response streams with none held. For
    `ninja.decorators.decorate_view` on a sync operation."""

    @functools.wraps(run)
    def opening(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        with feed_streams.database_turn():
            return run(request, *args, **kwargs)

    return opening
