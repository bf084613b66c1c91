"""Domain errors. Their messages are safe to show to the user; edges map them to status codes."""


class DomainError(Exception):
    """A rule of the domain refused the request (400)."""

    code = "invalid"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(DomainError):
    """No such object, or not one the user may see: the same answer for both (404)."""

    code = "not_found"


class Conflict(DomainError):
    """The request clashes with the current state (409)."""

    code = "conflict"


class PermissionDenied(DomainError):
    """The user may see the object but not do this to it (403). Never for existence checks."""

    code = "forbidden"


class Unavailable(DomainError):
    """The server is at its limit for this kind of work now; the same request may succeed after
    `retry_after` seconds (503 with Retry-After)."""

    code = "busy"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after
