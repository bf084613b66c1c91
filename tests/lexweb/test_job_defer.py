"""Jobs queued by services commit with the rows they are about (lexweb.jobs.job_defer), even
where the app's connector is a worker's own pool, whose inserts would commit at once: a
production or a child document made by a service running inside a job must not have its job
start before it exists, nor be left with a job when its transaction rolls back."""

import psycopg
import pymupdf
import pytest
from django import db as django_db
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from procrastinate.contrib.django import app
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import production_services, services
from apps.documents.models import Document, Production
from apps.operations import worker
from lexweb.jobs import database_lost, job_defer

pytestmark = pytest.mark.django_db(transaction=True)


class _RolledBack(Exception):
    pass


def _document(case: Case, lawyer: User) -> Document:
    with pymupdf.open() as pdf:
        pdf.new_page().insert_text((72, 72), "A letter of Acme.", fontsize=11)
        data = pdf.tobytes()
    outcome = services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="letter.pdf",
        source=SimpleUploadedFile("letter.pdf", data),
        origin="client",
    )
    assert outcome.document is not None, outcome.error
    services.document_extract_text(document_id=outcome.document.pk)
    return outcome.document


def test_a_job_commits_with_its_transaction_and_is_gone_when_it_rolls_back() -> None:
    # As in a worker: the app's connector is the worker's pool (never opened here, so a job
    # queued through it would fail outright).
    # Job rows outlive a test's flush (Procrastinate's tables are not Django's): the rows of
    # this test are told by their arguments.
    with app.replace_connector(worker._worker_connector()):
        with pytest.raises(_RolledBack), transaction.atomic():
            job_defer("cases.worker_check", case_id=1, requested_by=1, queued_at="rolled back")
            raise _RolledBack
        assert not ProcrastinateJob.objects.filter(args__queued_at="rolled back").exists()

        with transaction.atomic():
            job_id = job_defer(
                "cases.worker_check", queue="cpu", case_id=2, requested_by=3, queued_at="y"
            )
    job = ProcrastinateJob.objects.get(pk=job_id)
    assert (job.task_name, job.queue_name, job.status) == ("cases.worker_check", "cpu", "todo")
    assert job.args == {"case_id": 2, "requested_by": 3, "queued_at": "y"}


def test_an_unknown_task_name_is_refused() -> None:
    from procrastinate import exceptions

    with pytest.raises(exceptions.TaskNotFound):
        job_defer("no.such_task", x=1)


def test_a_production_made_inside_a_job_queues_its_stamping_with_its_own_rows(
    lawyer: User, case: Case
) -> None:
    document = _document(case, lawyer)
    stamping = ProcrastinateJob.objects.filter(task_name="documents.stamp_production")
    before = set(stamping.values_list("pk", flat=True))  # other tests' rows (see above)
    with app.replace_connector(worker._worker_connector()):
        with pytest.raises(_RolledBack), transaction.atomic():
            production_services.production_create(
                case=case, actor=lawyer, volume="VOL001", prefix="ACME", document_ids=[document.pk]
            )
            raise _RolledBack
        assert not Production.objects.exists()
        assert not stamping.exclude(pk__in=before).exists()

        production = production_services.production_create(
            case=case, actor=lawyer, volume="VOL001", prefix="ACME", document_ids=[document.pk]
        )
    job = stamping.exclude(pk__in=before).get()
    assert job.args == {"production_id": production.pk}


@pytest.mark.parametrize(
    ("error", "lost"),
    [
        (psycopg.OperationalError("sorry, too many clients already"), True),
        (psycopg.InterfaceError("the connection is closed"), True),
        (django_db.OperationalError("server closed the connection unexpectedly"), True),
        (django_db.InterfaceError("connection already closed"), True),
        (psycopg.errors.UniqueViolation("duplicate key"), False),
        (django_db.IntegrityError("duplicate key"), False),
        (ValueError("bad"), False),
    ],
)
def test_a_lost_or_refused_connection_counts_as_the_database_lost_whoever_raised_it(
    error: BaseException, lost: bool
) -> None:
    assert database_lost(error) is lost
