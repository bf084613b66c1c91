"""Domain errors. Their messages are safe to show to the user. Each class says the HTTP status
it answers with (`status`): the one table of errors to statuses, read by the API, the MCP server
and the browser views alike (a subclass answers as its base unless it says otherwise)."""

import errno
from typing import ClassVar

# What an OSError of a full filesystem carries: no space left, or the quota exceeded.
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


class DomainError(Exception):
    """A rule of the domain refused the request (400)."""

    code = "invalid"
    status: ClassVar[int] = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(DomainError):
    """No such object, or not one the user may see: the same answer for both (404)."""

    code = "not_found"
    status: ClassVar[int] = 404


class Conflict(DomainError):
    """The request clashes with the current state (409)."""

    code = "conflict"
    status: ClassVar[int] = 409


class PermissionDenied(DomainError):
    """The user may see the object but not do this to it (403). Never for existence checks."""

    code = "forbidden"
    status: ClassVar[int] = 403


class StorageFull(DomainError):
    """A filesystem lexweb writes to is full (or over quota): nothing of what was being written
    was kept (507). The store's (apps.documents.storage) and the upload spool's
    (lexweb.tempdirs); jobs record the message and are tried again."""

    code = "storage_full"
    status: ClassVar[int] = 507


class Unavailable(DomainError):
    """The server is at its limit for this kind of work now; the same request may succeed after
    `retry_after` seconds (503 with Retry-After)."""

    code = "busy"
    status: ClassVar[int] = 503

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after
