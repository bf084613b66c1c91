"""The demo case's evidence (lexweb_dev.demo_evidence): real PDFs through the real intake, read
by a real worker, stamped as a Bates production and frozen as a packet, once."""

from typing import Any

import pymupdf
import pytest
from django.core.management import call_command
from django.db import connection
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import Backend, Host
from apps.documents.models import Document, Production
from apps.evidence.models import FrozenPage, Packet
from lexweb_dev import demo, demo_evidence
from tests.drafting.run_fixtures import ThreadWorker, eventually

pytestmark = pytest.mark.django_db(transaction=True)


def _demo_packet() -> Packet | None:
    return Packet.objects.filter(title=demo_evidence.DEMO_PACKET).first()


def _jobs(task: str, **args: object) -> list[ProcrastinateJob]:
    """The waiting jobs of `task` with these arguments (rows of earlier tests stay)."""
    return [
        job
        for job in ProcrastinateJob.objects.filter(task_name=task, status="todo")
        if args.items() <= job.args.items()
    ]


@pytest.mark.slow
def test_seed_demo_uploads_real_documents_and_a_worker_stamps_and_freezes_them(
    admin_user: User,
) -> None:
    call_command("seed_demo")

    case = Case.objects.get(number=demo.DEMO_NUMBER)
    documents = Document.objects.filter(case=case)
    assert sorted(documents.values_list("filename", flat=True)) == sorted(
        d.filename for d in demo_evidence.DOCUMENTS
    )
    # Uploaded by the demo lawyer through the intake: queued for the worker, nothing read yet.
    assert set(documents.values_list("uploaded_by__email", flat=True)) == {demo.DEMO_LAWYER}
    assert set(documents.values_list("status", flat=True)) == {Document.Status.QUEUED}
    for document in documents:
        assert len(_jobs("documents.extract_text", document_id=document.pk)) == 1
    assert len(_jobs(demo_evidence.CONTINUE_TASK, case_id=case.pk)) == 1

    with ThreadWorker():
        eventually(lambda: _demo_packet() is not None, timeout=90)
        eventually(lambda: Production.objects.filter(status=Production.Status.READY).exists(), 90)

    packet = _demo_packet()
    assert packet is not None and packet.case == case
    assert packet.status == Packet.Status.FROZEN and packet.page_count == 6
    pages = list(FrozenPage.objects.filter(packet=packet).order_by("position"))
    assert [p.bates for p in pages] == [[f"ACME{n:06d}"] for n in range(1, 7)]
    # The words of our own documents, read from the PDFs' text layers.
    assert "no later than 14 March 2025" in " ".join(pages[0].text.split())
    assert "$28,800.00" in pages[5].text
    untrusted = {p.document.filename for p in pages if p.untrusted}
    assert untrusted == {
        "widget-invoice-W-1187.pdf",
        "widget-email-2025-04-09.pdf",
        "springfield-bank-statement-april-2025.pdf",
    }
    production = Production.objects.get(case=case, volume=demo_evidence.DEMO_VOLUME)
    assert (production.prefix, production.first_number, production.last_number) == ("ACME", 1, 6)


@pytest.mark.slow
def test_seeding_twice_adds_nothing(admin_user: User) -> None:
    call_command("seed_demo")
    with ThreadWorker():
        eventually(lambda: _demo_packet() is not None, timeout=90)
    jobs = ProcrastinateJob.objects.count()

    call_command("seed_demo")
    with ThreadWorker():
        case = Case.objects.get(number=demo.DEMO_NUMBER)
        assert demo_evidence.demo_seed_continue(case_id=case.pk, attempt=1) == "nothing"

    assert Document.objects.filter(case=case).count() == 5 + 1  # and the stamped volume
    assert Packet.objects.filter(case=case).count() == 1
    assert Production.objects.filter(case=case).count() == 1
    assert ProcrastinateJob.objects.count() == jobs


def test_the_job_waits_for_the_ingest_by_queueing_itself_again_and_gives_up_in_the_end(
    admin_user: User,
) -> None:
    call_command("seed_demo")
    case = Case.objects.get(number=demo.DEMO_NUMBER)
    (first,) = _jobs(demo_evidence.CONTINUE_TASK, case_id=case.pk)
    assert first.args == {"case_id": case.pk, "attempt": 1} and first.scheduled_at is None
    # A second try while one waits queues nothing more.
    assert demo_evidence.demo_seed_continue(case_id=case.pk, attempt=1) == "waiting"
    assert _jobs(demo_evidence.CONTINUE_TASK, case_id=case.pk) == [first]
    # A worker runs the waiting one, which queues the next try a little later.
    with connection.cursor() as cursor:
        cursor.execute("UPDATE procrastinate_jobs SET status = 'doing' WHERE id = %s", [first.pk])
    assert demo_evidence.demo_seed_continue(case_id=case.pk, attempt=1) == "waiting"
    (again,) = _jobs(demo_evidence.CONTINUE_TASK, case_id=case.pk)
    assert again.args == {"case_id": case.pk, "attempt": 2}
    assert again.scheduled_at is not None
    last = demo_evidence.DEMO_TRIES
    assert demo_evidence.demo_seed_continue(case_id=case.pk, attempt=last) == "gave_up"
    assert not _demo_packet()


def test_a_demo_document_that_failed_to_read_stops_the_seeding(admin_user: User) -> None:
    call_command("seed_demo")
    case = Case.objects.get(number=demo.DEMO_NUMBER)
    Document.objects.filter(case=case, filename="supply-agreement.pdf").update(
        status=Document.Status.FAILED, error="unreadable"
    )

    assert demo_evidence.demo_seed_continue(case_id=case.pk, attempt=1) == "failed"
    assert demo_evidence.demo_seed_continue(case_id=case.pk + 1000, attempt=1) == "nothing"
    assert not _demo_packet()


@pytest.mark.parametrize("args", [{"case_id": "1", "attempt": 1}, {"case_id": 1, "attempt": None}])
def test_the_job_refuses_arguments_of_the_wrong_type(args: dict[str, Any]) -> None:
    from lexweb.errors import DomainError
    from lexweb_dev.tasks import demo_seed_continue_task

    with pytest.raises(DomainError, match="Task argument"):
        demo_seed_continue_task(**args)


def test_the_demo_pdfs_carry_their_text() -> None:
    for document in demo_evidence.DOCUMENTS:
        with pymupdf.open(stream=demo_evidence.pdf_bytes(document), filetype="pdf") as pdf:
            assert pdf.page_count == len(document.pages)
            text = " ".join(" ".join(page.get_text().split()) for page in pdf)
        assert " ".join(document.pages[0].split()[:6]) in text


def test_a_refused_demo_document_is_one_line_and_lexweb_still_starts(
    admin_user: User, settings: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    settings.LEXWEB_MAX_UPLOAD_BYTES = 100  # every demo PDF is larger

    call_command("seed_demo")  # no exception: `make run` goes on

    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("seed_demo: The demo document supply-agreement.pdf was refused: ")
    assert err[0].endswith("The demo case has no packet; lexweb runs on.")
    assert Case.objects.filter(number=demo.DEMO_NUMBER).exists()
    assert not Document.objects.exists() and not _demo_packet()
    # The next start, with room for them, uploads them.
    settings.LEXWEB_MAX_UPLOAD_BYTES = 50 * 1024 * 1024
    call_command("seed_demo")
    assert Document.objects.count() == len(demo_evidence.DOCUMENTS)


def test_with_the_demo_case_off_only_the_demo_cluster_is_made(
    admin_user: User, settings: Any
) -> None:
    settings.LEXWEB_DEMO_CASE = False

    call_command("seed_demo")
    call_command("seed_demo_site")

    assert not Case.objects.filter(number=demo.DEMO_NUMBER).exists()
    assert not User.objects.filter(email=demo.DEMO_LAWYER).exists()
    assert not Document.objects.exists()
    assert Host.objects.exists() and Backend.objects.exists()
