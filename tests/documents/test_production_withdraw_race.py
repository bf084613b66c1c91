"""A production and a withdrawal of one of its documents at the same moment, on separate
database connections: the withdrawal waits for the production and is refused, so no
production holds a withdrawn document."""

import pytest
from django.db import transaction

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import production_services, review_services
from apps.documents.models import Document, Production
from lexweb.errors import Conflict
from tests.evidence.conftest import make_document
from tests.evidence.test_packet_concurrency import _in_thread, _join, _wait_until_waiting

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_withdrawal_during_a_production_waits_for_it_and_is_refused(
    lawyer: User, case: Case
) -> None:
    document = make_document(case, lawyer, filename="letter.pdf")
    results: list[object] = []

    with transaction.atomic():
        production = production_services.production_create(
            case=case, actor=lawyer, volume="VOL001", prefix="ACME", document_ids=[document.pk]
        )
        thread = _in_thread(
            lambda: review_services.documents_withdraw(
                actor=lawyer, case=case, document_ids=[document.pk], reason="Uploaded by mistake"
            ),
            results,
        )
        _wait_until_waiting(1)  # the withdrawal waits on the production's lock of the row
    _join([thread])

    assert len(results) == 1 and isinstance(results[0], Conflict), results
    document.refresh_from_db()
    assert document.withdrawn_at is None
    assert Production.objects.filter(pk=production.pk).exists()
    assert Document.objects.filter(pk=document.pk, withdrawn_at__isnull=True).exists()
