"""Exported drafts carry the case's caption and page numbers (issue 25 req 6): the court, the
case's title, "Case No. ..." and the draft's title at the top of the first page, and "Case No.
... · Page N of M" at the foot of every page, in the PDF and the DOCX; still the same bytes
when exported again."""

import io
from typing import Any

import docx
import pymupdf
import pytest
from django.test import Client
from docx.enum.text import WD_ALIGN_PARAGRAPH

from apps.accounts.models import User
from apps.cases.models import Case
from apps.drafting.models import Draft
from apps.drafting.services import exports
from tests.drafting.makers import draft_of, packet_of, read_pdf, verified

pytestmark = pytest.mark.django_db

# Long enough for three A4 pages or more.
TEXT = "# Statement of facts\n\n" + "\n\n".join(
    f"Paragraph {n}: the lease began on 3 March 2024 and the rent was paid monthly, "
    "as the landlord's ledger shows on every page of the record." * 3
    for n in range(1, 40)
)


@pytest.fixture
def draft(lawyer: User, case: Case) -> Draft:
    document = read_pdf(case=case, user=lawyer, lines=["The lease began on 3 March 2024."])
    packet = packet_of(case=case, user=lawyer, documents=[document])
    made = draft_of(case=case, user=lawyer, packet=packet, text=TEXT)
    verified(draft=made, user=lawyer, statuses=["supported"])
    return made


def _export(client: Client, draft: Draft, fmt: str) -> Any:
    response = client.post(
        f"/api/v1/cases/{draft.case_id}/drafts/{draft.pk}/versions/1/export",
        {"format": fmt},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    return response


def test_the_pdf_opens_with_the_caption_and_numbers_every_page(
    lawyer_api: Client, draft: Draft, case: Case
) -> None:
    data = _export(lawyer_api, draft, "pdf").content

    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        pages = [page.get_text() for page in pdf]
    assert len(pages) >= 3
    top = pages[0].split("Statement of facts")[0]
    assert [line for line in top.splitlines() if line.strip()] == [
        case.court.upper(),
        case.title,
        f"Case No. {case.number}",
        f"{draft.title} v1",
    ]
    for n, text in enumerate(pages, start=1):
        assert f"Case No. {case.number} · Page {n} of {len(pages)}" in text
    assert _export(lawyer_api, draft, "pdf").content == data  # deterministic still


def test_the_docx_opens_with_the_caption_and_numbers_pages_in_its_footer(
    lawyer_api: Client, draft: Draft, case: Case
) -> None:
    data = _export(lawyer_api, draft, "docx").content

    document = docx.Document(io.BytesIO(data))
    head = [(p.text, p.alignment) for p in document.paragraphs[:4]]
    centre = WD_ALIGN_PARAGRAPH.CENTER
    assert head == [
        (case.court.upper(), centre),
        (case.title, centre),
        (f"Case No. {case.number}", centre),
        (f"{draft.title} v1", centre),
    ]
    footer = document.sections[0].footer.paragraphs[0]._p.xml
    assert f"Case No. {case.number} · Page " in footer
    assert 'w:instr="PAGE"' in footer and 'w:instr="NUMPAGES"' in footer
    assert _export(lawyer_api, draft, "docx").content == data


def test_a_case_without_a_court_has_no_empty_line_for_it() -> None:
    caption = exports.Caption(court="", case_title="Acme v. Widget", case_number="7", title="Brief")

    assert caption.lines() == [
        ("case", "Acme v. Widget"),
        ("number", "Case No. 7"),
        ("title", "Brief"),
    ]
    assert caption.footer(2, 9) == "Case No. 7 · Page 2 of 9"
