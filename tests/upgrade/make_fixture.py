"""Makes the upgrade test's backup: a small matter written by the code of one commit, kept as a
lexweb backup (`manage.py backup`) under tests/upgrade/<name>/ for tests/upgrade/test_upgrade.py.

Run it from a checkout of that commit, on an empty database and store of its own:

    git worktree add /tmp/old <commit>
    cd /tmp/old && DATABASE_URL=postgresql://.../lexweb_old LEXWEB_BLOB_ROOT=/tmp/old-store \\
        python -m lexweb.launcher manage migrate
    DATABASE_URL=... LEXWEB_BLOB_ROOT=/tmp/old-store python -m tests.upgrade.make_fixture OUT

It uses only services that every version since has kept (upload and read, stamp a production,
freeze a packet, paste a draft, verify it), so the matter is what that version made of them.
"""

import io
import os
import subprocess
import sys
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django.setup()

import pymupdf  # noqa: E402
from django.db import connection  # noqa: E402

from apps.accounts.models import User  # noqa: E402
from apps.cases.models import Case, Membership  # noqa: E402
from apps.documents import production_services  # noqa: E402
from apps.documents import services as document_services  # noqa: E402
from apps.drafting.services import drafts as draft_services  # noqa: E402
from apps.evidence.services import packets  # noqa: E402
from apps.verification import services as verification_services  # noqa: E402

PAGES = {
    "lease.pdf": [
        "Lease agreement between Acme Ltd and Widget LLC, signed on 3 March 2024.",
        "The monthly rent is $1,250.00, due on the first day of each month.",
    ],
    "notice.pdf": [
        "Notice of default sent to Widget LLC on 10 June 2024 for the unpaid June rent.",
    ],
}
DRAFT = (
    "# Motion for summary judgment\n\n"
    "Acme Ltd and Widget LLC signed the lease on 3 March 2024 (ACME000001). The monthly rent "
    "is $1,250.00 (ACME000002). Acme sent a notice of default on 10 June 2024 (ACME000003).\n\n"
    'The lease says the rent is "due on the first day of each month" (ACME000002).\n'
)


def _pdf(lines: list[str]) -> bytes:
    with pymupdf.open() as pdf:
        for line in lines:
            page = pdf.new_page()
            page.insert_text((72, 72), line, fontsize=11)
        return bytes(pdf.tobytes())


def main(out: Path) -> None:
    lawyer = User.objects.create_user(
        "upgrade.lawyer@firm.test", "Upgrade-lawyer-1", full_name="Uma Upgrade", role="lawyer"
    )
    case = Case.objects.create(
        title="Acme v. Widget", number="UPG-2026-001", client="Acme Ltd", created_by=lawyer
    )
    Membership.objects.create(case=case, user=lawyer, role="lawyer")
    ids = []
    for name, lines in PAGES.items():
        outcome = document_services.document_upload(
            case=case, uploaded_by=lawyer, filename=name, source=io.BytesIO(_pdf(lines)),
            origin="client",
        )  # fmt: skip
        assert outcome.document is not None, outcome
        document_services.document_extract_text(document_id=outcome.document.pk)
        ids.append(outcome.document.pk)
    production = production_services.production_create(
        case=case, actor=lawyer, volume="ACME001", prefix="ACME", document_ids=ids
    )
    production_services.production_stamp(production_id=production.pk)
    packet = packets.packet_create(user=lawyer, case_id=case.pk, title="Lease record")
    packets.packet_items_add(
        user=lawyer,
        case_id=case.pk,
        packet_id=packet.pk,
        selections=[packets.Selection(document_id=pk, reason="The lease") for pk in ids],
    )
    packet = packets.packet_freeze(user=lawyer, case_id=case.pk, packet_id=packet.pk)
    draft = draft_services.draft_create(
        user=lawyer, case_id=case.pk, title="Motion", kind="motion", packet_id=packet.pk,
        content=draft_services.pasted_content(text=DRAFT),
    )  # fmt: skip
    verification = verification_services.verification_request(
        user=lawyer, case_id=case.pk, draft_id=draft.pk, number=1
    )
    verification_services.verification_run(verification_id=verification.pk)
    # Their jobs ran here, in this process: close them as a worker would have.
    with connection.cursor() as cursor:
        for status in ("doing", "succeeded"):
            cursor.execute(
                "UPDATE procrastinate_jobs SET status = %s WHERE status = ANY(%s)",
                [status, ["todo"] if status == "doing" else ["doing"]],
            )
    subprocess.run(
        [sys.executable, "manage.py", "backup", str(out)], check=True, cwd=Path(__file__).parents[2]
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
