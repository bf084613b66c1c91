"""The confidentiality legend (issue 28 req. 8 and its bad input): stamped and stored apart
from the Bates number, never part of it; a legend that would run past the page's edge or over
the number is a clear refusal, on the service, the API and the stamp preview."""

import io
from pathlib import Path

import pymupdf
import pytest

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import production_selectors, production_services, stamping, storage
from apps.documents import services as document_services
from apps.documents.models import BatesPage, Document, Production
from lexweb.errors import DomainError
from tests.conftest import session_client, token_client

pytestmark = pytest.mark.django_db

JSON = "application/json"
LONG_LEGEND = (
    "CONFIDENTIAL - ATTORNEYS' EYES ONLY - SUBJECT TO THE PROTECTIVE ORDER OF 4 MAY 2024 - "
    "DO NOT COPY OR DISTRIBUTE"
)


@pytest.fixture(autouse=True)
def _blobs(blob_root: Path) -> None:
    """Every test stores its files in a blob root of its own."""


def _doc(case: Case, user: User) -> Document:
    with pymupdf.open() as pdf:
        pdf.new_page(width=595, height=842).insert_text((72, 72), "The lease.", fontsize=11)
        data = pdf.tobytes()
    outcome = document_services.document_upload(
        case=case, uploaded_by=user, filename="a.pdf", source=io.BytesIO(data), origin="client"
    )
    assert outcome.document is not None, outcome.error
    document_services.document_extract_text(document_id=outcome.document.pk)
    return outcome.document


def test_a_legend_wider_than_the_page_beside_the_number_is_refused_saying_why(
    lawyer: User, case: Case
) -> None:
    document = _doc(case, lawyer)
    assert len(LONG_LEGEND) <= 120  # the legend's own limit lets it through

    with pytest.raises(DomainError, match="do not both fit within the margins of an A4 page"):
        production_services.production_create(
            case=case,
            actor=lawyer,
            volume="VOL001",
            prefix="ABC ",
            document_ids=[document.pk],
            legend=LONG_LEGEND,
        )
    response = token_client(lawyer).post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "V", "prefix": "ABC", "document_ids": [document.pk], "legend": LONG_LEGEND},
        content_type=JSON,
    )
    preview = session_client(lawyer).get(
        f"/cases/{case.pk}/productions/preview/{document.pk}.png",
        {"bates_prefix": "ABC", "legend": LONG_LEGEND},
    )

    assert response.status_code == 400 and "A4 page" in response.json()["detail"]
    assert preview.status_code == 400 and b"A4 page" in preview.content
    assert not Production.objects.exists() and not BatesPage.objects.exists()


@pytest.mark.parametrize(
    ("legend", "position", "size", "fits"),
    [
        ("CONFIDENTIAL", "bottom_left", 9, True),
        (LONG_LEGEND, "top_left", 9, True),  # a line of its own
        (LONG_LEGEND, "bottom_left", 9, False),
        ("CONFIDENTIAL - SUBJECT TO PROTECTIVE ORDER", "bottom_left", 24, False),
        ("CONFIDENTIAL", "bottom_center", 24, False),  # centred, under the number
        ("CONFIDENTIAL", "bottom_center", 9, True),
    ],
)
def test_the_legend_fits_beside_the_number_or_on_a_line_of_its_own(
    legend: str, position: str, size: float, fits: bool
) -> None:
    settings = stamping.StampSettings(
        prefix="ACME-2024 ", digits=8, legend=legend, legend_position=position, font_size=size
    )

    assert (stamping.stamp_fit_problem(settings) is None) is fits


def test_the_legend_is_stamped_apart_from_the_number_and_never_part_of_it(
    lawyer: User, case: Case
) -> None:
    document = _doc(case, lawyer)
    production = production_services.production_create(
        case=case,
        actor=lawyer,
        volume="VOL001",
        prefix="ABC-",
        document_ids=[document.pk],
        legend="CONFIDENTIAL",
    )
    production_services.production_stamp(production_id=production.pk)
    production.refresh_from_db()

    assert production.legend == "CONFIDENTIAL"
    assert [str(p) for p in BatesPage.objects.all()] == ["ABC-1"]
    assert production.bates(1) == "ABC-000001"
    assert production.output is not None
    with pymupdf.open(storage.blob_path(production.output.sha256)) as volume:
        lines = [
            " ".join(span["text"] for span in line["spans"])
            for block in volume[0].get_text("dict")["blocks"]
            for line in block.get("lines", ())
        ]
    # Two lines of their own: the number, and the legend.
    assert "ABC-000001" in lines and "CONFIDENTIAL" in lines
    hits = production_selectors.bates_lookup_for_user(
        user=lawyer, case_id=case.pk, reference="ABC 000001"
    )
    assert [hit.bates for hit in hits] == ["ABC-000001"]
    with pytest.raises(DomainError, match="is not a Bates number"):
        production_selectors.bates_lookup_for_user(
            user=lawyer, case_id=case.pk, reference="CONFIDENTIAL ABC-000001"
        )
