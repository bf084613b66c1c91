"""A financial extraction whose table is written, for the table and CSV tests and the route
tables: the run's stages in the state the pipeline leaves them (the extractor's rows, the
validation's table stored as version 1 of the run's draft and registered, a done verification
of it), with the verifier's findings written directly at the rows' offsets (the verifier's own
checks are tested in tests/verification; tests/drafting/test_financial_table.py also runs the
whole pipeline on a fake extractor)."""

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import Role, RoleRoute
from apps.drafting.models import DraftVersion, Run, Stage
from apps.drafting.pipeline import outputs
from apps.evidence.models import FrozenPage, Packet
from apps.verification.models import Finding, Override, Verification
from tests.cluster.dispatch_fixtures import (
    backend_make,
    closed_port_url,
    deployment_make,
    route_make,
)
from tests.drafting import run_fixtures as rf

ROWS = [
    {
        "date": "2024-03-03",
        "amount": "1250.00",
        "counterparty": "Widget LLC",
        "description": "Monthly rent",
        "bates": "“record.pdf” p. 1",
    },
    {
        "date": "2024-04-03",
        "amount": "-300.00",
        "counterparty": '=HYPERLINK("http://evil.test","click")',
        "description": "@SUM(A1:A9) refund",
        "bates": "ACME000999",
    },
    {
        "date": "2024-05-03",
        "amount": "1250.00",
        "counterparty": "+Widget LLC",
        "description": "-2+3 rent, “May”",
        "bates": "“record.pdf” p. 1",
    },
]


def route_every_role() -> None:
    """Every model role routed to one deployment on a port where nothing listens (no job runs
    in these tests), unless roles are routed already."""
    if not RoleRoute.objects.exists():
        backend = backend_make(base_url=closed_port_url(), board="board-table")
        deployment = deployment_make(backend, model="table-model")
        for role in Role.values:
            route_make(role, deployment)


def table_text(rows: list[dict[str, str]]) -> str:
    """The table as the validation stage writes it (apps/drafting/pipeline/outputs.py)."""
    lines = ["| Date | Amount | Counterparty | Description | Citation |", "|---|---|---|---|---|"]
    lines += [
        f"| {r['date']} | {r['amount']} | {_cell(r['counterparty'])} | "
        f"{_cell(r['description'])} | [{_cell(r['bates'])}] |"
        for r in rows
    ]
    return "\n".join(lines) if rows else "No transactions were found in the evidence."


def _cell(value: str) -> str:
    return " ".join(value.replace("|", "/").split())


def financial_run(
    *,
    case: Case,
    user: User,
    packet: Packet,
    label: str = "Table",
    rows: list[dict[str, str]] | None = None,
    verify: bool = True,
) -> Run:
    """A succeeded financial extraction of `packet` (its instructions `<label> table`). With
    `verify`, row 1's date is supported, row 2's citation unsupported, row 3's amount
    unsupported but overridden by `user` (a lawyer)."""
    rows = ROWS if rows is None else rows
    route_every_role()
    run = rf.start(
        user=user, case=case, packet=packet, kind="financial", instructions=f"{label} table"
    )
    stages = {s.name: s for s in run.stages.all()}
    text = table_text(rows)
    validation = stages[Stage.Name.VALIDATION]
    version = outputs.version_store(run=run, stage=validation, text=text)
    Stage.objects.filter(pk=stages[Stage.Name.EXTRACTOR].pk).update(
        status=Stage.Status.SUCCEEDED, output_json={"transactions": rows}
    )
    unknown = ["the Bates number is not in the packet"]
    Stage.objects.filter(pk=validation.pk).update(
        status=Stage.Status.SUCCEEDED,
        version=version,
        output_text=text,
        output_json={
            "transactions": [
                {**r, "problems": unknown if r["bates"] == "ACME000999" else []} for r in rows
            ]
        },
    )
    verification = None
    if verify:
        verification = _verify(version=version, user=user, text=text, rows=rows)
    Stage.objects.filter(pk=stages[Stage.Name.VERIFIER].pk).update(
        status=Stage.Status.SUCCEEDED if verify else Stage.Status.QUEUED,
        verification=verification,
    )
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.SUCCEEDED if verify else Run.Status.RUNNING
    )
    return Run.objects.get(pk=run.pk)


def _verify(
    *, version: DraftVersion, user: User, text: str, rows: list[dict[str, str]]
) -> Verification:
    page = FrozenPage.objects.filter(packet=version.draft.packet).order_by("position").first()
    verification = Verification.objects.create(
        version=version,
        requested_by=user,
        status=Verification.Status.DONE,
        claim_count=3,
        claims_done=3,
        verifier_version="1",
    )
    lines = text.split("\n")
    starts = [sum(len(line) + 1 for line in lines[:n]) for n in range(len(lines))]

    def finding(row: int, value: str, kind: str, status: str) -> Finding:
        line = lines[row + 2]
        start = starts[row + 2] + line.index(value)
        return Finding.objects.create(
            verification=verification,
            start=start,
            end=start + len(value),
            text=value,
            kind=kind,
            status=status,
            check_name="table",
            message=f"The {kind} is {status}.",
            page=page if status == Finding.Status.SUPPORTED else None,
            verifier_version="1",
        )

    if len(rows) >= 1:
        finding(0, rows[0]["date"], Finding.Kind.DATE, Finding.Status.SUPPORTED)
    if len(rows) >= 2:
        finding(1, rows[1]["bates"], Finding.Kind.RECORD_CITE, Finding.Status.UNSUPPORTED)
    if len(rows) >= 3:
        third = finding(2, rows[2]["amount"], Finding.Kind.AMOUNT, Finding.Status.UNSUPPORTED)
        Override.objects.create(finding=third, lawyer=user, reason="Checked by hand: it is so.")
    return verification


def financial_run_id(case: Case, label: str) -> int:
    return Run.objects.get(case=case, instructions=f"{label} table").pk
