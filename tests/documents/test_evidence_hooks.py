"""The documents app reaches the generated-artifact registry and the packets through hooks the
evidence app registers when Django starts (apps/documents/evidence_hooks.py), since evidence sits
above it; with nothing registered it refuses rather than store an upload unchecked or show a
document without its flags."""

from collections.abc import Iterator

import pytest

from apps.documents import evidence_hooks, provenance_selectors, review_services, services
from apps.documents.models import Document
from apps.evidence.documents_hooks import DocumentsHooks


@pytest.fixture
def unregister() -> Iterator[None]:
    registered = evidence_hooks._registered
    try:
        yield
    finally:
        evidence_hooks._registered = registered


def _generated(case, lawyer, text: str = "A draft") -> Document:
    return services.document_create_generated(
        case=case,
        actor=lawyer,
        filename="draft.md",
        data=f"# {text}\n".encode(),
        text=text,
        media_type="text/markdown",
        source="test",
    )


def test_the_evidence_app_registers_its_hooks_when_django_starts() -> None:
    assert isinstance(evidence_hooks._registered, DocumentsHooks)


@pytest.mark.django_db
def test_with_nothing_registered_nothing_is_stored_shown_or_withdrawn(
    unregister: None, lawyer, case
) -> None:
    stored = _generated(case, lawyer)
    assert stored.provenance == Document.Provenance.FLAGGED  # the registry's byte check ran
    evidence_hooks._registered = None

    with pytest.raises(evidence_hooks.EvidenceHooksMissing):
        _generated(case, lawyer, "Another draft")
    assert list(Document.objects.all()) == [stored]
    with pytest.raises(evidence_hooks.EvidenceHooksMissing):
        provenance_selectors.documents_with_provenance(Document.objects.all(), user=lawyer)
    with pytest.raises(evidence_hooks.EvidenceHooksMissing):
        review_services.documents_withdraw(
            actor=lawyer, case=case, document_ids=[stored.pk], reason="uploaded to the wrong case"
        )
