"""Real drafts for tests: a read PDF in a frozen packet, a draft of it, and verifications whose
findings are written directly (the verifier's own checks are tested in tests/verification)."""

import io

import pymupdf

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import services as document_services
from apps.documents.models import Document
from apps.drafting.models import Draft
from apps.drafting.services import drafts as draft_services
from apps.evidence.models import FrozenPage, Packet
from apps.evidence.services import packets as packet_services
from apps.verification.models import Finding, Verification


def read_pdf(*, case: Case, user: User, lines: list[str], filename: str = "record.pdf") -> Document:
    """A one-page PDF of `case` carrying `lines`, uploaded and read."""
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        for n, line in enumerate(lines):
            page.insert_text((72, 72 + 16 * n), line, fontsize=11)
        data = pdf.tobytes()
    outcome = document_services.document_upload(
        case=case, uploaded_by=user, filename=filename, source=io.BytesIO(data), origin="client"
    )
    assert outcome.document is not None, outcome.error
    document_services.document_extract_text(document_id=outcome.document.pk)
    return Document.objects.get(pk=outcome.document.pk)


def packet_of(
    *, case: Case, user: User, documents: list[Document], title: str = "Record", freeze: bool = True
) -> Packet:
    packet = packet_services.packet_create(user=user, case_id=case.pk, title=title)
    packet_services.packet_items_add(
        user=user,
        case_id=case.pk,
        packet_id=packet.pk,
        selections=[
            packet_services.Selection(document_id=document.pk, reason="The record")
            for document in documents
        ],
    )
    if freeze:
        packet = packet_services.packet_freeze(user=user, case_id=case.pk, packet_id=packet.pk)
    return packet


def draft_of(
    *,
    case: Case,
    user: User,
    packet: Packet,
    text: str = "The lease began on 3 March 2024.",
    title: str = "Brief",
) -> Draft:
    return draft_services.draft_create(
        user=user,
        case_id=case.pk,
        title=title,
        kind="brief",
        packet_id=packet.pk,
        content=draft_services.pasted_content(text=text),
    )


def verified(
    *, draft: Draft, user: User, statuses: list[str], number: int = 1
) -> tuple[Verification, list[Finding]]:
    """A done verification of version `number` with one finding per status, written directly
    (offsets into the version's text, the packet's first frozen page as their page)."""
    version = draft.versions.get(number=number)
    page = FrozenPage.objects.filter(packet=draft.packet).order_by("position").first()
    verification = Verification.objects.create(
        version=version,
        requested_by=user,
        status=Verification.Status.DONE,
        claim_count=len(statuses),
        claims_done=len(statuses),
        verifier_version="1",
    )
    findings = [
        Finding.objects.create(
            verification=verification,
            start=n,
            end=n + 1,
            text=version.text[n : n + 1],
            kind=Finding.Kind.DATE,
            status=status,
            check_name="date.in_packet",
            message=f"A {status} finding",
            page=page if status == Finding.Status.SUPPORTED else None,
            excerpt="on 3 March 2024" if status == Finding.Status.SUPPORTED else "",
            verifier_version="1",
        )
        for n, status in enumerate(statuses)
    ]
    return verification, findings
