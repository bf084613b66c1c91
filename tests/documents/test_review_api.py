"""The review list's writes through the API (tags, withdraw, restore): the same services as the
browser's bulk actions, so the same rules; here what an agent sees, and its bad input."""

import json
from typing import Any

import pytest
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents.models import Document, DocumentTag, Tag
from tests.conftest import token_client
from tests.documents.test_review_list import _doc, _frozen_packet_with

pytestmark = pytest.mark.django_db


def _post(client: Client, url: str, body: Any) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def test_an_agent_tags_and_untags_documents_and_lists_the_tags(lawyer: User, case: Case) -> None:
    one, two = _doc(case, lawyer, "one.pdf"), _doc(case, lawyer, "two.pdf")
    api = token_client(lawyer)
    base = f"/api/v1/cases/{case.pk}"

    tagged = _post(
        api, f"{base}/documents/tag", {"document_ids": [one.pk, two.pk], "name": " Hot  doc "}
    )
    again = _post(api, f"{base}/documents/tag", {"document_ids": [one.pk], "name": "hot doc"})
    tags = api.get(f"{base}/tags")

    assert tagged.status_code == 200, tagged.content
    tag = Tag.objects.get(case=case)
    assert tagged.json() == {"tag": {"id": tag.pk, "name": "Hot doc"}, "added": 2}
    assert again.json()["added"] == 0 and again.json()["tag"]["id"] == tag.pk
    assert tags.json() == [{"id": tag.pk, "name": "Hot doc"}]
    untagged = _post(api, f"{base}/documents/untag", {"document_ids": [two.pk], "tag_id": tag.pk})
    assert untagged.json() == {"removed": 1}
    assert list(DocumentTag.objects.values_list("document_id", flat=True)) == [one.pk]
    actions = AuditEvent.objects.filter(case=case, action__startswith="document.")
    assert sorted(actions.values_list("action", flat=True)) == [
        "document.tag",
        "document.tag",
        "document.untag",
    ]


def test_an_agent_withdraws_for_a_reason_and_restores(lawyer: User, case: Case) -> None:
    wrong = _doc(case, lawyer, "wrong-case.pdf")
    api = token_client(lawyer)
    base = f"/api/v1/cases/{case.pk}"

    withdrawn = _post(
        api, f"{base}/documents/withdraw", {"document_ids": [wrong.pk], "reason": "Wrong case"}
    )
    listed = api.get(f"{base}/documents").json()["items"]
    twice = _post(api, f"{base}/documents/withdraw", {"document_ids": [wrong.pk], "reason": "x"})
    restored = api.post(f"{base}/documents/{wrong.pk}/restore")
    restored_again = api.post(f"{base}/documents/{wrong.pk}/restore")

    assert withdrawn.status_code == 200, withdrawn.content
    (body,) = withdrawn.json()
    assert body["id"] == wrong.pk and body["withdrawn"] is True
    assert body["withdrawn_reason"] == "Wrong case" and body["withdrawn_at"]
    assert wrong.pk not in [d["id"] for d in listed]
    assert twice.status_code == 409 and "already withdrawn" in twice.json()["detail"]
    assert restored.status_code == 200
    assert restored.json()["withdrawn"] is False and restored.json()["withdrawn_reason"] == ""
    assert restored_again.status_code == 409 and "not withdrawn" in restored_again.json()["detail"]
    wrong.refresh_from_db()
    assert wrong.withdrawn_at is None


def test_withdrawing_is_all_or_none_and_a_frozen_document_stays(lawyer: User, case: Case) -> None:
    loose = _doc(case, lawyer, "loose.pdf")
    frozen = _doc(case, lawyer, "exhibit.pdf")
    _frozen_packet_with(case, lawyer, frozen)

    response = _post(
        token_client(lawyer),
        f"/api/v1/cases/{case.pk}/documents/withdraw",
        {"document_ids": [loose.pk, frozen.pk], "reason": "Mistake"},
    )

    assert response.status_code == 409
    assert "frozen packet" in response.json()["detail"]
    assert not Document.objects.filter(withdrawn_at__isnull=False).exists()


def test_another_cases_document_is_not_found_and_nothing_changes(
    lawyer: User, case: Case, outsider: User, other_case: Case
) -> None:
    theirs = _doc(other_case, outsider, "theirs.pdf")
    api = token_client(lawyer)
    base = f"/api/v1/cases/{case.pk}"

    tag = _post(api, f"{base}/documents/tag", {"document_ids": [theirs.pk], "name": "Mine"})
    withdraw = _post(
        api, f"{base}/documents/withdraw", {"document_ids": [theirs.pk], "reason": "x"}
    )
    restore = api.post(f"{base}/documents/{theirs.pk}/restore")
    # The outsider's own case through the lawyer's token: 404, as for no case at all.
    foreign = _post(
        api,
        f"/api/v1/cases/{other_case.pk}/documents/withdraw",
        {"document_ids": [theirs.pk], "reason": "x"},
    )

    assert [r.status_code for r in (tag, withdraw, restore, foreign)] == [404] * 4
    assert not Tag.objects.exists()
    theirs.refresh_from_db()
    assert theirs.withdrawn_at is None


# 422: the body's shape (the schema); 400: what the service refuses (an empty name or reason).
@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("documents/tag", {"document_ids": [], "name": "x"}, 422),
        ("documents/tag", {"document_ids": [1], "name": ""}, 400),
        ("documents/tag", {"document_ids": [1], "name": "x" * 61}, 400),
        ("documents/tag", {"document_ids": [1], "name": "x" * 100_000}, 422),
        ("documents/tag", {"document_ids": ["1; drop"], "name": "x"}, 422),
        ("documents/tag", {"document_ids": [1] * 10_001, "name": "x"}, 422),
        ("documents/tag", {"document_ids": [1], "name": "x", "extra": 1}, 422),
        ("documents/tag", {"document_ids": [1], "name": "nul\x00"}, 422),
        ("documents/untag", {"document_ids": [1], "tag_id": 0}, 422),
        ("documents/untag", {"document_ids": [1], "tag_id": 2**63}, 422),
        ("documents/withdraw", {"document_ids": [1], "reason": "   "}, 400),
        ("documents/withdraw", {"document_ids": [1], "reason": "r" * 1001}, 400),
        ("documents/withdraw", {"document_ids": [-5], "reason": "r"}, 400),
        ("documents/withdraw", "not an object", 422),
    ],
)
def test_malformed_hostile_and_oversized_bodies_are_refused_and_change_nothing(
    lawyer: User, case: Case, path: str, body: Any, status: int
) -> None:
    document = _doc(case, lawyer, "kept.pdf")
    if isinstance(body, dict) and body.get("document_ids") == [1]:
        body = {**body, "document_ids": [document.pk]}

    response = _post(token_client(lawyer), f"/api/v1/cases/{case.pk}/{path}", body)

    assert response.status_code == status, response.content
    assert response.json()["detail"]
    assert not Tag.objects.exists() and not DocumentTag.objects.exists()
    document.refresh_from_db()
    assert document.withdrawn_at is None


def test_a_body_that_is_not_json_is_refused(lawyer: User, case: Case) -> None:
    response = token_client(lawyer).post(
        f"/api/v1/cases/{case.pk}/documents/withdraw", b"\xff{", content_type="application/json"
    )
    assert response.status_code == 400
