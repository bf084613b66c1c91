"""Issue 24 requirement 7: an install made by an earlier main upgrades. A backup written by the
code of commit 148e147 (main on the morning of 2026-12-05; tests/upgrade/make_fixture.py made
it: a case, two documents read, a production stamped ACME, a frozen packet, a pasted motion
verified with 8 supported claims) is restored into an empty install, migrated to this code,
and its documents, packet and draft still open and verify: every original by its SHA-256, the
packet by its content hash, the draft's claims found supported again by today's verifier."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.operations.test_backup import second_database

BASE_DIR = Path(settings.BASE_DIR)
FIXTURE = Path(__file__).parent / "backup-148e147"
__all__ = ["second_database"]  # a fixture

pytestmark = pytest.mark.django_db

# Run in the upgraded install (manage.py shell -c): one JSON line of what it found.
CHECK = """
import hashlib
import json
from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import selectors as document_selectors, storage
from apps.documents.models import Document, Production
from apps.drafting import selectors as draft_selectors
from apps.evidence.models import Packet
from apps.evidence.services import packets as packet_services
from apps.verification import services as verification_services
from apps.verification.models import Verification
lawyer = User.objects.get(email="upgrade.lawyer@firm.test")
case = Case.objects.get(number="UPG-2026-001")
documents = []
for document in Document.objects.filter(case=case).order_by("pk"):
    opened = document_selectors.document_get_for_user(
        user=lawyer, case_id=case.pk, document_id=document.pk
    )
    with storage.blob_open(opened.blob.sha256) as handle:
        data = handle.read()
    documents.append({
        "status": opened.status,
        "sha_ok": hashlib.sha256(data).hexdigest() == opened.blob.sha256,
        "text": " ".join(page.text for page in opened.pages.order_by("number")),
    })
packet = Packet.objects.get(case=case)
pages = list(packet.frozen_pages.order_by("position"))
draft = case.drafts.get()
version = draft.versions.get(number=1)
before = Verification.objects.filter(version=version).order_by("pk").first()
again = verification_services.verification_request(
    user=lawyer, case_id=case.pk, draft_id=draft.pk, number=1
)
verification_services.verification_run(verification_id=again.pk)
again.refresh_from_db()
print(json.dumps({
    "documents": documents,
    "production": Production.objects.get(case=case).status,
    "packet_hash_ok": packet_services.content_hash(pages) == packet.content_hash,
    "packet_pages": [page.bates for page in pages],
    "draft_text": version.text,
    "before": [before.status, sorted(before.findings.values_list("status", flat=True))],
    "again": [again.status, sorted(again.findings.values_list("status", flat=True))],
}))
"""


def _manage(*args: str, database_url: str, store: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "LEXWEB_BLOB_ROOT": str(store),
        "LEXWEB_LOG_LEVEL": "WARNING",
    }
    return subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), *args],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_an_install_of_an_earlier_main_migrates_and_its_matter_opens_and_verifies(
    second_database: str, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    manifest = json.loads((FIXTURE / "manifest.json").read_text())
    assert ["drafting", "0007_stage_last_progress_at"] not in manifest["migrations"]

    restored = _manage("restore", str(FIXTURE), database_url=second_database, store=store)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    migrated = _manage("migrate", "--noinput", database_url=second_database, store=store)
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    assert "Applying drafting.0007_stage_last_progress_at... OK" in migrated.stdout
    checked = _manage("shell", "-c", CHECK, database_url=second_database, store=store)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    found: dict[str, Any] = json.loads(checked.stdout.strip().splitlines()[-1])

    documents = found["documents"]
    assert [d["status"] for d in documents] == ["ready"] * 3  # two originals and the volume
    assert all(d["sha_ok"] for d in documents)
    assert "The monthly rent is $1,250.00" in documents[0]["text"]
    assert found["production"] == "ready"
    assert found["packet_hash_ok"] is True
    assert found["packet_pages"] == [["ACME000001"], ["ACME000002"], ["ACME000003"]]
    assert "(ACME000002)" in found["draft_text"]
    assert found["before"] == ["done", ["supported"] * 8]
    assert found["again"][0] == "done"
    assert found["again"][1] and set(found["again"][1]) == {"supported"}
