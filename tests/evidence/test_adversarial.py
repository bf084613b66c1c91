"""Issue 10's adversarial suite, end to end: nothing lexweb generated reaches a packet, however
it comes back in, and real client documents that share words with drafts still do.

Everything goes through the real services: drafts become documents through
`documents.services.document_create_generated` (registered in the registry on the way), uploads
through `documents.services.document_upload`, pages are read by the real ingest job (a real
Procrastinate worker in this process; real Tesseract for the printed pages), productions are
stamped by the real job, and packets are built with `evidence.services.packets`. The attacks
are made by tests/evidence/attacks.py from the eval drafts of ../shared/eval/verifier (read in
place; the suite skips when ../shared is absent, and fails then under CI=true).
"""

import hashlib
import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents import extraction, production_services
from apps.documents import services as document_services
from apps.documents.models import Derivation, Document, Production
from apps.documents.production_door_services import Inclusion
from apps.evidence.models import ArtifactMatch, GeneratedArtifact, Packet
from apps.evidence.selectors import registry as registry_selectors
from apps.evidence.services import packets as packet_services
from apps.evidence.services import registry
from apps.evidence.services.packets import ProvenanceRefused, Selection
from tests.evidence import attacks

pytestmark = pytest.mark.django_db(databases="__all__")

RunJobs = Callable[[], None]


@pytest.fixture(autouse=True)
def _shared_set() -> None:
    if not attacks.shared_available():
        if attacks.must_have_shared():
            pytest.fail(attacks.shared_missing_reason() + "; it is required under CI=true")
        pytest.skip(attacks.shared_missing_reason())


@pytest.fixture(autouse=True)
def _blob_root(settings: Any, tmp_path: Path) -> None:
    settings.LEXWEB_BLOB_ROOT = tmp_path / "blobs"


@pytest.fixture
def packet(lawyer: User, case: Case) -> Packet:
    return packet_services.packet_create(
        user=lawyer, case_id=case.pk, title="Summary judgment evidence", purpose="MSJ"
    )


def _draft(name: str) -> attacks.EvalDraft:
    return next(d for d in attacks.eval_drafts() if d.name == name)


# Without ../shared, one placeholder: the test then skips (or, under CI=true, fails) through
# `_shared_set` instead of vanishing as an empty parameter set.
DRAFT_NAMES = (
    [d.name for d in attacks.eval_drafts()] if attacks.shared_available() else ["no-shared"]
)
# Two pages when exported: the OCR'd attacks use it (few pages, as OCR takes time).
SHORT_DRAFT = "declaration-strand.md"


def _generate(case: Case, user: User, draft: attacks.EvalDraft) -> Document:
    """The draft as lexweb stores a model's output: registered, system generated."""
    return document_services.document_create_generated(
        case=case,
        actor=user,
        filename=draft.name,
        data=draft.text.encode("utf-8"),
        text=draft.text,
        media_type="text/markdown",
        source="drafting run (adversarial suite)",
    )


def _artifact_of(data: bytes) -> GeneratedArtifact:
    artifact = registry_selectors.artifact_for_bytes(sha256=hashlib.sha256(data).hexdigest())
    assert artifact is not None
    return artifact


def _register_export(case: Case, user: User, draft: attacks.EvalDraft, pdf: bytes) -> None:
    """An export of the draft, registered the moment it is made (as the export service will)."""
    registry.artifact_register(
        data=pdf,
        text=attacks.plain_text(draft.text),
        kind=GeneratedArtifact.Kind.EXPORT,
        media_type="application/pdf",
        title=f"{draft.name} (PDF export)",
        case=case,
        exported_from=_artifact_of(draft.text.encode("utf-8")),
        created_by=user,
    )


def _upload(
    case: Case, user: User, name: str, data: bytes, origin: str = Document.Origin.CLIENT
) -> Document:
    outcome = document_services.document_upload(
        case=case, uploaded_by=user, filename=name, source=io.BytesIO(data), origin=origin
    )
    assert outcome.status == "created", outcome.error
    assert outcome.document is not None
    return outcome.document


def _add(user: User, case: Case, packet: Packet, *documents: Document) -> list[Any]:
    return packet_services.packet_items_add(
        user=user,
        case_id=case.pk,
        packet_id=packet.pk,
        selections=[
            Selection(document_id=d.pk, reason="Exhibit for the motion") for d in documents
        ],
    )


def _refused(user: User, case: Case, packet: Packet, document: Document) -> ProvenanceRefused:
    with pytest.raises(ProvenanceRefused) as info:
        _add(user, case, packet, document)
    document.refresh_from_db()
    refused = info.value
    assert f"(document {document.pk})" in refused.item
    assert AuditEvent.objects.filter(
        action="packet.item_refused", detail__item=refused.item
    ).exists()
    assert not packet.items.exists()
    return refused


def _flagged_by_text(document: Document, draft_text: str) -> ArtifactMatch:
    document.refresh_from_db()
    assert document.status == Document.Status.READY, document.error
    assert document.provenance == Document.Provenance.FLAGGED
    match = document.artifact_matches.filter(by=ArtifactMatch.By.TEXT).order_by("-share").first()
    assert match is not None
    assert match.artifact.sha256 in _shas_of(draft_text)
    return match


def _shas_of(draft_text: str) -> set[str]:
    """SHA-256s of the artifacts the draft's matches may name: the draft and its exports."""
    draft = GeneratedArtifact.objects.get(sha256=hashlib.sha256(draft_text.encode()).hexdigest())
    return {draft.sha256, *draft.exports.values_list("sha256", flat=True)}


# --- (a) a generated draft, added directly ---------------------------------------------------


@pytest.mark.parametrize("name", DRAFT_NAMES)
def test_a_a_generated_draft_added_directly_is_refused(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs, name: str
) -> None:
    generated = _generate(case, lawyer, _draft(name))
    run_jobs()

    generated.refresh_from_db()
    assert generated.origin == Document.Origin.SYSTEM_GENERATED
    assert generated.status == Document.Status.READY
    refused = _refused(lawyer, case, packet, generated)
    assert "system generated" in refused.reason


def test_a_a_page_range_of_a_generated_draft_is_refused_too(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs
) -> None:
    pdf = attacks.export_pdf(_draft(SHORT_DRAFT).text, title="Declaration")
    generated = document_services.document_create_generated(
        case=case,
        actor=lawyer,
        filename="declaration.pdf",
        data=pdf,
        text=attacks.plain_text(_draft(SHORT_DRAFT).text),
        media_type="application/pdf",
        source="drafting run (adversarial suite)",
    )
    run_jobs()

    with pytest.raises(ProvenanceRefused) as info:
        packet_services.packet_items_add(
            user=lawyer,
            case_id=case.pk,
            packet_id=packet.pk,
            selections=[
                Selection(document_id=generated.pk, first_page=2, last_page=2, reason="p. 2")
            ],
        )
    assert "p. 2" in info.value.item and "system generated" in info.value.reason


# --- (b) the exported PDF uploaded as the client's ---------------------------------------------


@pytest.mark.parametrize("name", DRAFT_NAMES)
def test_b_an_exported_draft_uploaded_as_client_is_flagged_by_its_bytes_at_once(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs, name: str
) -> None:
    draft = _draft(name)
    _generate(case, lawyer, draft)
    pdf = attacks.export_pdf(draft.text, title=name)
    _register_export(case, lawyer, draft, pdf)

    upload = _upload(case, lawyer, "client-declaration.pdf", pdf)

    # Flagged in the upload's own transaction, before any page is read.
    upload.refresh_from_db()
    assert upload.provenance == Document.Provenance.FLAGGED
    match = upload.artifact_matches.get(by=ArtifactMatch.By.BYTES)
    assert match.share == 1.0 and match.artifact.kind == GeneratedArtifact.Kind.EXPORT
    refused = _refused(lawyer, case, packet, upload)
    assert "its bytes are those of" in refused.reason and name in refused.reason
    run_jobs()
    upload.refresh_from_db()
    assert upload.provenance == Document.Provenance.FLAGGED  # the text check keeps the flag
    _refused(lawyer, case, packet, upload)


def test_b_an_export_lexweb_never_saw_is_still_caught_by_its_text(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs
) -> None:
    draft = _draft("case-summary.md")
    _generate(case, lawyer, draft)
    upload = _upload(case, lawyer, "summary.pdf", attacks.export_pdf(draft.text, title="x"))
    upload.refresh_from_db()
    assert upload.provenance == Document.Provenance.PENDING
    pending = _refused(lawyer, case, packet, upload)
    assert "still being read" in pending.reason or "not finished" in pending.reason

    run_jobs()

    assert _flagged_by_text(upload, draft.text).share > 0.95
    refused = _refused(lawyer, case, packet, upload)
    assert "its text matches" in refused.reason and "case-summary.md" in refused.reason


# --- (c) metadata and producer rewritten; set again ------------------------------------------


@pytest.mark.parametrize("name", DRAFT_NAMES)
@pytest.mark.slow
def test_c_an_export_with_its_metadata_rewritten_is_flagged_by_text(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs, name: str
) -> None:
    draft = _draft(name)
    _generate(case, lawyer, draft)
    pdf = attacks.export_pdf(draft.text, title=name)
    _register_export(case, lawyer, draft, pdf)
    rewritten = attacks.rewrite_pdf_metadata(pdf)
    assert rewritten != pdf
    with pymupdf.open(stream=rewritten, filetype="pdf") as document:
        assert "Microsoft" in document.metadata["producer"]

    rewritten_upload = _upload(case, lawyer, "final.pdf", rewritten)
    retypeset = _upload(case, lawyer, "a4.pdf", attacks.retypeset_pdf(draft.text))
    rewritten_upload.refresh_from_db()
    assert rewritten_upload.provenance == Document.Provenance.PENDING  # no byte match
    run_jobs()

    for document in (rewritten_upload, retypeset):
        assert _flagged_by_text(document, draft.text).share > 0.95
        assert not document.artifact_matches.filter(by=ArtifactMatch.By.BYTES).exists()
        assert "its text matches" in _refused(lawyer, case, packet, document).reason


# --- (d) pasted into a new PDF and into a text file --------------------------------------------


@pytest.mark.parametrize("name", DRAFT_NAMES)
@pytest.mark.slow
def test_d_the_text_pasted_into_a_new_pdf_and_a_txt_is_flagged(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs, name: str
) -> None:
    draft = _draft(name)
    _generate(case, lawyer, draft)
    plain = attacks.plain_text(draft.text)
    pasted_pdf = _upload(case, lawyer, "notes.pdf", attacks.paste_pdf(plain))
    pasted_txt = _upload(case, lawyer, "notes.txt", attacks.paste_txt(plain))
    run_jobs()

    for document in (pasted_pdf, pasted_txt):
        assert _flagged_by_text(document, draft.text).share > 0.95
        _refused(lawyer, case, packet, document)


# --- (e) a production that includes a generated document -------------------------------------


def _produce(
    case: Case,
    user: User,
    documents: list[Document],
    volume: str,
    include: tuple[Document, ...] = (),
) -> Production:
    """`include`: held back at the door out (issue 25 req 1), produced by the lawyer anyway."""
    return production_services.production_create(
        case=case,
        actor=user,
        volume=volume,
        prefix="ADY",
        document_ids=[d.pk for d in documents],
        digits=7,
        inclusions=[
            Inclusion(document_id=d.pk, reason="The court ordered every draft produced.")
            for d in include
        ],
    )


def test_e_a_production_volume_holding_a_generated_document_is_refused_by_lineage(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs
) -> None:
    sources = attacks.EVAL / "case-loan-fraud" / "sources"
    note = _upload(
        case, lawyer, "01-promissory-note.pdf", (sources / "01-promissory-note.pdf").read_bytes()
    )
    draft = _draft("declaration-adeyemi.md")
    generated = document_services.document_create_generated(
        case=case,
        actor=lawyer,
        filename="declaration.pdf",
        data=attacks.export_pdf(draft.text, title="Declaration"),
        text=attacks.plain_text(draft.text),
        media_type="application/pdf",
        source="drafting run (adversarial suite)",
    )
    run_jobs()
    production = _produce(case, lawyer, [note, generated], "VOL001", include=(generated,))
    run_jobs()

    production.refresh_from_db()
    assert production.status == Production.Status.READY
    volume = production.volume_document
    assert volume is not None
    assert volume.origin == Document.Origin.SYSTEM_GENERATED
    assert set(Derivation.objects.filter(child=volume).values_list("parent_id", "transform")) == {
        (note.pk, Derivation.BATES_STAMP),
        (generated.pk, Derivation.BATES_STAMP),
    }
    reason = _refused(lawyer, case, packet, volume).reason
    assert f"derived from “declaration.pdf” (document {generated.pk}), which lexweb generated" in (
        reason
    )
    assert Derivation.BATES_STAMP in reason
    # The client's own note, produced in the same volume, is still evidence.
    assert len(_add(lawyer, case, packet, note)) == 1


@pytest.mark.slow
def test_e_a_volume_holding_a_flagged_upload_is_flagged_and_no_volume_enters_a_packet(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs
) -> None:
    draft = _draft("case-summary.md")
    _generate(case, lawyer, draft)
    pasted = _upload(case, lawyer, "summary.txt", attacks.paste_txt(draft.text))
    sources = attacks.EVAL / "case-loan-fraud" / "sources"
    letter = _upload(
        case, lawyer, "07-demand-letter.pdf", (sources / "07-demand-letter.pdf").read_bytes()
    )
    run_jobs()
    pasted_pdf = _upload(case, lawyer, "summary.pdf", attacks.paste_pdf(draft.text))
    run_jobs()
    tainted = _produce(case, lawyer, [letter, pasted_pdf], "VOL001", include=(pasted_pdf,))
    clean = _produce(case, lawyer, [letter], "VOL002")
    run_jobs()

    _flagged_by_text(pasted, draft.text)
    tainted.refresh_from_db()
    clean.refresh_from_db()
    assert tainted.volume_document is not None and clean.volume_document is not None
    assert tainted.volume_document.provenance == Document.Provenance.FLAGGED
    assert clean.volume_document.provenance == Document.Provenance.CLEAR
    # A volume repeats its originals' pages: never in a packet, flagged or not (issue 25 req 1).
    for volume in (tainted.volume_document, clean.volume_document):
        assert "production volume" in _refused(lawyer, case, packet, volume).reason
    assert len(_add(lawyer, case, packet, letter)) == 1


# --- (f) printed to page images and OCR'd back ---------------------------------------------


@pytest.mark.slow
def test_f_a_draft_printed_to_png_tiff_and_image_only_pdfs_is_flagged_after_ocr(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs
) -> None:
    if extraction.tesseract_version() is None:
        pytest.fail("Tesseract is required for the OCR attacks: apt-get install tesseract-ocr")
    draft = _draft(SHORT_DRAFT)
    _generate(case, lawyer, draft)
    export = attacks.export_pdf(draft.text, title="Declaration")
    with pymupdf.open(stream=export, filetype="pdf") as document:
        assert document.page_count == 2
    png = _upload(case, lawyer, "page-1.png", attacks.page_pngs(export, dpi=300, pages=1)[0])
    tiff = _upload(case, lawyer, "scan.tiff", attacks.pages_tiff(export, dpi=200))
    scan = _upload(case, lawyer, "scan.pdf", attacks.image_only_pdf(export, dpi=200))
    bad_scan = _upload(case, lawyer, "bad-scan.pdf", attacks.degraded_scan_pdf(export, dpi=200))
    run_jobs()

    for document in (png, tiff, scan, bad_scan):
        pages = list(document.pages.order_by("number"))
        assert pages and all(p.source == "ocr" for p in pages)
        match = _flagged_by_text(document, draft.text)
        assert match.share > 0.6
        assert "its text matches" in _refused(lawyer, case, packet, document).reason


@pytest.mark.slow
def test_f_one_printed_page_of_a_longer_draft_uploaded_alone_is_flagged(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs
) -> None:
    draft = _draft(SHORT_DRAFT)
    _generate(case, lawyer, draft)
    export = attacks.export_pdf(draft.text, title="Declaration")
    last_page = attacks.page_pngs(export, dpi=300)[-1]
    page = _upload(case, lawyer, "page-2.png", last_page)
    run_jobs()

    page.refresh_from_db()
    assert page.status == Document.Status.READY
    assert "penalty of perjury" in page.pages.get().text
    match = _flagged_by_text(page, draft.text)
    # Little of the draft (under the share threshold), but nearly all of the page is its words.
    assert match.share < 0.42
    assert match.document_share is not None and match.document_share > 0.6
    assert "of its text is the words of" in _refused(lawyer, case, packet, page).reason


# --- (g) e-mailed, as the body and as an attachment -----------------------------------------


@pytest.mark.slow
def test_g_a_summary_emailed_as_the_body_and_as_an_attachment_is_refused_both_ways(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs
) -> None:
    draft = _draft("case-summary.md")
    _generate(case, lawyer, draft)
    plain = attacks.plain_text(draft.text)
    # Set again, so its bytes are not those of anything registered: only its text tells.
    retypeset = attacks.retypeset_pdf(draft.text)
    in_body = _upload(case, lawyer, "summary.eml", attacks.eml_with_body(plain))
    both = _upload(
        case,
        lawyer,
        "both.eml",
        attacks.eml_with_body(
            plain,
            subject="Summary, also attached",
            attachment=(plain.encode("utf-8"), "summary.txt", "text/plain"),
        ),
    )
    covering = _upload(
        case,
        lawyer,
        "attached.eml",
        attacks.eml_with_attachment(
            retypeset, filename="summary.pdf", media_type="application/pdf"
        ),
    )
    run_jobs()

    assert in_body.kind == both.kind == covering.kind == Document.Kind.EMAIL
    for message in (in_body, both):
        _flagged_by_text(message, draft.text)
        assert "its text matches" in _refused(lawyer, case, packet, message).reason
    for message, filename in ((both, "summary.txt"), (covering, "summary.pdf")):
        attachment = Document.objects.get(
            derived_from__parent=message, derived_from__transform=Derivation.EMAIL_ATTACHMENT
        )
        assert attachment.filename == filename
        _flagged_by_text(attachment, draft.text)
        assert "its text matches" in _refused(lawyer, case, packet, attachment).reason
    # The covering note itself is the sender's e-mail: none of the summary's words are in it
    # (the attachment is a document of its own, refused above), so it stays evidence.
    covering.refresh_from_db()
    assert covering.provenance == Document.Provenance.CLEAR
    assert "Lindqvist" not in covering.pages.get().text
    assert len(_add(lawyer, case, packet, covering)) == 1


# --- (h) paragraphs reordered, a third of the sentences reworded ------------------------------


@pytest.mark.parametrize("name", DRAFT_NAMES)
@pytest.mark.slow
def test_h_a_reordered_and_partly_reworded_draft_is_flagged(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs, name: str
) -> None:
    draft = _draft(name)
    _generate(case, lawyer, draft)
    reworded = attacks.reorder_and_reword(draft.text)
    assert reworded != draft.text
    assert 0.5 <= attacks.reworded_share(draft.text, reworded) <= 0.8
    as_txt = _upload(case, lawyer, "reworded.txt", reworded.encode("utf-8"))
    as_pdf = _upload(case, lawyer, "reworded.pdf", attacks.paste_pdf(reworded))
    run_jobs()

    for document in (as_txt, as_pdf):
        match = _flagged_by_text(document, draft.text)
        assert match.share < 0.9  # the rewording really changed the text
        assert "its text matches" in _refused(lawyer, case, packet, document).reason


# --- (i) "RTX 3060" in an upload is no reason to refuse it ---------------------------------


@pytest.mark.slow
def test_i_junk_bates_like_tokens_in_a_client_upload_are_not_a_reason_to_refuse_it(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs
) -> None:
    for draft in attacks.eval_drafts():
        _generate(case, lawyer, draft)
    assert any("RTX 3060" in d.text or "RTX3060" in d.text for d in attacks.eval_drafts())
    receipt = _upload(case, lawyer, "receipt.pdf", attacks.text_pdf(attacks.junk_receipt_text()))
    run_jobs()

    receipt.refresh_from_db()
    text = " ".join(p.text for p in receipt.pages.all())
    assert all(token in text for token in attacks.JUNK_TOKENS)
    assert receipt.provenance == Document.Provenance.CLEAR
    assert len(_add(lawyer, case, packet, receipt)) == 1


# --- The converse: real documents that share boilerplate with drafts ------------------------


def _file_text(path: Path) -> str:
    """The text the real ingest reads from a fixture (text layer, else OCR), to write the
    brief that quotes it before the fixture itself is uploaded."""
    if path.suffix == ".pdf":
        return "\n".join(page.text for page in extraction.pdf_pages(path))
    return path.read_text(encoding="utf-8", errors="replace")


def _all_ready(documents: list[Document]) -> Iterator[Document]:
    for document in documents:
        document.refresh_from_db()
        assert document.status == Document.Status.READY, (document.filename, document.error)
        yield document


@pytest.mark.slow
def test_converse_eval_sources_cover_letters_and_excerpts_are_clear_against_drafts_citing_them(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs
) -> None:
    for draft in attacks.eval_drafts():
        _generate(case, lawyer, draft)
    uploads = [
        _upload(case, lawyer, source.name, source.read_bytes()) for source in attacks.eval_sources()
    ]
    uploads += [
        _upload(
            case,
            lawyer,
            f"{folder.name}-cover-letter.pdf",
            attacks.text_pdf(attacks.production_cover_letter(folder)),
            origin=Document.Origin.WORK_PRODUCT,
        )
        for folder in attacks.eval_cases()
    ]
    # The very passages the drafts quote, excerpted: nearly all of each is inside the drafts'
    # quotation marks.
    uploads += [
        _upload(
            case,
            lawyer,
            f"{folder.name}-excerpt-{Path(name).stem}.pdf",
            attacks.text_pdf(excerpt),
            origin=Document.Origin.WORK_PRODUCT,
        )
        for folder in attacks.eval_cases()
        for name, excerpt in attacks.clause_excerpts(folder).items()
    ]
    run_jobs()

    documents = list(_all_ready(uploads))
    flagged = [d.filename for d in documents if d.provenance != Document.Provenance.CLEAR]
    assert flagged == []
    assert any(p.source == "ocr" for d in documents for p in d.pages.all())  # scans were read
    # All of them in one packet: nothing refused (the call is all or nothing).
    assert len(_add(lawyer, case, packet, *documents)) == len(documents)


@pytest.mark.slow
def test_converse_every_real_fixture_is_clear_against_a_brief_quoting_it(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs
) -> None:
    fixtures = attacks.real_fixtures()
    for fixture in fixtures:
        brief = attacks.quoting_draft(fixture.name, _file_text(fixture))
        assert attacks.quoted_passages(brief) or fixture.name.startswith("ca3_")
        document_services.document_create_generated(
            case=case,
            actor=lawyer,
            filename=f"brief-{fixture.stem}.md",
            data=brief.encode("utf-8"),
            text=brief,
            media_type="text/markdown",
            source="drafting run (adversarial suite)",
        )
    uploads = [
        _upload(case, lawyer, fixture.name, fixture.read_bytes(), origin=Document.Origin.COURT)
        for fixture in fixtures
    ]
    run_jobs()

    documents = list(_all_ready(uploads))
    flagged = [d.filename for d in documents if d.provenance != Document.Provenance.CLEAR]
    assert flagged == []
    assert len(_add(lawyer, case, packet, *documents)) == len(documents)


@pytest.mark.slow
def test_converse_a_production_of_the_client_documents_cited_by_a_draft_is_not_flagged(
    lawyer: User, case: Case, packet: Packet, run_jobs: RunJobs
) -> None:
    """The drafts cite these very Bates numbers (ADY0000001...): the volume is still clear,
    and its originals are evidence (the volume itself is an outgoing production, which no
    packet takes beside the pages it repeats)."""
    folder = attacks.EVAL / "case-loan-fraud"
    for draft in attacks.eval_drafts():
        if draft.case == folder.name:
            _generate(case, lawyer, draft)
    names = ["01-promissory-note.pdf", "05-emails.pdf", "07-demand-letter.pdf"]
    originals = [
        _upload(case, lawyer, name, (folder / "sources" / name).read_bytes()) for name in names
    ]
    run_jobs()
    production = _produce(case, lawyer, originals, "ADY001")
    run_jobs()

    production.refresh_from_db()
    volume = production.volume_document
    assert volume is not None
    assert volume.origin == Document.Origin.PRODUCTION
    assert volume.provenance == Document.Provenance.CLEAR
    assert production.bates(production.first_number) == "ADY0000001"
    assert "production volume" in _refused(lawyer, case, packet, volume).reason
    assert len(_add(lawyer, case, packet, *originals)) == len(originals)
