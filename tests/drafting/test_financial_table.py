"""Issue 12, requirement 1: a financial extraction's table, with the verifier's status for each
row, on the run page and as a CSV the lawyer exports. The CSV is registered as a generated
artifact (it leaves the system), audited as a read, guarded against spreadsheet formulas, and
only for members of the run's case; every other request is refused and leaves nothing."""

import csv
import io
from typing import Any

import pytest
from django.test import Client
from django.utils.html import escape

from apps.accounts.models import AuditEvent, User
from apps.cases import services as case_services
from apps.cases.models import Case
from apps.drafting.models import Run
from apps.drafting.services import transactions
from apps.evidence.models import GeneratedArtifact, Packet
from apps.verification.models import Finding, Override
from tests.conftest import token_client
from tests.drafting import run_fixtures as rf
from tests.drafting.table_fixtures import ROWS, financial_run, route_every_role
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def packet(lawyer: User, case: Case) -> Packet:
    return rf.frozen_packet(case=case, user=lawyer)


@pytest.fixture
def run(lawyer: User, case: Case, packet: Packet) -> Run:
    return financial_run(case=case, user=lawyer, packet=packet)


def _csv_url(run: Run, case_id: int | None = None, run_id: object = None) -> str:
    case = run.case_id if case_id is None else case_id
    return f"/api/v1/cases/{case}/runs/{run.pk if run_id is None else run_id}/transactions.csv"


def _rows(response: Any) -> list[dict[str, str]]:
    text = response.content.decode("utf-8")
    assert text.startswith("\ufeff")
    return list(csv.DictReader(io.StringIO(text[1:], newline="")))


# --- The CSV --------------------------------------------------------------------------------


def test_the_csv_has_every_row_with_its_verifier_status_registered_and_audited(
    lawyer_api: Client, lawyer: User, run: Run
) -> None:
    response = lawyer_api.get(_csv_url(run))

    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith(
        f'attachment; filename="run-{run.pk}-transactions.csv"'
    )
    assert b"\r\n" in response.content
    rows = _rows(response)
    assert list(rows[0]) == transactions.CSV_COLUMNS
    assert [r["verifier_status"] for r in rows] == ["Supported", "Unsupported", "Overridden"]
    first, second, third = rows
    assert (first["date"], first["amount"], first["bates"]) == (
        "2024-03-03",
        "1250.00",
        "“record.pdf” p. 1",
    )
    assert first["verifier_findings"] == "" and first["validation_problems"] == ""
    assert second["verifier_findings"] == (
        "Unsupported record citation “ACME000999”: The record_cite is unsupported."
    )
    assert second["validation_problems"] == "the Bates number is not in the packet"
    assert third["verifier_findings"].startswith("Overridden amount “1250.00”")
    # Registered as an export of the table's own registered version, in this case.
    artifact = GeneratedArtifact.objects.get(pk=int(response["X-Lexweb-Artifact"]))
    assert (artifact.kind, artifact.media_type, artifact.case_id) == (
        "export",
        "text/csv",
        run.case_id,
    )
    assert artifact.exported_from is not None and artifact.exported_from.kind == "model_output"
    assert artifact.size == len(response.content)
    (row,) = AuditEvent.objects.filter(action="run.transactions_csv")
    assert (row.actor_id, row.case_id, row.target_id) == (lawyer.pk, run.case_id, str(run.pk))
    assert row.detail["rows"] == 3 and row.detail["artifact"] == artifact.pk


def test_cells_a_spreadsheet_would_run_are_prefixed_and_plain_numbers_kept(
    lawyer_api: Client, run: Run
) -> None:
    rows = _rows(lawyer_api.get(_csv_url(run)))

    assert rows[1]["counterparty"] == "'" + ROWS[1]["counterparty"]
    assert rows[1]["description"] == "'@SUM(A1:A9) refund"
    assert rows[1]["amount"] == "-300.00"  # a negative amount stays a number
    assert rows[2]["counterparty"] == "'+Widget LLC"
    assert rows[2]["description"] == "'-2+3 rent, “May”"
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "@", "\t", "\r")), value
            assert not value.startswith("-") or value == "-300.00", value


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1+1", "'-1+1"),
        ("@A1", "'@A1"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("\nx", "'\nx"),
        ("-1250.00", "-1250.00"),
        ("-12", "-12"),
        ("-1e3", "'-1e3"),
        ("Widget = LLC", "Widget = LLC"),
        ("", ""),
    ],
)
def test_csv_cell_guards_formulas(value: str, shown: str) -> None:
    assert transactions.csv_cell(value) == shown


def test_an_enormous_cell_is_cut_and_its_whitespace_collapsed(
    lawyer_api: Client, lawyer: User, case: Case, packet: Packet
) -> None:
    huge = {**ROWS[0], "description": "x" * 50_000, "counterparty": "A\tB\n C"}
    run = financial_run(case=case, user=lawyer, packet=packet, rows=[huge], label="Huge")

    (row,) = _rows(lawyer_api.get(_csv_url(run)))

    assert row["description"] == "x" * 10_000
    assert row["counterparty"] == "A B C"
    assert row["verifier_status"] == "Supported"


def test_a_table_whose_lines_do_not_match_its_rows_says_so_for_every_row(
    lawyer_api: Client, lawyer: User, case: Case, packet: Packet
) -> None:
    # A date holding a line break (written raw into the table) shifts the lines of the rows.
    broken = {**ROWS[1], "date": "2024-04-03\n| 2024-04-04 |"}
    run = financial_run(
        case=case, user=lawyer, packet=packet, rows=[ROWS[0], broken], label="Shifted", verify=False
    )
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED)
    from apps.verification.models import Verification

    Verification.objects.create(
        version=run.draft.versions.get(), requested_by=lawyer, status="done", verifier_version="1"
    )

    rows = _rows(lawyer_api.get(_csv_url(run)))

    assert [r["verifier_status"] for r in rows] == ["Not matched to the checked table"] * 2
    assert rows[1]["date"] == "2024-04-03 | 2024-04-04 |"


def test_the_same_table_is_one_artifact_and_an_override_makes_a_new_export(
    lawyer_api: Client, lawyer: User, run: Run
) -> None:
    first = lawyer_api.get(_csv_url(run))
    again = lawyer_api.get(_csv_url(run))
    finding = Finding.objects.get(
        verification__version__draft=run.draft, status="unsupported", override__isnull=True
    )
    Override.objects.create(finding=finding, lawyer=lawyer, reason="The receipt is in the file.")
    changed = lawyer_api.get(_csv_url(run))

    assert first["X-Lexweb-Artifact"] == again["X-Lexweb-Artifact"]
    assert changed["X-Lexweb-Artifact"] != first["X-Lexweb-Artifact"]
    assert _rows(changed)[1]["verifier_status"] == "Overridden"
    assert GeneratedArtifact.objects.filter(media_type="text/csv").count() == 2
    assert AuditEvent.objects.filter(action="run.transactions_csv").count() == 3


def test_staff_exports_the_table_and_rows_wait_for_the_verifier(
    staff_api: Client, lawyer: User, case: Case, packet: Packet
) -> None:
    run = financial_run(case=case, user=lawyer, packet=packet, verify=False, label="Waiting")

    response = staff_api.get(_csv_url(run))

    assert response.status_code == 200, response.content
    assert {r["verifier_status"] for r in _rows(response)} == {"Not verified yet"}


def test_an_empty_extraction_is_a_header_only_csv(
    lawyer_api: Client, lawyer: User, case: Case, packet: Packet
) -> None:
    run = financial_run(case=case, user=lawyer, packet=packet, rows=[], label="Empty")

    response = lawyer_api.get(_csv_url(run))

    assert response.status_code == 200
    assert (
        response.content.decode("utf-8") == "\ufeff" + ",".join(transactions.CSV_COLUMNS) + "\r\n"
    )


def test_the_csv_is_refused_for_other_runs_outsiders_and_bad_ids_and_leaves_nothing(
    lawyer_api: Client,
    outsider_api: Client,
    lawyer: User,
    outsider: User,
    case: Case,
    other_case: Case,
    packet: Packet,
    run: Run,
) -> None:
    route_every_role()
    motion = rf.start(user=lawyer, case=case, packet=packet, instructions="Move to dismiss.")
    pending = rf.start(user=lawyer, case=case, packet=packet, kind="financial")
    MembershipFactory(case=other_case, user=lawyer, role="lawyer")
    artifacts = GeneratedArtifact.objects.count()
    audited = AuditEvent.objects.count()

    answers = {
        "motion": lawyer_api.get(_csv_url(motion)),
        "pending": lawyer_api.get(_csv_url(pending)),
        "outsider": outsider_api.get(_csv_url(run)),
        "missing": lawyer_api.get(_csv_url(run, run_id=987654321)),
        "other case": lawyer_api.get(_csv_url(run, case_id=other_case.pk)),
        "no case": lawyer_api.get(_csv_url(run, case_id=987654321)),
        "word": lawyer_api.get(_csv_url(run, run_id="abc")),
        "huge": lawyer_api.get(_csv_url(run, run_id=2**70)),
        "negative": lawyer_api.get(_csv_url(run, run_id=-1)),
    }

    codes = {name: r.status_code for name, r in answers.items()}
    assert codes == {
        "motion": 409,
        "pending": 409,
        "outsider": 404,
        "missing": 404,
        "other case": 404,
        "no case": 404,
        "word": 422,
        "huge": 422,
        "negative": 422,
    }, codes
    assert answers["motion"].json()["code"] == "no_table"
    assert "only a financial extraction has a table" in answers["motion"].json()["detail"]
    assert "no table yet" in answers["pending"].json()["detail"]
    assert case.title not in answers["outsider"].content.decode()
    assert GeneratedArtifact.objects.count() == artifacts
    assert AuditEvent.objects.count() == audited


def test_a_break_glass_admin_reads_the_run_but_does_not_export_its_table(
    admin_user: User, run: Run, case: Case
) -> None:
    case_services.case_break_glass(
        actor=admin_user, case_id=case.pk, reason="Every lawyer of the case has left the firm."
    )
    client = token_client(admin_user)

    page = client.get(f"/api/v1/cases/{case.pk}/runs/{run.pk}")
    response = client.get(_csv_url(run))

    assert page.status_code == 200
    assert response.status_code == 403
    assert "Only a lawyer or staff member on this case may export" in response.json()["detail"]
    assert not GeneratedArtifact.objects.filter(media_type="text/csv").exists()


# --- The run page ---------------------------------------------------------------------------


def test_the_run_page_shows_the_table_with_icons_labels_and_the_csv_link(
    lawyer_client: Client, run: Run
) -> None:
    html = lawyer_client.get(f"/cases/{run.case_id}/runs/{run.pk}/").content.decode()

    assert 'id="table-heading">Transactions</h2>' in html
    assert f'href="/api/v1/cases/{run.case_id}/runs/{run.pk}/transactions.csv"' in html
    assert html.count('data-row-status="') == 3
    for status, icon, label in [
        ("supported", "✓", "Supported"),
        ("unsupported", "✗", "Unsupported"),
        ("overridden", "✎", "Overridden"),
    ]:
        assert (
            f'<span class="state state--{status}"><span aria-hidden="true">{icon} </span>{label}'
            in html
        )
    assert escape(ROWS[1]["counterparty"]) in html and ROWS[1]["counterparty"] not in html
    assert "Validation: the Bates number is not in the packet" in html
    # Not a table of a financial run: no section.
    assert (
        "transactions.csv" not in lawyer_client.get(f"/cases/{run.case_id}/runs/").content.decode()
    )
