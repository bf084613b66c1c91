"""Malformed, hostile and oversized input at every edge of the cases API and its web forms.

Each test checks the answer (status, `{detail, code}` shape) and that the database is exactly as
it was before the request.
"""

import html
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.contrib.messages import get_messages
from django.test import Client
from django.utils import timezone
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts import services as account_services
from apps.accounts.models import ApiToken, User
from apps.cases.models import Case, Membership
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

JSON = "application/json"


def _snapshot() -> tuple[object, ...]:
    return (
        list(Case.objects.order_by("pk").values_list()),
        list(Membership.objects.order_by("pk").values_list("pk", "case_id", "user_id", "role")),
        list(ApiToken.objects.order_by("pk").values_list("pk", "user_id", "name", "revoked_at")),
    )


@contextmanager
def nothing_changes() -> Iterator[None]:
    """Assert that cases, memberships and tokens (counts and contents) are untouched."""
    counts = (Case.objects.count(), Membership.objects.count(), ApiToken.objects.count())
    before = _snapshot()
    yield
    assert (Case.objects.count(), Membership.objects.count(), ApiToken.objects.count()) == counts
    assert _snapshot() == before


def assert_error(response: object, status: int, code: str | None = None) -> dict[str, object]:
    """The one error shape: `{detail, code}`, and for 422 also `errors: [{loc, msg}]`."""
    assert response.status_code == status, response.content  # type: ignore[attr-defined]
    assert response["Content-Type"].startswith(JSON)  # type: ignore[index]
    body: dict[str, object] = response.json()  # type: ignore[attr-defined]
    if status == 422:
        assert set(body) == {"detail", "code", "errors"}
        assert isinstance(body["errors"], list)
        assert body["errors"]
        for error in body["errors"]:
            assert set(error) == {"loc", "msg"}
            assert isinstance(error["loc"], list)
            assert isinstance(error["msg"], str)
    else:
        assert set(body) == {"detail", "code"}
    assert isinstance(body["detail"], str)
    assert body["detail"]
    assert isinstance(body["code"], str)
    if code is not None:
        assert body["code"] == code
    return body


def _locs(body: dict[str, object]) -> list[list[object]]:
    return [error["loc"] for error in body["errors"]]  # type: ignore[attr-defined,index]


def _send(client: Client, method: str, path: str, raw: str | bytes) -> object:
    return getattr(client, method)(path, raw, content_type=JSON)


VALID_CASE = {"title": "T", "number": "N-1", "client": "C"}


# --- bodies that are not the object we expect -------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        '{"title": ',
        "{'title': 'single quotes'}",
        '{"title": "T",}',
        "not json at all",
        b"\xff\xfe\x00{",
        '{"title": "T"} trailing',
        "NaN-ish",
    ],
)
def test_malformed_json_is_400(lawyer_api: Client, case: Case, raw: str | bytes) -> None:
    with nothing_changes():
        response = _send(lawyer_api, "post", "/api/v1/cases", raw)

    assert_error(response, 400, "bad_request")


@pytest.mark.parametrize(
    "raw", ["[]", '[{"title": "T"}]', "42", "3.5", '"a string"', "null", "true"]
)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/v1/cases"),
        ("patch", "/api/v1/cases/{case}"),
        ("post", "/api/v1/cases/{case}/members"),
        ("patch", "/api/v1/cases/{case}/members/{staff}"),
    ],
)
def test_json_that_is_not_an_object_is_422(
    lawyer_api: Client, staff: User, case: Case, raw: str, method: str, path: str
) -> None:
    url = path.format(case=case.pk, staff=staff.pk)

    with nothing_changes():
        response = _send(lawyer_api, method, url, raw)

    assert_error(response, 422, "invalid")


def test_empty_body_is_422_naming_the_payload(lawyer_api: Client, case: Case) -> None:
    with nothing_changes():
        response = _send(lawyer_api, "post", "/api/v1/cases", "")

    assert_error(response, 422, "invalid")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**VALID_CASE, "title": 123}, "title"),
        ({**VALID_CASE, "title": ["T"]}, "title"),
        ({**VALID_CASE, "number": {"n": 1}}, "number"),
        ({**VALID_CASE, "client": True}, "client"),
        ({**VALID_CASE, "court": 1.5}, "court"),
        ({**VALID_CASE, "title": None}, "title"),
    ],
)
def test_wrong_types_on_create_are_422_and_name_the_field(
    lawyer_api: Client, body: dict[str, object], field: str
) -> None:
    with nothing_changes():
        response = _send(lawyer_api, "post", "/api/v1/cases", json.dumps(body))

    result = assert_error(response, 422, "invalid")
    assert any(loc[-1] == field for loc in _locs(result))
    assert field in str(result["detail"])


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/cases/{case}", {"status": 1}),
        ("/api/v1/cases/{case}", {"status": "CLOSED"}),
        ("/api/v1/cases/{case}", {"title": 5}),
        ("/api/v1/cases/{case}/members/{staff}", {"role": "admin"}),
        ("/api/v1/cases/{case}/members/{staff}", {"role": ["lawyer"]}),
        ("/api/v1/cases/{case}/members/{staff}", {}),
    ],
)
def test_wrong_types_on_patch_are_422(
    lawyer_api: Client, staff: User, case: Case, path: str, body: dict[str, object]
) -> None:
    with nothing_changes():
        response = _send(
            lawyer_api, "patch", path.format(case=case.pk, staff=staff.pk), json.dumps(body)
        )

    assert_error(response, 422, "invalid")


@pytest.mark.parametrize(
    ("path", "body", "extra"),
    [
        ("/api/v1/cases", {**VALID_CASE, "created_by": 1}, "created_by"),
        ("/api/v1/cases", {**VALID_CASE, "status": "closed"}, "status"),
        ("/api/v1/cases", {**VALID_CASE, "id": 99}, "id"),
        (
            "/api/v1/cases/{case}",
            {"title": "X", "created_at": "2020-01-01T00:00:00Z"},
            "created_at",
        ),
        ("/api/v1/cases/{case}/members", {"email": "outsider@firm.test", "user_id": 1}, "user_id"),
        ("/api/v1/cases/{case}/members/{staff}", {"role": "staff", "case_id": 1}, "case_id"),
    ],
)
def test_unknown_fields_are_422_not_silently_ignored(
    lawyer_api: Client,
    staff: User,
    outsider: User,
    case: Case,
    path: str,
    body: dict[str, object],
    extra: str,
) -> None:
    method = "post" if path.endswith(("cases", "members")) else "patch"

    with nothing_changes():
        response = _send(
            lawyer_api, method, path.format(case=case.pk, staff=staff.pk), json.dumps(body)
        )

    result = assert_error(response, 422, "invalid")
    assert any(loc[-1] == extra for loc in _locs(result))


def test_missing_fields_are_all_listed(lawyer_api: Client) -> None:
    with nothing_changes():
        response = _send(lawyer_api, "post", "/api/v1/cases", "{}")

    result = assert_error(response, 422, "invalid")
    assert {loc[-1] for loc in _locs(result)} == {"title", "number", "client"}


def test_member_add_without_email_is_422(lawyer_api: Client, case: Case) -> None:
    with nothing_changes():
        response = _send(
            lawyer_api, "post", f"/api/v1/cases/{case.pk}/members", '{"role": "staff"}'
        )

    result = assert_error(response, 422, "invalid")
    assert ["body", "payload", "email"] in _locs(result)


@pytest.mark.parametrize(
    ("field", "limit"), [("title", 300), ("number", 100), ("client", 200), ("court", 200)]
)
def test_over_long_strings_are_422(lawyer_api: Client, field: str, limit: int) -> None:
    body = {**VALID_CASE, field: "x" * (limit + 1)}

    with nothing_changes():
        response = _send(lawyer_api, "post", "/api/v1/cases", json.dumps(body))

    result = assert_error(response, 422, "invalid")
    assert any(loc[-1] == field for loc in _locs(result))


def test_over_long_patch_and_email_are_422(lawyer_api: Client, case: Case) -> None:
    with nothing_changes():
        patched = _send(
            lawyer_api, "patch", f"/api/v1/cases/{case.pk}", json.dumps({"title": "t" * 301})
        )
        added = _send(
            lawyer_api,
            "post",
            f"/api/v1/cases/{case.pk}/members",
            json.dumps({"email": "a" * 250 + "@firm.test"}),
        )

    assert_error(patched, 422, "invalid")
    assert_error(added, 422, "invalid")


def test_string_over_the_global_cap_is_422(lawyer_api: Client) -> None:
    body = {**VALID_CASE, "court": "c" * 100_000}

    with nothing_changes():
        response = _send(lawyer_api, "post", "/api/v1/cases", json.dumps(body))

    assert_error(response, 422, "invalid")


@pytest.mark.parametrize("how", ["token", "session"])
def test_body_over_the_upload_limit_is_413(
    lawyer: User, lawyer_api: Client, case: Case, how: str
) -> None:
    client = lawyer_api
    if how == "session":
        client = Client()
        client.force_login(lawyer)
    padding = "x" * (django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    raw = json.dumps({**VALID_CASE, "court": padding})

    with nothing_changes():
        created = _send(client, "post", "/api/v1/cases", raw)
        added = _send(client, "post", f"/api/v1/cases/{case.pk}/members", raw)

    assert_error(created, 413, "too_large")
    assert_error(added, 413, "too_large")


def test_body_under_the_limit_reaches_field_validation(lawyer_api: Client) -> None:
    raw = json.dumps({**VALID_CASE, "court": "x" * 1000})
    assert len(raw) < django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE

    response = _send(lawyer_api, "post", "/api/v1/cases", raw)

    assert_error(response, 422, "invalid")  # over the field limit: parsed, then refused


# --- hostile strings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/api/v1/cases", {**VALID_CASE, "title": "Acme\x00v. Widget"}),
        ("post", "/api/v1/cases", {**VALID_CASE, "number": "\x00"}),
        ("post", "/api/v1/cases", {**VALID_CASE, "court": "Court\x00"}),
        ("patch", "/api/v1/cases/{case}", {"client": "Evil\x00Corp"}),
        ("post", "/api/v1/cases/{case}/members", {"email": "staff@firm.test\x00"}),
        ("post", "/api/v1/cases/{case}/members", {"email": "\x00x@firm.test", "role": "staff"}),
        ("post", "/api/v1/tokens", {"name": "agent\x00"}),
    ],
)
def test_nul_bytes_in_strings_are_422_not_a_database_error(
    lawyer_api: Client, case: Case, method: str, path: str, body: dict[str, object]
) -> None:
    with nothing_changes():
        response = _send(lawyer_api, method, path.format(case=case.pk), json.dumps(body))

    result = assert_error(response, 422, "invalid")
    assert "NUL" in str(result["detail"])


def test_whitespace_control_characters_are_collapsed(lawyer_api: Client) -> None:
    body = {**VALID_CASE, "title": "Acme\tv.\r\n\x0bWidget\x0c\x1c\x1d\x1e\x1f\x85end"}

    response = _send(lawyer_api, "post", "/api/v1/cases", json.dumps(body))

    assert response.status_code == 201
    assert Case.objects.get(pk=response.json()["id"]).title == "Acme v. Widget end"


def test_other_control_characters_round_trip_without_error(lawyer_api: Client) -> None:
    title = "Acme \x01\x07\x1b[31m\x7f\u200b\u202e v. Widget"

    response = _send(
        lawyer_api, "post", "/api/v1/cases", json.dumps({**VALID_CASE, "title": title})
    )

    assert response.status_code == 201
    assert response.json()["title"] == title
    assert Case.objects.get(pk=response.json()["id"]).title == title


@pytest.mark.parametrize("char", ["\u00e9", "\u4e2d", "\U0001d504", "\U0001f469\u200d"])
def test_long_unicode_is_counted_in_characters(lawyer_api: Client, char: str) -> None:
    at_limit = (char * 300)[:300]

    with nothing_changes():
        over = _send(
            lawyer_api, "post", "/api/v1/cases", json.dumps({**VALID_CASE, "title": at_limit + "x"})
        )
    fits = _send(
        lawyer_api,
        "post",
        "/api/v1/cases",
        json.dumps({**VALID_CASE, "title": at_limit}, ensure_ascii=False),
    )

    assert_error(over, 422, "invalid")
    assert fits.status_code == 201
    assert Case.objects.get(pk=fits.json()["id"]).title == at_limit


def test_lone_surrogate_is_refused_without_a_server_error(lawyer_api: Client) -> None:
    raw = '{"title": "bad \\ud800 half", "number": "N", "client": "C"}'

    with nothing_changes():
        response = _send(lawyer_api, "post", "/api/v1/cases", raw)

    result = assert_error(response, 422, "invalid")
    assert ["body", "payload", "title"] in _locs(result)


# --- path ids ---------------------------------------------------------------------------------

BAD_IDS = ["0", "-1", str(2**63), str(2**64), "99999999999999999999999999", "abc", "1.5", "1e3"]


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/api/v1/cases/{id}", None),
        ("patch", "/api/v1/cases/{id}", {"title": "X"}),
        ("get", "/api/v1/cases/{id}/members", None),
        ("post", "/api/v1/cases/{id}/members", {"email": "outsider@firm.test"}),
        ("patch", "/api/v1/cases/{case}/members/{id}", {"role": "staff"}),
        ("delete", "/api/v1/cases/{case}/members/{id}", None),
        ("post", "/api/v1/cases/{id}/worker-check", None),
        ("delete", "/api/v1/tokens/{id}", None),
    ],
)
def test_bad_path_ids_are_422_not_500(
    lawyer_api: Client,
    outsider: User,
    case: Case,
    bad: str,
    method: str,
    path: str,
    body: object,
) -> None:
    url = path.format(id=bad, case=case.pk)
    raw = json.dumps(body) if body is not None else ""

    with nothing_changes():
        response = _send(lawyer_api, method, url, raw)

    result = assert_error(response, 422, "invalid")
    assert any("id" in str(loc[-1]) for loc in _locs(result))


def test_largest_valid_id_is_a_plain_404(lawyer_api: Client, case: Case) -> None:
    response = lawyer_api.get(f"/api/v1/cases/{2**63 - 1}")

    assert_error(response, 404, "not_found")


# --- authentication ---------------------------------------------------------------------------


def _bearer(raw: str, *, enforce_csrf: bool = False) -> Client:
    return Client(enforce_csrf_checks=enforce_csrf, headers={"authorization": f"Bearer {raw}"})


def _expired(user: User) -> str:
    issued = account_services.token_create(user=user, name="expired")
    ApiToken.objects.filter(pk=issued.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    return issued.secret


def _revoked(user: User) -> str:
    issued = account_services.token_create(user=user, name="revoked")
    account_services.token_revoke(user=user, token_id=issued.token.pk)
    return issued.secret


def _tampered(user: User) -> str:
    issued = account_services.token_create(user=user, name="tampered")
    return issued.secret[:-1] + ("A" if issued.secret[-1] != "A" else "B")


def _of_inactive_user(user: User) -> str:
    gone = UserFactory(role=User.Role.LAWYER)
    issued = account_services.token_create(user=gone, name="gone")
    gone.is_active = False
    gone.save()
    return issued.secret


@pytest.mark.parametrize(
    "make_token",
    [
        _expired,
        _revoked,
        _tampered,
        _of_inactive_user,
        lambda user: "lxw_nothing_here",
        lambda user: "",
        lambda user: "lxw_" + "a" * 300,
        lambda user: "lxw_\u00e9\u00e9_\u00e9",
        lambda user: "lxw_ab\x00cd_secret",
    ],
    ids=[
        "expired",
        "revoked",
        "tampered",
        "inactive",
        "unknown",
        "empty",
        "long",
        "unicode",
        "nul",
    ],
)
@pytest.mark.parametrize("enforce_csrf", [False, True])
def test_bad_tokens_are_401_for_reads_and_writes(
    lawyer: User, case: Case, make_token: object, enforce_csrf: bool
) -> None:
    raw = make_token(lawyer)  # type: ignore[operator]
    client = _bearer(raw, enforce_csrf=enforce_csrf)

    with nothing_changes():
        read = client.get(f"/api/v1/cases/{case.pk}")
        write = _send(client, "post", "/api/v1/cases", json.dumps(VALID_CASE))
        remove = client.delete(f"/api/v1/cases/{case.pk}/members/{lawyer.pk}")

    for response in (read, write, remove):
        assert_error(response, 401, "unauthenticated")
        assert response["WWW-Authenticate"] == "Bearer"


def test_anonymous_write_without_csrf_token_is_401(case: Case) -> None:
    client = Client(enforce_csrf_checks=True)

    with nothing_changes():
        response = _send(client, "post", "/api/v1/cases", json.dumps(VALID_CASE))

    assert_error(response, 401, "unauthenticated")


@pytest.mark.parametrize(
    "header", ["Token abc", "Bearer", "bearer", "Basic dXNlcjpwYXNz", "Bearer a b c"]
)
def test_malformed_authorization_header_is_401(case: Case, header: str) -> None:
    response = Client(headers={"authorization": header}).get("/api/v1/cases")

    assert_error(response, 401, "unauthenticated")


# --- another case's ids -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/api/v1/cases/{other}", None),
        ("patch", "/api/v1/cases/{other}", {"title": "Mine"}),
        ("get", "/api/v1/cases/{other}/members", None),
        ("post", "/api/v1/cases/{other}/members", {"email": "lawyer@firm.test"}),
        ("patch", "/api/v1/cases/{other}/members/{outsider}", {"role": "staff"}),
        ("delete", "/api/v1/cases/{other}/members/{outsider}", None),
        ("post", "/api/v1/cases/{other}/worker-check", None),
    ],
)
def test_member_of_one_case_gets_404_for_another(
    lawyer_api: Client,
    outsider: User,
    case: Case,
    other_case: Case,
    method: str,
    path: str,
    body: object,
) -> None:
    raw = json.dumps(body) if body is not None else ""
    url = path.format(other=other_case.pk, outsider=outsider.pk)
    missing_url = path.format(other=987654321, outsider=outsider.pk)

    with nothing_changes():
        response = _send(lawyer_api, method, url, raw)
        missing = _send(lawyer_api, method, missing_url, raw)

    theirs = assert_error(response, 404, "not_found")["detail"]
    nowhere = assert_error(missing, 404, "not_found")["detail"]
    # "Not yours" reads exactly like "does not exist", but for the id.
    assert str(theirs).replace(str(other_case.pk), "ID") == str(nowhere).replace("987654321", "ID")
    assert not ProcrastinateJob.objects.exists()


# --- web forms --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"number": "N", "client": "C"}, "title"),
        ({"title": "   ", "number": "N", "client": "C"}, "title"),
        ({"title": "T", "number": "", "client": "C"}, "number"),
        ({"title": "T" * 301, "number": "N", "client": "C"}, "title"),
        ({"title": "T", "number": "N" * 101, "client": "C"}, "number"),
        ({"title": "T", "number": "N", "client": "C", "court": "c" * 201}, "court"),
        ({"title": "Acme\x00", "number": "N", "client": "C"}, "title"),
        ({"title": "T", "number": "N", "client": "\x00"}, "client"),
    ],
)
def test_bad_case_form_is_400_with_the_field_error(
    lawyer_client: Client, data: dict[str, str], field: str
) -> None:
    with nothing_changes():
        response = lawyer_client.post("/cases/new/", data)

    assert response.status_code == 400
    assert response.context["form"].errors[field]
    assert b'class="errorlist' in response.content


def test_empty_case_form_post_is_400_listing_every_required_field(lawyer_client: Client) -> None:
    with nothing_changes():
        response = lawyer_client.post("/cases/new/", {})

    assert response.status_code == 400
    assert set(response.context["form"].errors) == {"title", "number", "client"}


def test_case_form_duplicate_number_is_400_with_a_clear_message(
    lawyer_client: Client, case: Case
) -> None:
    data = {"title": "T", "number": "cv-2026-0001", "client": "C", "court": "superior court"}

    with nothing_changes():
        response = lawyer_client.post("/cases/new/", data)

    assert response.status_code == 400
    assert "already exists in that court" in response.content.decode()


def test_oversized_web_form_is_refused(lawyer_client: Client) -> None:
    data = {**VALID_CASE, "court": "c" * (django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)}

    with nothing_changes():
        response = lawyer_client.post("/cases/new/", data)

    assert response.status_code in (400, 413)


def _messages(response: object) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        # Not an address: a search for a colleague by name (the member picker) finds nobody.
        ({"email": "not an address", "role": "staff"}, "Nobody found for “not an address”"),
        ({"email": "", "role": "staff"}, "This field is required."),
        ({"email": "outsider@firm.test", "role": "owner"}, "Select a valid choice."),
        ({"email": "outsider@firm.test\x00", "role": "staff"}, "Null characters are not allowed."),
        ({"email": "a" * 250 + "@firm.test", "role": "staff"}, "at most 254 characters"),
        ({"email": "nobody@firm.test", "role": "staff"}, "No active user"),
        ({"email": "staff@firm.test", "role": "staff"}, "already a member"),
    ],
)
def test_bad_member_form_gives_a_clear_message_and_stores_nothing(
    lawyer_client: Client,
    outsider: User,
    case: Case,
    data: dict[str, str],
    message: str,
) -> None:
    with nothing_changes():
        response = lawyer_client.post(f"/cases/{case.pk}/members/", data)

    # The case page again, with the form's error and what was typed (issue 13 req. 7).
    assert response.status_code == 400
    assert message in html.unescape(response.content.decode())


@pytest.mark.parametrize("role", ["", "admin", "LAWYER", "\x00"])
def test_bad_role_form_gives_a_clear_message(
    lawyer_client: Client, staff: User, case: Case, role: str
) -> None:
    with nothing_changes():
        response = lawyer_client.post(f"/cases/{case.pk}/members/{staff.pk}/role/", {"role": role})

    assert response.status_code == 302
    assert "Choose lawyer or staff." in _messages(response)
