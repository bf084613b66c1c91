"""What answers when a request fails past every handler (Django's `handler500`).

An uncaught exception would otherwise be Django's HTML "Server Error" page, on the JSON API
too. Here:

- a database that does not answer (psycopg/Django `DatabaseError` of the connection kind:
  `OperationalError`, `InterfaceError`) is a 503 with `Retry-After` (it is usually a restart
  of a few seconds): `{"detail", "code": "database_unavailable"}` under /api/, a short page
  elsewhere;
- a domain error raised where no view could answer it (the upload spool full while a
  middleware reads the request's form: lexweb/tempdirs.py) answers with its own status, code
  and message (they are safe to show);
- anything else is a 500: `{"detail", "code": "internal_error"}` under /api/, a short page
  elsewhere.

Nothing here touches the database, sessions or templates: it must answer while they fail.
The exception itself is logged by Django before this runs.
"""

import json
import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.utils.html import escape

from lexweb.errors import DomainError

DATABASE_RETRY_AFTER_SECONDS = 5
API_PREFIX = "/api/"

_PAGE = (
    "<!doctype html><html lang=en><head><meta charset=utf-8><title>{title}</title></head>"
    "<body><main><h1>{title}</h1><p>{text}</p></main></body></html>"
)


def _database_gone() -> bool:
    error = sys.exc_info()[1]
    while error is not None:
        if isinstance(error, OperationalError | InterfaceError):
            return True
        error = error.__cause__ or error.__context__
    return False


def _domain_error() -> DomainError | None:
    error = sys.exc_info()[1]
    while error is not None:
        if isinstance(error, DomainError):
            return error
        error = error.__cause__ or error.__context__
    return None


def server_error(request: HttpRequest) -> HttpResponse:
    api = request.path.startswith(API_PREFIX)
    domain = _domain_error()
    if domain is not None:
        status, code, detail = domain.status, domain.code, domain.message
        title = "lexweb could not do this"
    elif _database_gone():
        status, code = 503, "database_unavailable"
        detail = (
            "The database is not answering (it may be restarting). Try again in "
            f"{DATABASE_RETRY_AFTER_SECONDS} s."
        )
        title = "lexweb is waiting for its database"
    else:
        status, code = 500, "internal_error"
        detail = "Something went wrong on the server; it is in the server's log. Try again."
        title = "Something went wrong"
    if api:
        body = json.dumps({"detail": detail, "code": code})
        response = HttpResponse(body, status=status, content_type="application/json")
    else:
        # A domain error's message may quote what a person sent (a file's name): escaped.
        html = _PAGE.format(title=escape(title), text=escape(detail))
        response = HttpResponse(html, status=status, content_type="text/html; charset=utf-8")
    retry_after = getattr(domain, "retry_after", None)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    elif status == 503:
        response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
    return response
