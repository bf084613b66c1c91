"""Registry checks of uploads (apps.evidence.services.checks) on real PostgreSQL: a byte match
flags at once; a text match at or above the threshold flags with the share; re-runs change
nothing; a document without text never raises.

The documents here are rows made directly (as ingest would leave them), so each check is
exercised on its own; the end-to-end path through upload and ingest is tests/evidence/
test_adversarial.py's."""

import hashlib
import os
import subprocess
import sys

import pytest
from django.conf import settings
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents.models import Blob, Document, Page
from apps.evidence.models import ArtifactMatch, GeneratedArtifact
from apps.evidence.services import checks, registry
from tests.evidence.test_fingerprint import draft_text
from tests.evidence.test_registry import random_words

pytestmark = pytest.mark.django_db


def artifact(text: str, title: str = "Case summary (drafter)") -> GeneratedArtifact:
    return registry.artifact_register(
        data=text.encode(),
        text=text,
        kind="model_output",
        media_type="text/markdown",
        title=title,
        case=None,
    )


def document(case: Case, user: User, *, data: bytes, pages: list[str]) -> Document:
    blob = Blob.objects.create(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    doc = Document.objects.create(
        case=case,
        blob=blob,
        filename="upload.pdf",
        kind="pdf",
        content_type="application/pdf",
        origin="client",
        status="processing",
        page_count=len(pages),
        pages_done=len(pages),
        uploaded_by=user,
    )
    Page.objects.bulk_create(
        Page(document=doc, number=n, text=text, source="text_layer")
        for n, text in enumerate(pages, start=1)
    )
    return doc


def test_byte_match_flags_at_once_with_share_one_and_audits(case: Case, lawyer: User) -> None:
    text = draft_text(0)
    art = artifact(text)
    doc = document(case, lawyer, data=text.encode(), pages=[])

    match = checks.document_check_bytes(doc)

    assert match is not None
    assert (match.artifact, match.by, match.share) == (art, "bytes", 1.0)
    doc.refresh_from_db()
    assert doc.provenance == Document.Provenance.FLAGGED
    event = AuditEvent.objects.get(action="document.flagged")
    assert event.actor is None and event.actor_label == checks.ACTOR_LABEL
    assert event.case_id == case.pk and event.target_id == str(doc.pk)
    assert event.detail == {
        "artifact_id": art.pk,
        "by": "bytes",
        "share": "1.000",
        "uploaded_by": lawyer.pk,
    }


def test_bytes_of_nothing_registered_leave_the_document_pending(case: Case, lawyer: User) -> None:
    artifact(draft_text(0))
    doc = document(case, lawyer, data=b"%PDF-1.7 a client's own file", pages=[])

    assert checks.document_check_bytes(doc) is None
    doc.refresh_from_db()
    assert doc.provenance == Document.Provenance.PENDING
    assert not ArtifactMatch.objects.exists()


def test_text_match_flags_with_the_artifact_and_share(case: Case, lawyer: User) -> None:
    text = draft_text(1)
    art = artifact(text)
    words = text.split()
    middle = len(words) // 2
    pages = [
        "CONFIDENTIAL  ACME000101\n" + " ".join(words[:middle]),
        "Page 2 of 2  ACME000102\n" + " ".join(words[middle:]),
    ]
    doc = document(case, lawyer, data=b"a PDF with other bytes", pages=pages)

    matches = checks.document_check_text(doc)

    assert [(m.artifact, m.by) for m in matches] == [(art, "text")]
    assert matches[0].share > 0.9 and matches[0].document_share is not None
    doc.refresh_from_db()
    assert doc.provenance == Document.Provenance.FLAGGED
    assert AuditEvent.objects.filter(action="document.flagged").count() == 1


def test_text_check_twice_records_and_audits_each_match_once(case: Case, lawyer: User) -> None:
    artifact(draft_text(1))
    doc = document(case, lawyer, data=b"other bytes", pages=[draft_text(1)])

    first = checks.document_check_text(doc)
    second = checks.document_check_text(doc)

    assert [m.pk for m in first] == [m.pk for m in second]
    assert ArtifactMatch.objects.count() == 1
    assert AuditEvent.objects.filter(action="document.flagged").count() == 1


def test_unrelated_text_is_clear(case: Case, lawyer: User) -> None:
    artifact(draft_text(0))
    doc = document(case, lawyer, data=b"x", pages=["The parties met on Tuesday. " * 50])

    assert checks.document_check_text(doc) == []
    doc.refresh_from_db()
    assert doc.provenance == Document.Provenance.CLEAR
    assert not AuditEvent.objects.filter(action="document.flagged").exists()


def test_a_byte_flagged_document_stays_flagged_after_its_text_check(
    case: Case, lawyer: User
) -> None:
    text = draft_text(0)
    artifact(text)
    # Bytes of the artifact, but (say) an image whose OCR found no words.
    doc = document(case, lawyer, data=text.encode(), pages=[""])
    checks.document_check_bytes(doc)

    assert checks.document_check_text(doc) == []
    doc.refresh_from_db()
    assert doc.provenance == Document.Provenance.FLAGGED


def test_a_document_without_pages_or_text_is_clear_and_nothing_raises(
    case: Case, lawyer: User
) -> None:
    artifact(draft_text(0))
    empty = document(case, lawyer, data=b"no pages", pages=[])
    blank = document(case, lawyer, data=b"blank pages", pages=["", "  \n ", "\x01\x02 \u200b"])

    assert checks.document_check_text(empty) == []
    assert checks.document_check_text(blank) == []
    assert Document.objects.filter(provenance=Document.Provenance.CLEAR).count() == 2


@pytest.mark.parametrize("value", ["abc", "0", "1.5", "-0.2", "nan"])
def test_a_bad_threshold_setting_stops_lexweb_with_a_clear_message(value: str) -> None:
    env = {**os.environ, "LEXWEB_ARTIFACT_MATCH_THRESHOLD": value}
    result = subprocess.run(
        [sys.executable, "-c", "import lexweb.settings"],
        env=env, capture_output=True, text=True, cwd=settings.BASE_DIR, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "LEXWEB_ARTIFACT_MATCH_THRESHOLD is a share above 0 and at most 1" in result.stderr


def test_the_threshold_setting_is_read(settings: SettingsWrapper, case: Case, lawyer: User) -> None:
    text = draft_text(1)
    artifact(text)
    words = text.split()
    # Two thirds of the draft inside a longer document: a share of about 0.6.
    upload = " ".join(words[: len(words) * 2 // 3]) + "\n\n" + random_words(5, 1500)
    settings.LEXWEB_ARTIFACT_MATCH_THRESHOLD = 0.9
    doc = document(case, lawyer, data=b"u", pages=[upload])
    assert checks.document_check_text(doc) == []
    settings.LEXWEB_ARTIFACT_MATCH_THRESHOLD = 0.4
    assert len(checks.document_check_text(doc)) == 1
