"""Adding to a packet and freezing re-check each document against the registry as it is then
(issue 20 req 5): a document that was clear at intake and matches what lexweb generated since
(a draft streamed, cancelled or stored after the upload) is refused with a clear message, gets
a late flag (shown on the document page and in the API) and an audit row. Real PostgreSQL."""

import pytest
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents.models import Document
from apps.evidence.models import ArtifactMatch, GeneratedArtifact, Packet
from apps.evidence.services import packets as services
from apps.evidence.services import registry
from apps.evidence.services.packets import ProvenanceRefused
from tests.drafting.test_stream_registry import prose
from tests.evidence.conftest import make_document, selection

pytestmark = pytest.mark.django_db


def generated_later(case: Case, text: str) -> GeneratedArtifact:
    return registry.artifact_register(
        data=text.encode(), text=text, kind="model_output", media_type="text/markdown",
        title="Run 9, drafter (streaming)", case=case,
    )  # fmt: skip


def test_a_document_generated_after_its_intake_is_refused_when_added_flagged_late_and_audited(
    lawyer: User, lawyer_client: Client, lawyer_api: Client, case: Case, packet: Packet
) -> None:
    text = prose(11, 200)
    notes = make_document(case, lawyer, pages=[text], filename="client-notes.pdf")
    honest = make_document(case, lawyer, pages=[prose(12, 200)], filename="lease.pdf")
    assert notes.provenance == Document.Provenance.CLEAR  # as intake found it
    artifact = generated_later(case, text)

    with pytest.raises(ProvenanceRefused) as refused:
        services.packet_items_add(
            user=lawyer, case_id=case.pk, packet_id=packet.pk,
            selections=[selection(notes), selection(honest)],
        )  # fmt: skip

    assert "client-notes.pdf" in str(refused.value)
    assert "Run 9, drafter (streaming)" in refused.value.reason
    assert "found when it was added to a packet" in refused.value.reason
    assert not packet.items.exists()
    notes.refresh_from_db()
    honest.refresh_from_db()
    assert notes.provenance == Document.Provenance.FLAGGED
    assert honest.provenance == Document.Provenance.CLEAR
    match = ArtifactMatch.objects.get(document=notes)
    assert (match.artifact, match.found) == (artifact, ArtifactMatch.Found.PACKET_ADD)
    flagged = AuditEvent.objects.get(action="document.flagged", target_id=str(notes.pk))
    assert flagged.detail["late"] is True and flagged.detail["found"] == "packet_add"
    # Shown where the intake flag is shown: the document page and the API.
    page = lawyer_client.get(f"/cases/{case.pk}/documents/{notes.pk}/").content.decode()
    assert "Found late, when it was added to a packet." in page
    api = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents/{notes.pk}").json()
    assert api["provenance"] == "flagged"
    assert api["matches"][0]["found"] == "packet_add"
    # The honest document alone is added.
    services.packet_items_add(
        user=lawyer, case_id=case.pk, packet_id=packet.pk, selections=[selection(honest)]
    )


def test_freezing_re_checks_every_item_against_the_registry_as_it_is_then(
    lawyer: User, case: Case, packet: Packet
) -> None:
    text = prose(13, 200)
    notes = make_document(case, lawyer, pages=[text], filename="client-notes.pdf")
    services.packet_items_add(
        user=lawyer, case_id=case.pk, packet_id=packet.pk, selections=[selection(notes)]
    )
    generated_later(case, text)

    with pytest.raises(ProvenanceRefused) as refused:
        services.packet_freeze(user=lawyer, case_id=case.pk, packet_id=packet.pk)

    assert "The packet was not frozen" in str(refused.value)
    assert "found when its packet was frozen" in refused.value.reason
    packet.refresh_from_db()
    assert packet.status == Packet.Status.EDITABLE
    assert ArtifactMatch.objects.get(document=notes).found == ArtifactMatch.Found.FREEZE
    assert AuditEvent.objects.filter(action="document.flagged", target_id=str(notes.pk)).exists()


def test_a_clear_document_that_matches_nothing_new_is_added_and_frozen_as_before(
    lawyer: User, case: Case, packet: Packet
) -> None:
    generated_later(case, prose(14, 200))
    lease = make_document(case, lawyer, pages=[prose(15, 200)], filename="lease.pdf")
    services.packet_items_add(
        user=lawyer, case_id=case.pk, packet_id=packet.pk, selections=[selection(lease)]
    )
    services.packet_freeze(user=lawyer, case_id=case.pk, packet_id=packet.pk)
    lease.refresh_from_db()
    assert lease.provenance == Document.Provenance.CLEAR
    assert not ArtifactMatch.objects.exists()
