"""tests/harness/database.py: what a committing test wrote is gone before the next test, jobs
included, and the append-only guards are on again afterwards."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import DatabaseError, connection, transaction
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts import services as account_services
from apps.accounts.models import AuditEvent
from apps.cases.models import Case, Membership
from apps.documents.tasks import document_extract_text_task
from tests.factories import CaseFactory, MembershipFactory
from tests.harness import database
from tests.harness.database import flush_written_tables


@pytest.mark.django_db(transaction=True)
def test_the_tables_a_test_wrote_are_emptied_and_the_guards_stay_on() -> None:
    case = CaseFactory()
    membership = MembershipFactory(case=case)
    account_services.audit_record(actor=membership.user, action="case.view", case=case, target=case)
    document_extract_text_task.defer(document_id=1)
    content_types = ContentType.objects.count()

    written = set(flush_written_tables(connection))

    assert {
        "cases_case",
        "cases_membership",
        "accounts_auditevent",
        "procrastinate_jobs",
    } <= written
    assert not Case.objects.exists() and not Membership.objects.exists()
    assert not AuditEvent.objects.exists() and not ProcrastinateJob.objects.exists()
    assert ContentType.objects.count() == content_types > 0  # as migrations made them
    assert flush_written_tables(connection) == []  # nothing left to find

    # The flush turned the triggers off for its own transaction only: the audit log is
    # append-only again.
    case = CaseFactory()
    account_services.audit_record(actor=None, action="case.view", case=case, target=case)
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM accounts_auditevent")
    assert AuditEvent.objects.count() == 1


@pytest.mark.django_db
def test_the_test_database_is_a_copy_of_the_migrated_template() -> None:
    # tests/conftest.py django_db_modify_db_settings: the runner copies it, it does not migrate.
    template = connection.settings_dict["TEST"]["TEMPLATE"]
    assert template == database.TEMPLATE_PREFIX + database.migrations_digest()
    with connection._nodb_cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [template])
        assert cursor.fetchone() is not None
