"""Issue 12, requirement 1, end to end: a financial extraction on a fake extractor (a real
llama-server protocol over HTTP) and a real worker, its table checked by the real verifier, then
downloaded as CSV with each row's status and its hostile cells guarded."""

import csv
import io
import json

import pytest
from django.test import Client

from apps.accounts.models import User
from apps.cases.models import Case
from apps.drafting.models import Run
from apps.drafting.services import transactions
from tests.drafting import run_fixtures as rf
from tests.drafting.table_fixtures import ROWS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.slow
def test_a_real_extraction_downloads_as_csv_with_the_real_verifiers_statuses(
    lawyer: User, lawyer_api: Client, case: Case
) -> None:
    bad = {
        **ROWS[0],
        "date": "2024-02-30",
        "bates": "ACME999999",
        "counterparty": "=cmd|' /C calc'!A0",
    }
    packet = rf.frozen_packet(case=case, user=lawyer)
    reply = json.dumps({"transactions": [ROWS[0], bad]})
    with rf.site_running({"extractor": reply}):
        run = rf.start(user=lawyer, case=case, packet=packet, kind="financial")
        with rf.ThreadWorker():
            run = rf.finished(run)
    assert run.status == Run.Status.SUCCEEDED, run.error

    response = lawyer_api.get(f"/api/v1/cases/{case.pk}/runs/{run.pk}/transactions.csv")

    assert response.status_code == 200, response.content
    text = response.content.decode("utf-8")
    assert text.startswith("\ufeff")
    rows = list(csv.DictReader(io.StringIO(text[1:], newline="")))
    assert [r["date"] for r in rows] == ["2024-03-03", "2024-02-30"]
    assert rows[1]["counterparty"] == "'=cmd|' /C calc'!A0"
    assert "the Bates number is not in the packet" in rows[1]["validation_problems"]
    labels = set(transactions.ROW_STATES.values())
    assert all(r["verifier_status"] in labels for r in rows), rows
    assert "Not verified yet" not in {r["verifier_status"] for r in rows}
    # The invented Bates number is the verifier's unsupported record citation, on its own row.
    assert rows[1]["verifier_status"] == "Unsupported"
    assert "record citation “ACME999999”" in rows[1]["verifier_findings"]
    assert "ACME999999" not in rows[0]["verifier_findings"]
