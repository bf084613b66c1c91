"""Bulk actions keep the review list's order (issue 25 req 4): the list's help text says a
production and a packet take the documents in the list's order; its sort (name, size, ...) is
that order, for ticked documents and for "all matching" alike, never their ids' order."""

import io
from pathlib import Path

import pymupdf
import pytest
from django.urls import reverse

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import services as document_services
from apps.documents.models import Document, DocumentTag
from apps.evidence.models import PacketItem
from apps.evidence.services import packets as packet_services
from tests.conftest import session_client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _blobs(blob_root: Path) -> None:
    """Every test stores its files in a blob root of its own."""


def _doc(case: Case, user: User, name: str, pages: int) -> Document:
    with pymupdf.open() as pdf:
        for n in range(pages):
            pdf.new_page().insert_text((72, 72), f"{name}, page {n + 1}.", fontsize=11)
        data = pdf.tobytes()
    outcome = document_services.document_upload(
        case=case, uploaded_by=user, filename=name, source=io.BytesIO(data), origin="client"
    )
    assert outcome.document is not None, outcome.error
    document_services.document_extract_text(document_id=outcome.document.pk)
    return outcome.document


@pytest.fixture
def docs(lawyer: User, case: Case) -> dict[str, Document]:
    """Uploaded (so numbered) in an order that is neither by name nor by pages."""
    made = [("beta.pdf", 1), ("delta.pdf", 3), ("alpha.pdf", 2), ("gamma.pdf", 4)]
    return {name: _doc(case, lawyer, name, pages) for name, pages in made}


def _picked(client: object, location: str) -> list[str]:
    """The file names the new production's page lists, in its order."""
    html = client.get(location).content.decode()  # type: ignore[attr-defined]
    ids = [int(chunk.split('"', 1)[0]) for chunk in html.split('<tr data-document-id="')[1:]]
    names = dict(Document.objects.filter(pk__in=ids).values_list("pk", "filename"))
    return [names[i] for i in ids]


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ("name", ["alpha.pdf", "beta.pdf", "delta.pdf", "gamma.pdf"]),
        ("-name", ["gamma.pdf", "delta.pdf", "beta.pdf", "alpha.pdf"]),
        ("-pages", ["gamma.pdf", "delta.pdf", "alpha.pdf", "beta.pdf"]),
    ],
)
def test_produce_all_matching_takes_the_documents_in_the_lists_sort(
    lawyer: User, case: Case, docs: dict[str, Document], sort: str, expected: list[str]
) -> None:
    client = session_client(lawyer)
    response = client.post(
        reverse("documents:bulk", kwargs={"case_id": case.pk}),
        {"action": "produce", "scope": "all", "filters": f"sort={sort}", "volume": "V1"},
    )

    assert response.status_code == 302
    assert _picked(client, response["Location"]) == expected


def test_produce_ticked_documents_takes_them_in_the_lists_sort_not_as_posted(
    lawyer: User, case: Case, docs: dict[str, Document]
) -> None:
    client = session_client(lawyer)
    ticked = [docs[n].pk for n in ("gamma.pdf", "alpha.pdf", "delta.pdf")]

    response = client.post(
        reverse("documents:bulk", kwargs={"case_id": case.pk}),
        {"action": "produce", "ids": ticked, "filters": "sort=name", "volume": "V1"},
    )

    assert _picked(client, response["Location"]) == ["alpha.pdf", "delta.pdf", "gamma.pdf"]


def test_adding_all_matching_to_a_packet_keeps_the_lists_sort(
    lawyer: User, case: Case, docs: dict[str, Document]
) -> None:
    packet = packet_services.packet_create(user=lawyer, case_id=case.pk, title="Exhibits")
    client = session_client(lawyer)

    client.post(
        reverse("documents:bulk", kwargs={"case_id": case.pk}),
        {
            "action": "packet",
            "scope": "all",
            "filters": "sort=-pages",
            "packet": packet.pk,
            "packet_reason": "The record of the motion",
        },
    )
    items = PacketItem.objects.filter(packet=packet).order_by("order")

    assert [i.document.filename for i in items] == [
        "gamma.pdf",
        "delta.pdf",
        "alpha.pdf",
        "beta.pdf",
    ]


def test_a_ticked_id_of_another_case_is_still_refused_by_name(
    lawyer: User, case: Case, other_case: Case, outsider: User, docs: dict[str, Document]
) -> None:
    stranger = _doc(other_case, outsider, "stranger.pdf", 1)
    client = session_client(lawyer)

    response = client.post(
        reverse("documents:bulk", kwargs={"case_id": case.pk}),
        {"action": "tag", "ids": [docs["beta.pdf"].pk, stranger.pk], "tag_name": "hot"},
        follow=True,
    )

    assert f"No document {stranger.pk} in this case." in response.content.decode()
    assert not DocumentTag.objects.exists()
