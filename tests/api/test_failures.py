"""A request that fails past every handler answers in the API's shape (issue 22 req 4, issue 24):
a database that stops answering is a JSON 503 `database_unavailable` with Retry-After, any other
uncaught error a JSON 500 `internal_error`; pages get a short page, never Django's default."""

import json
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory
from django.urls import path

from apps.accounts.models import User
from lexweb import failures
from lexweb.errors import StorageFull
from lexweb.urls import urlpatterns
from tests.conftest import token_client

pytestmark = pytest.mark.django_db(transaction=True)


def _kill_our_database_connection() -> None:
    """End this process's database session from another connection, as a restart would."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    conf = connection.get_connection_params()
    conf.pop("cursor_factory", None)
    conf.pop("context", None)
    with psycopg.connect(**conf, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


@pytest.fixture
def raw_client() -> Iterator[None]:
    yield
    connection.close()  # the next test gets a fresh session


def test_the_api_answers_503_json_with_retry_after_while_the_database_is_gone(
    lawyer: User, raw_client: None
) -> None:
    client = token_client(lawyer)
    client.raise_request_exception = False
    _kill_our_database_connection()

    response = client.get("/api/v1/cases")

    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "database_unavailable"
    assert response["Retry-After"] == str(failures.DATABASE_RETRY_AFTER_SECONDS)
    # Back at once when the database is: the next request reconnects (as Django's
    # request_started does in production; its test client leaves that out).
    connection.close_if_unusable_or_obsolete()
    assert client.get("/api/v1/cases").status_code == 200


def test_a_page_gets_a_short_503_page_not_django_s_error_page(
    lawyer: User, raw_client: None
) -> None:
    from tests.conftest import session_client

    client = session_client(lawyer)
    client.raise_request_exception = False
    _kill_our_database_connection()

    response = client.get("/")

    assert response.status_code == 503
    assert "waiting for its database" in response.content.decode()
    assert response["Retry-After"] == str(failures.DATABASE_RETRY_AFTER_SECONDS)


def _boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug")


def test_any_other_uncaught_error_is_a_json_500_under_the_api(settings: object) -> None:
    request = Client(raise_request_exception=False)
    urlpatterns.insert(0, path("api/v1/__boom", _boom))
    urlpatterns.insert(0, path("__boom", _boom))
    try:
        api = request.get("/api/v1/__boom")
        page = request.get("/__boom")
    finally:
        del urlpatterns[:2]
    assert api.status_code == 500 and api.json() == {
        "detail": "Something went wrong on the server; it is in the server's log. Try again.",
        "code": "internal_error",
    }
    assert page.status_code == 500 and "Something went wrong" in page.content.decode()
    assert "Traceback" not in api.content.decode() + page.content.decode()


@pytest.mark.parametrize(("path", "api"), [("/api/v1/cases/1/documents", True), ("/cases/", False)])
def test_a_domain_error_no_view_could_answer_keeps_its_status_code_and_message(
    path: str, api: bool
) -> None:
    """A domain error raised before any view runs (the upload spool full while a middleware
    reads the form) answers with its own status and words; on a page they are escaped (they may
    quote a file's name)."""
    request = RequestFactory().post(path)
    try:
        raise StorageFull("“<img src=x onerror=alert(1)>.pdf” was not received.")
    except StorageFull:
        response = failures.server_error(request)
    assert response.status_code == 507
    if api:
        assert json.loads(response.content) == {
            "detail": "“<img src=x onerror=alert(1)>.pdf” was not received.",
            "code": "storage_full",
        }
    else:
        assert b"<img" not in response.content
        assert (
            "&lt;img src=x onerror=alert(1)&gt;.pdf” was not received." in response.content.decode()
        )
