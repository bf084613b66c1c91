"""What answers when a request fails past every handler (Django's `handler500`).

An uncaught exception would otherwise be Django's HTML "Server Error" page, on the JSON API
too. Here:

- a database that does not answer (psycopg/Django `DatabaseError` of the connection kind:
  `OperationalError`, `InterfaceError`) is a 503 with `Retry-After` (it is usually a restart
  of a few seconds): `{"detail", "code": "database_unavailable"}` under /api/, a short page
  elsewhere;
- anything else is a 500: `{"detail", "code": "internal_error"}` under /api/, a short page
  elsewhere.

Nothing here touches the database, sessions or templates: it must answer while they fail.
The exception itself is logged by Django before this runs.
"""

import json
import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse

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


def server_error(request: HttpRequest) -> HttpResponse:
    api = request.path.startswith(API_PREFIX)
    if _database_gone():
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
        html = _PAGE.format(title=title, text=detail)
        response = HttpResponse(html, status=status, content_type="text/html; charset=utf-8")
    if status == 503:
        response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
    return response
