"""Shared fixtures for evidence tests: documents of a case with known page text, made as rows
(ingest itself is tested in tests/documents; the adversarial suite uses the real upload).

`make_document(case, user, pages=[...texts...])` is a READY, registry-CLEAR document unless
told otherwise; `make_packet` a packet created through the service.
"""

import hashlib
import itertools
from collections.abc import Callable, Sequence

import pytest

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents.models import BatesPage, Blob, Derivation, Document, Page, Production
from apps.evidence.models import Packet
from apps.evidence.services import packets as packet_services

_counter = itertools.count(1)

MakeDocument = Callable[..., Document]


def make_document(
    case: Case,
    user: User,
    *,
    pages: Sequence[str] = ("Page one text.", "Page two text.", "Page three text."),
    filename: str | None = None,
    origin: str = Document.Origin.CLIENT,
    status: str = Document.Status.READY,
    provenance: str = Document.Provenance.CLEAR,
    source: str = Page.Source.TEXT_LAYER,
    ocr_confidence: float | None = None,
) -> Document:
    """A document of `case` whose pages hold `pages` (all stored, unless status says it is
    still being read: then none are)."""
    n = next(_counter)
    blob = Blob.objects.create(
        sha256=hashlib.sha256(f"evidence-test-{n}-{filename}".encode()).hexdigest(), size=100
    )
    ready = status == Document.Status.READY
    document = Document.objects.create(
        case=case,
        blob=blob,
        filename=filename or f"exhibit-{n}.pdf",
        kind=Document.Kind.PDF,
        content_type="application/pdf",
        origin=origin,
        status=status,
        provenance=provenance,
        page_count=len(pages),
        pages_done=len(pages) if ready else 0,
        uploaded_by=user,
    )
    if ready:
        Page.objects.bulk_create(
            Page(
                document=document,
                number=number,
                text=text,
                source=source,
                ocr_confidence=ocr_confidence,
            )
            for number, text in enumerate(pages, 1)
        )
    return document


def derive(
    child: Document,
    parent: Document,
    *,
    transform: str = "email-attachment",
    version: str = "1",
    deterministic: bool = True,
) -> Derivation:
    """A lineage row written directly (the origin rules of documents.services are not applied,
    so a test can show that lineage alone refuses)."""
    return Derivation.objects.create(
        child=child,
        parent=parent,
        transform=transform,
        version=version,
        deterministic=deterministic,
    )


def stamp(
    document: Document, user: User, *, prefix: str = "ACME", first: int = 1, volume: str = ""
) -> Production:
    """Bates numbers for every page of `document` (BatesPage rows, as a finished production
    leaves them; the stamping itself is tested in tests/documents)."""
    last = first + document.page_count - 1
    production = Production.objects.create(
        case=document.case,
        volume=volume or f"{prefix}{first:03d}",
        prefix=prefix,
        digits=6,
        first_number=first,
        last_number=last,
        status=Production.Status.READY,
        page_count=document.page_count,
        pages_done=document.page_count,
        created_by=user,
    )
    BatesPage.objects.bulk_create(
        BatesPage(
            case=document.case,
            prefix=prefix,
            number=first + n,
            production=production,
            document=document,
            page_number=n + 1,
            production_page=n + 1,
        )
        for n in range(document.page_count)
    )
    return production


def selection(
    document: Document,
    first: int | None = None,
    last: int | None = None,
    reason: str = "Shows the invoice dates",
) -> packet_services.Selection:
    return packet_services.Selection(
        document_id=document.pk, first_page=first, last_page=last, reason=reason
    )


@pytest.fixture
def packet(lawyer: User, case: Case) -> Packet:
    return packet_services.packet_create(
        user=lawyer, case_id=case.pk, title="Summary judgment evidence", purpose="MSJ"
    )
