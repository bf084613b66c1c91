"""A draft's words that are also in the evidence it was drafted from are the evidence's words
(issue 20 req 8): the hashes of an artifact's text found in its frozen packet's non-generated
evidence count in neither side of a match share. So a genuine evidence document that a draft
copied at length (or a re-production of it) is not flagged by that draft, while the draft itself
and its own words still are, and the same words count again for an artifact drafted from
another packet. At registration and while streaming. Real PostgreSQL."""

import hashlib

import pytest

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents.models import Blob, Document, Page
from apps.evidence import fingerprint as fp
from apps.evidence.models import ArtifactFingerprint, FrozenPage, GeneratedArtifact, Packet
from apps.evidence.selectors import registry as registry_selectors
from apps.evidence.services import checks, registry, streaming
from apps.evidence.services import packets as packet_services
from tests.drafting.test_stream_registry import prose
from tests.evidence.conftest import make_document, selection

pytestmark = pytest.mark.django_db

# The evidence: a client's letter of three pages.
EVIDENCE_PAGES = [prose(801, 220), prose(802, 220), prose(803, 220)]
# The draft's own argument, around the copied evidence.
OWN = [prose(811, 90), prose(812, 90), prose(813, 90)]


def draft_copying_the_evidence() -> str:
    """A draft that copies most of the evidence without quotation marks (as the demo draft did),
    between paragraphs of its own."""
    return "\n\n".join(
        [OWN[0], EVIDENCE_PAGES[0], OWN[1], EVIDENCE_PAGES[1], OWN[2], EVIDENCE_PAGES[2][:900]]
    )


def frozen_packet(case: Case, lawyer: User, pages: list[str], title: str) -> Packet:
    document = make_document(case, lawyer, pages=pages, filename=f"{title}.pdf")
    packet = packet_services.packet_create(user=lawyer, case_id=case.pk, title=title)
    packet_services.packet_items_add(
        user=lawyer, case_id=case.pk, packet_id=packet.pk, selections=[selection(document)]
    )
    return packet_services.packet_freeze(user=lawyer, case_id=case.pk, packet_id=packet.pk)


def register(text: str, case: Case, packet: Packet | None) -> GeneratedArtifact:
    return registry.artifact_register(
        data=text.encode(), text=text, kind="model_output", media_type="text/markdown",
        title="Motion draft v1 (run 3, drafter)", case=case, packet=packet,
    )  # fmt: skip


def upload(case: Case, user: User, pages: list[str], name: str) -> Document:
    """`pages` as a client's upload, checked as intake does (bytes, then text)."""
    data = "\f".join(pages).encode()
    blob = Blob.objects.create(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    document = Document.objects.create(
        case=case, blob=blob, filename=name, kind="pdf", content_type="application/pdf",
        origin="opposing", status="processing", page_count=len(pages), pages_done=len(pages),
        uploaded_by=user,
    )  # fmt: skip
    Page.objects.bulk_create(
        Page(document=document, number=n, text=text, source="text_layer")
        for n, text in enumerate(pages, 1)
    )
    checks.document_check_bytes(document)
    checks.document_check_text(document)
    document.refresh_from_db()
    return document


def test_without_a_packet_the_copied_evidence_would_be_flagged(lawyer: User, case: Case) -> None:
    # The control: this is the false refusal the rule removes.
    register(draft_copying_the_evidence(), case, packet=None)

    reproduced = upload(case, lawyer, EVIDENCE_PAGES, "OPP-production-0001.pdf")

    assert reproduced.provenance == Document.Provenance.FLAGGED


def test_evidence_a_draft_copied_at_length_is_not_flagged_by_that_draft(
    lawyer: User, case: Case
) -> None:
    packet = frozen_packet(case, lawyer, EVIDENCE_PAGES, "Client letter")
    artifact = register(draft_copying_the_evidence(), case, packet)

    # The other side's re-production of the same letter, with a Bates stamp on each page.
    stamped = [f"{page}\nOPP{n:06d}" for n, page in enumerate(EVIDENCE_PAGES, 1)]
    reproduced = upload(case, lawyer, stamped, "OPP-production-0001.pdf")
    # And a scan of the client's own letter (a few words lost to OCR).
    scan = [page.replace("rent", "ren t") for page in EVIDENCE_PAGES]
    scanned = upload(case, lawyer, scan, "letter-scan.pdf")

    assert reproduced.provenance == Document.Provenance.CLEAR
    assert scanned.provenance == Document.Provenance.CLEAR
    assert not reproduced.artifact_matches.exists()
    # The words left out are counted, and the count is in the registration's audit row.
    artifact.refresh_from_db()
    assert artifact.packet == packet
    assert artifact.evidence_fingerprint_count > artifact.fingerprint_count > 0
    event = AuditEvent.objects.get(action="artifact.registered", target_id=str(artifact.pk))
    assert event.detail["packet"] == packet.pk
    assert event.detail["evidence_fingerprints"] == artifact.evidence_fingerprint_count


def test_the_left_out_hashes_count_in_neither_side_of_the_share(lawyer: User, case: Case) -> None:
    packet = frozen_packet(case, lawyer, EVIDENCE_PAGES, "Client letter")
    text = draft_copying_the_evidence()
    artifact = register(text, case, packet)

    hashes = fp.fingerprint(text)
    evidence = fp.evidence_shingles(["\n\n".join(EVIDENCE_PAGES)])
    stored = set(
        ArtifactFingerprint.objects.filter(artifact=artifact).values_list("hash", flat=True)
    )
    assert stored == hashes - evidence
    assert artifact.fingerprint_count == len(stored)
    assert artifact.evidence_fingerprint_count == len(hashes & evidence)
    # The draft's own words alone hold nearly all of what counts (all but the shingles that
    # straddle its own words and the evidence); the evidence alone holds none of it.
    (match,) = registry_selectors.artifact_matches_for_text(text="\n\n".join(OWN))
    assert match.artifact == artifact and match.share > 0.9
    common = stored & fp.fingerprint("\n\n".join(EVIDENCE_PAGES))
    assert not common


def test_the_draft_itself_and_a_copy_of_its_own_words_are_still_flagged(
    lawyer: User, case: Case
) -> None:
    packet = frozen_packet(case, lawyer, EVIDENCE_PAGES, "Client letter")
    artifact = register(draft_copying_the_evidence(), case, packet)

    whole = upload(case, lawyer, [draft_copying_the_evidence()], "draft-as-client.pdf")
    own_only = upload(case, lawyer, ["\n\n".join(OWN)], "notes.pdf")
    # Two of its three paragraphs of argument, with the evidence they were written around.
    most = upload(case, lawyer, [OWN[0], EVIDENCE_PAGES[0], OWN[1]], "excerpt.pdf")

    for document in (whole, own_only, most):
        assert document.provenance == Document.Provenance.FLAGGED, document.filename
        assert document.artifact_matches.filter(by="text").get().artifact == artifact
    assert whole.artifact_matches.filter(by="text").get().share == 1.0


def test_the_same_words_count_for_an_artifact_drafted_from_another_packet(
    lawyer: User, case: Case
) -> None:
    # Packet B holds other evidence: the letter's words are the draft's own for an artifact
    # drafted from it (even with the same text; a copy would share A's postings otherwise).
    frozen_a = frozen_packet(case, lawyer, EVIDENCE_PAGES, "Client letter")
    frozen_b = frozen_packet(case, lawyer, [prose(830, 300)], "Lease")
    text = draft_copying_the_evidence()
    from_a = register(text, case, frozen_a)
    from_b = register(text + "\n", case, frozen_b)

    assert from_b.postings_of is None and from_b.text_key != from_a.text_key
    assert from_b.evidence_fingerprint_count == 0
    assert from_b.fingerprint_count == len(fp.fingerprint(text))
    reproduced = upload(case, lawyer, EVIDENCE_PAGES, "OPP-production-0001.pdf")
    assert reproduced.provenance == Document.Provenance.FLAGGED
    assert {m.artifact for m in reproduced.artifact_matches.all()} == {from_b}


def test_a_copy_of_an_artifact_from_the_same_packet_shares_its_postings(
    lawyer: User, case: Case
) -> None:
    packet = frozen_packet(case, lawyer, EVIDENCE_PAGES, "Client letter")
    text = draft_copying_the_evidence()
    first = register(text, case, packet)
    export = register(text + "\n", case, packet)  # other bytes, same words

    assert export.postings_of == first
    assert not ArtifactFingerprint.objects.filter(artifact=export).exists()
    assert export.fingerprint_count == first.fingerprint_count


def test_generated_pages_and_unfrozen_packets_give_no_evidence(lawyer: User, case: Case) -> None:
    editable = packet_services.packet_create(user=lawyer, case_id=case.pk, title="Draft packet")
    assert registry_selectors.packet_evidence_hashes(packet_id=editable.pk) == frozenset()
    assert registry_selectors.packet_evidence_hashes(packet_id=None) == frozenset()
    assert registry_selectors.packet_evidence_hashes(packet_id=10**12) == frozenset()
    # A page frozen as system generated (packets refuse them; here written directly) is never
    # evidence.
    packet = frozen_packet(case, lawyer, EVIDENCE_PAGES, "Client letter")
    page = packet.frozen_pages.get(page_number=1)
    generated = Packet.objects.create(
        case=case, title="Broken", status=Packet.Status.FROZEN, content_hash="1" * 64,
        created_by=lawyer,
    )  # fmt: skip
    item = packet.items.get()
    FrozenPage.objects.bulk_create(
        [
            FrozenPage(
                packet=generated, item=item, position=1, document=page.document, page_number=1,
                text=page.text, text_sha256=page.text_sha256, source=page.source,
                origin=Document.Origin.SYSTEM_GENERATED,
            ),
        ]
    )  # fmt: skip
    assert registry_selectors.packet_evidence_hashes(packet_id=generated.pk) == frozenset()
    assert registry_selectors.packet_evidence_hashes(packet_id=packet.pk) == frozenset(
        fp.evidence_shingles(["\n\n".join(EVIDENCE_PAGES)])
    )


def test_an_artifact_that_is_all_evidence_matches_by_bytes_only(lawyer: User, case: Case) -> None:
    packet = frozen_packet(case, lawyer, EVIDENCE_PAGES, "Client letter")
    artifact = register("\n\n".join(EVIDENCE_PAGES), case, packet)

    assert artifact.fingerprint_count == 0 and artifact.text_key == ""
    assert upload(case, lawyer, EVIDENCE_PAGES, "letter.pdf").provenance == "clear"


# --- While it streams --------------------------------------------------------------------------


def test_a_streaming_stage_never_posts_its_packets_words_from_the_first_batch(
    lawyer: User, case: Case
) -> None:
    packet = frozen_packet(case, lawyer, EVIDENCE_PAGES, "Client letter")
    artifact_id = streaming.stream_artifact_open(
        stage_id=4, attempt=1, case_id=case.pk, title="Run 4, drafter (streaming)",
        source="run 4", packet_id=packet.pk,
    )  # fmt: skip
    evidence = streaming.stream_evidence(packet_id=packet.pk)
    postings = streaming.StreamPostings(artifact_id, evidence)
    text = draft_copying_the_evidence()
    evidence_words = fp.evidence_shingles(["\n\n".join(EVIDENCE_PAGES)])
    for start in range(0, len(text), 97):
        fresh = postings.grow(text[start : start + 97])
        assert not set(fresh) & evidence_words
        ArtifactFingerprint.objects.bulk_create(
            ArtifactFingerprint(artifact_id=artifact_id, hash=h) for h in fresh
        )
        GeneratedArtifact.objects.filter(pk=artifact_id).update(
            fingerprint_count=len(postings.posted)
        )
        # Mid-stream: the letter is clear, the draft's own words so far are flagged.
        if start == 97 * 30:
            assert upload(case, lawyer, EVIDENCE_PAGES, "letter.pdf").provenance == "clear"
    streaming.stream_artifact_close(artifact_id=artifact_id, text=text)

    artifact = GeneratedArtifact.objects.get(pk=artifact_id)
    assert artifact.packet == packet
    stored = set(
        ArtifactFingerprint.objects.filter(artifact=artifact).values_list("hash", flat=True)
    )
    assert stored == fp.fingerprint(text) - evidence_words
    assert artifact.evidence_fingerprint_count == len(fp.fingerprint(text) & evidence_words)
    assert upload(case, lawyer, ["\n\n".join(OWN)], "notes.pdf").provenance == "flagged"
    # The version stored after is a copy of the streamed artifact (same packet, same words).
    version = register(text, case, packet)
    assert version.postings_of == artifact
