"""Edges found on review: odd custodian text and ids beyond the database's range."""

import pytest
from django.test import Client

from apps.cases.models import Case
from apps.documents.models import Document, Production
from tests.documents.files import upload

pytestmark = pytest.mark.django_db


def test_custodian_is_cleaned_of_control_characters_and_bounded(
    lawyer_api: Client, case: Case
) -> None:
    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/documents",
        {
            "files": [upload("note.txt", b"hello")],
            "origin": "client",
            "custodian": "Jane\x00 Roe\x1b  (CFO)" + "x" * 500,
        },
    )

    assert response.status_code == 201, response.content
    custodian = Document.objects.get().custodian
    assert custodian.startswith("Jane Roe (CFO)")
    assert len(custodian) == 200 and "\x00" not in custodian and "\x1b" not in custodian


@pytest.mark.parametrize("document_id", [2**63, 2**70, 0, -1])
def test_production_with_an_impossible_document_id_is_a_clear_error(
    lawyer_api: Client, case: Case, document_id: int
) -> None:
    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "V1", "prefix": "ACME", "document_ids": [document_id]},
        content_type="application/json",
    )

    assert response.status_code in (400, 422), response.content
    assert response.json()["detail"]
    assert not Production.objects.exists()
