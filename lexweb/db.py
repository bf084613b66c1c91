"""Connections of our own, beside Django's: for session advisory locks and LISTEN, which must
live on a connection nobody else uses."""

from collections.abc import Mapping
from typing import Any

from django.db import connections
from psycopg.conninfo import make_conninfo

# Django's psycopg arguments that are not libpq connection parameters.
_NOT_CONNINFO = ("cursor_factory", "context", "prepare_threshold")


def conninfo(*, alias: str = "default", application_name: str = "") -> str:
    """A libpq connection string for Django's database `alias`, with everything Django would
    use (OPTIONS such as sslmode or search_path included; in tests, the test database)."""
    params = connections[alias].get_connection_params()
    return conninfo_from_params(params, application_name=application_name)


def conninfo_from_params(params: Mapping[str, Any], *, application_name: str = "") -> str:
    """The same, from Django-style connection parameters (DatabaseWrapper.get_connection_params)."""
    kept = {key: value for key, value in params.items() if key not in _NOT_CONNINFO}
    if application_name:
        kept["application_name"] = application_name
    return make_conninfo("", **kept)
