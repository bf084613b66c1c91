"""Malformed, hostile and oversized input at every edge of the packets API.

Each test checks the answer (status, the one `{detail, code}` shape, a detail a person can act
on) and that no packet, item or frozen page was written or changed.
"""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.test import Client

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents.models import Document
from apps.evidence.models import FrozenPage, Packet, PacketItem
from tests.api.test_bad_input import assert_error
from tests.evidence.test_api import add, base, create, read_document

pytestmark = pytest.mark.django_db

JSON = "application/json"


def _state() -> tuple[object, ...]:
    return (
        list(Packet.objects.order_by("pk").values_list()),
        list(PacketItem.objects.order_by("pk").values_list()),
        FrozenPage.objects.count(),
    )


@contextmanager
def nothing_changes() -> Iterator[None]:
    before = _state()
    yield
    assert _state() == before


@pytest.fixture
def ledger(case: Case, lawyer: User) -> Document:
    return read_document(case, lawyer, "ledger.pdf", ["One.", "Two.", "Three."])


@pytest.fixture
def packet(lawyer_api: Client, case: Case) -> dict[str, Any]:
    return create(lawyer_api, case)


def _items_url(case: Case, packet: dict[str, Any]) -> str:
    return f"{base(case)}/{packet['id']}/items"


# --- Creating a packet ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({}, "title"),
        ({"title": ""}, "title"),
        ({"title": "   "}, "title"),
        ({"title": "x" * 201}, "title"),
        ({"title": "Nul\x00here"}, "title"),
        ({"title": "Bell\x07"}, "title"),
        ({"title": 12}, "title"),
        ({"title": ["a"]}, "title"),
        ({"title": "ok", "purpose": "p" * 5_001}, "purpose"),
        ({"title": "ok", "status": "frozen"}, "status"),
        ({"title": "ok", "content_hash": "0" * 64}, "content_hash"),
    ],
    ids=[
        "missing",
        "empty",
        "blank",
        "too-long",
        "nul",
        "control",
        "number",
        "list",
        "purpose-too-long",
        "status-is-not-settable",
        "hash-is-not-settable",
    ],
)
def test_create_refuses_bad_bodies_with_422_naming_the_field(
    lawyer_api: Client, case: Case, body: dict[str, Any], loc: str
) -> None:
    with nothing_changes():
        response = lawyer_api.post(base(case), body, content_type=JSON)

    error = assert_error(response, 422, "invalid")
    assert any(loc in map(str, e["loc"]) for e in error["errors"]), error  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "raw", [b"", b"{", b"[]", b"null", b'"title"', b"\xff\xfe", b'{"title": "a"' + b" " * 10]
)
def test_create_refuses_unreadable_json(lawyer_api: Client, case: Case, raw: bytes) -> None:
    with nothing_changes():
        response = lawyer_api.generic("POST", base(case), raw, content_type=JSON)

    assert response.status_code in (400, 422), response.content
    assert set(response.json()) >= {"detail", "code"}


def test_hostile_title_is_stored_verbatim_and_returned_as_data(
    lawyer_api: Client, case: Case
) -> None:
    title = '<script>alert(1)</script> "; DROP TABLE evidence_packet; -- \u202e'

    body = create(lawyer_api, case, title)

    assert body["title"] == title.strip()
    assert Packet.objects.get(pk=body["id"]).title == title.strip()


# --- Selections -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selection", "loc"),
    [
        ({"reason": "no document"}, "document_id"),
        ({"document_id": 0, "reason": "r"}, "document_id"),
        ({"document_id": -1, "reason": "r"}, "document_id"),
        ({"document_id": 2**63, "reason": "r"}, "document_id"),
        ({"document_id": "abc", "reason": "r"}, "document_id"),
        ({"document_id": "DOC", "first_page": "one", "reason": "r"}, "first_page"),
        ({"document_id": "DOC", "first_page": 0, "reason": "r"}, "first_page"),
        ({"document_id": "DOC", "first_page": -3, "reason": "r"}, "first_page"),
        ({"document_id": "DOC", "first_page": 2**70, "reason": "r"}, "first_page"),
        ({"document_id": "DOC", "first_page": 1.5, "reason": "r"}, "first_page"),
        ({"document_id": "DOC", "last_page": 2, "reason": "r"}, "items"),
        ({"document_id": "DOC", "first_page": 3, "last_page": 2, "reason": "r"}, "items"),
        ({"document_id": "DOC"}, "reason"),
        ({"document_id": "DOC", "reason": ""}, "reason"),
        ({"document_id": "DOC", "reason": " \n\t "}, "reason"),
        ({"document_id": "DOC", "reason": "r" * 2_001}, "reason"),
        ({"document_id": "DOC", "reason": "nul \x00"}, "items"),
        ({"document_id": "DOC", "reason": "esc \x1b[31m"}, "reason"),
        ({"document_id": "DOC", "reason": "r", "order": 1}, "order"),
        ({"document_id": "DOC", "reason": "r", "added_by": 1}, "added_by"),
    ],
    ids=[
        "no-document",
        "document-zero",
        "document-negative",
        "document-past-bigint",
        "document-text",
        "page-text",
        "page-zero",
        "page-negative",
        "page-enormous",
        "page-fraction",
        "last-without-first",
        "reversed",
        "no-reason",
        "empty-reason",
        "blank-reason",
        "reason-too-long",
        "reason-nul",
        "reason-escape",
        "order-not-settable",
        "added-by-not-settable",
    ],
)
def test_bad_selection_is_a_422_naming_the_field_and_nothing_is_added(
    lawyer_api: Client,
    case: Case,
    ledger: Document,
    packet: dict[str, Any],
    selection: dict[str, Any],
    loc: str,
) -> None:
    selection = {k: ledger.pk if v == "DOC" else v for k, v in selection.items()}

    with nothing_changes():
        response = add(lawyer_api, case, packet["id"], selection)

    error = assert_error(response, 422, "invalid")
    assert any(loc in map(str, e["loc"]) for e in error["errors"]), error  # type: ignore[attr-defined]


def test_reversed_range_error_says_what_is_wrong(
    lawyer_api: Client, case: Case, ledger: Document, packet: dict[str, Any]
) -> None:
    response = add(
        lawyer_api,
        case,
        packet["id"],
        {"document_id": ledger.pk, "first_page": 3, "last_page": 2, "reason": "r"},
    )

    assert "3-2 is reversed" in assert_error(response, 422)["detail"]  # type: ignore[operator]


@pytest.mark.parametrize(
    "body",
    [{}, {"items": []}, {"items": None}, {"items": {}}, {"items": "all"}, {"items": [1, 2]}],
    ids=["no-items", "empty", "null", "object", "text", "numbers"],
)
def test_items_body_of_the_wrong_shape_is_422(
    lawyer_api: Client, case: Case, packet: dict[str, Any], body: dict[str, Any]
) -> None:
    with nothing_changes():
        response = lawyer_api.post(_items_url(case, packet), body, content_type=JSON)

    assert_error(response, 422, "invalid")


def test_page_range_past_the_end_of_the_document_is_refused_naming_it(
    lawyer_api: Client, case: Case, ledger: Document, packet: dict[str, Any]
) -> None:
    with nothing_changes():
        response = add(
            lawyer_api,
            case,
            packet["id"],
            {"document_id": ledger.pk, "first_page": 2, "last_page": 4, "reason": "r"},
        )

    error = assert_error(response, 400)
    assert "ledger.pdf" in error["detail"]  # type: ignore[operator]
    assert "3" in error["detail"]  # type: ignore[operator]  # the page count


def test_overlapping_ranges_are_refused_within_a_request_and_against_the_packet(
    lawyer_api: Client, case: Case, ledger: Document, packet: dict[str, Any]
) -> None:
    with nothing_changes():
        within = add(
            lawyer_api,
            case,
            packet["id"],
            {"document_id": ledger.pk, "first_page": 1, "last_page": 2, "reason": "a"},
            {"document_id": ledger.pk, "first_page": 2, "last_page": 3, "reason": "b"},
        )
    assert "overlap" in assert_error(within, 400)["detail"].lower()  # type: ignore[attr-defined]
    whole = add(lawyer_api, case, packet["id"], {"document_id": ledger.pk, "reason": "all"})
    assert whole.status_code == 201, whole.content

    with nothing_changes():
        again = add(
            lawyer_api,
            case,
            packet["id"],
            {"document_id": ledger.pk, "first_page": 2, "reason": "b"},
        )
    assert "overlap" in assert_error(again, 400)["detail"].lower()  # type: ignore[attr-defined]


def test_more_selections_than_the_setting_allows_is_refused_with_the_limit(
    lawyer_api: Client, case: Case, ledger: Document, packet: dict[str, Any], settings: Any
) -> None:
    settings.LEXWEB_MAX_PACKET_ITEMS = 2
    selections = [
        {"document_id": ledger.pk, "first_page": n, "reason": f"page {n}"} for n in (1, 2, 3)
    ]

    with nothing_changes():
        response = add(lawyer_api, case, packet["id"], *selections)

    error = assert_error(response, 400)
    assert "2" in error["detail"]  # type: ignore[operator]


@pytest.mark.slow
def test_an_enormous_request_is_refused_before_anything_is_looked_up(
    lawyer_api: Client, case: Case, packet: dict[str, Any]
) -> None:
    selections = [{"document_id": 1, "reason": "r"}] * 10_001

    with nothing_changes():
        response = lawyer_api.post(
            _items_url(case, packet), json.dumps({"items": selections}), content_type=JSON
        )

    assert response.status_code in (413, 422), response.content[:200]


def test_hostile_reason_is_kept_as_text(
    lawyer_api: Client, case: Case, ledger: Document, packet: dict[str, Any]
) -> None:
    reason = "<img src=x onerror=alert(1)> {{ secret }} ${jndi:ldap://x} ‮"

    response = add(lawyer_api, case, packet["id"], {"document_id": ledger.pk, "reason": reason})

    assert response.status_code == 201, response.content
    assert response.json()[0]["reason"] == reason.strip()


# --- Path ids and the remove reason ------------------------------------------------------


@pytest.mark.parametrize("bad", ["0", "-1", "abc", str(2**63), "1.5"])
def test_bad_ids_in_the_path_are_422_or_404_never_500(
    lawyer_api: Client, case: Case, packet: dict[str, Any], bad: str
) -> None:
    paths = [
        f"/api/v1/cases/{case.pk}/packets/{bad}",
        f"/api/v1/cases/{case.pk}/packets/{bad}/versions",
        f"/api/v1/cases/{case.pk}/packets/{packet['id']}/compare/{bad}",
        f"/api/v1/cases/{bad}/packets",
    ]
    with nothing_changes():
        for path in paths:
            response = lawyer_api.get(path)
            assert response.status_code in (404, 422), (path, response.content)
        removed = lawyer_api.delete(f"/api/v1/cases/{case.pk}/packets/{packet['id']}/items/{bad}")
        assert removed.status_code in (404, 422)


def test_remove_reason_too_long_is_422(
    lawyer_api: Client, case: Case, ledger: Document, packet: dict[str, Any]
) -> None:
    (item,) = add(lawyer_api, case, packet["id"], {"document_id": ledger.pk, "reason": "r"}).json()

    with nothing_changes():
        response = lawyer_api.delete(
            f"{base(case)}/{packet['id']}/items/{item['id']}?reason=" + "x" * 2_001
        )

    assert_error(response, 422, "invalid")


def test_missing_packet_is_404(lawyer_api: Client, case: Case) -> None:
    response = lawyer_api.get(f"{base(case)}/987654321")

    assert_error(response, 404, "not_found")
