"""The table of a financial extraction (issue 12, requirement 1): each transaction with the
verifier's status for its row, on the run page and as a CSV the lawyer downloads.

1. The validation stage writes the table as a version of the run's draft: a header line, a
   separator line, then one line per transaction in the order of its `transactions` list
   (apps/drafting/pipeline/outputs.py). A finding of the version's newest verification belongs
   to the row whose line holds its span, so each row's status is the worst of its findings:
   contradicted, unsupported, needs review, overridden (a blocking finding a lawyer let stand),
   supported; "no claim checked" when no finding falls on the row, "not verified yet" while
   the version has no finished verification ("not matched" if the table's lines do not match
   its rows one to one, which a value holding a line break would cause).
2. `transactions_csv_for_user` is the download: a lawyer or staff member of the case (as for
   the DOCX and PDF exports), the read audited ("run.transactions_csv"). The file is UTF-8 with
   a byte order mark (spreadsheets then read it as UTF-8) and CRLF line ends; a cell that a
   spreadsheet would take for a formula (starting with = + - @, a tab, CR or LF) is prefixed
   with an apostrophe, except a plain number such as -1250.00. Before it is answered it is
   registered as a generated artifact of the case (kind `export`, linked to the table's own
   registered version), as exports.py does: the same bytes downloaded again are the same
   artifact, and the file can never come back in as evidence unflagged.
"""

import csv
import hashlib
import io
import re
from dataclasses import dataclass, field

from django.db import transaction

from apps.accounts.models import User
from apps.cases import read_audit
from apps.drafting import selectors as draft_selectors
from apps.drafting.models import DraftVersion, Run, Stage
from apps.drafting.services import runs
from apps.evidence.models import GeneratedArtifact
from apps.evidence.services import registry
from apps.verification import selectors as verification_selectors
from apps.verification.models import Finding, Verification
from lexweb.errors import Conflict

FIELDS = ["date", "amount", "counterparty", "description", "bates"]
CSV_COLUMNS = [
    *FIELDS,
    "verifier_status",
    "verifier_findings",
    "validation_problems",
]
MEDIA_TYPE = "text/csv"
# A row's status and its label, worst first (a row shows the worst of its findings).
ROW_STATES: dict[str, str] = {
    "contradicted": "Contradicted",
    "unsupported": "Unsupported",
    "needs_review": "Needs review",
    "overridden": "Overridden",
    "supported": "Supported",
    "not_checked": "No claim checked",
    "not_verified": "Not verified yet",
    "unmatched": "Not matched to the checked table",
}
_RANK = {state: rank for rank, state in enumerate(ROW_STATES)}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")
_PLAIN_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_MAX_CELL = 10_000


class NoTable(Conflict):
    """The run is not a financial extraction, or its table is not written yet (409)."""

    code = "no_table"


@dataclass(frozen=True)
class TransactionRow:
    values: dict[str, str]  # FIELDS
    status: str  # a key of ROW_STATES
    findings: list[str] = field(default_factory=list)  # "Unsupported amount “…”: why"
    problems: list[str] = field(default_factory=list)  # the validation stage's

    @property
    def label(self) -> str:
        return ROW_STATES[self.status]


@dataclass(frozen=True)
class TransactionTable:
    run: Run
    version: DraftVersion
    verification: Verification | None  # the version's newest one, whatever its status
    rows: list[TransactionRow]

    @property
    def verified(self) -> bool:
        return (
            self.verification is not None and self.verification.status == Verification.Status.DONE
        )


def _text(value: object) -> str:
    return " ".join(str(value if value is not None else "").replace("\x00", "").split())


def _line_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for line in text.split("\n"):
        spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def _finding_state(finding: Finding) -> str:
    if finding.blocks and verification_selectors.finding_overridden(finding):
        return "overridden"
    return str(finding.status)


def table_of(run: Run) -> TransactionTable | None:
    """The run's table with each row's status (access checked by the caller); None while the
    run is not a financial extraction whose validation stage has written its table."""
    if run.kind != Run.Kind.FINANCIAL:
        return None
    stage = (
        Stage.objects.filter(run=run, name=Stage.Name.VALIDATION, status=Stage.Status.SUCCEEDED)
        .select_related("version")
        .first()
    )
    if stage is None or stage.version is None:
        return None
    data = stage.output_json if isinstance(stage.output_json, dict) else {}
    raw = data.get("transactions")
    items = [item for item in raw if isinstance(item, dict)] if isinstance(raw, list) else []
    version = stage.version
    verification = verification_selectors.verification_latest(version)
    done = verification is not None and verification.status == Verification.Status.DONE
    findings = (
        list(
            Finding.objects.filter(verification=verification)
            .select_related("override")
            .order_by("start", "end", "id")
        )
        if done
        else []
    )
    spans = _line_spans(version.text)[2:]  # after the header and the separator
    matched = len(spans) == len(items)  # a value holding a line break would shift the lines
    rows = []
    for index, item in enumerate(items):
        start, end = spans[index] if matched else (-1, -1)
        mine = [f for f in findings if start <= f.start and f.end <= end]
        if not done:
            status = "not_verified"
        elif not matched:
            status = "unmatched"
        elif not mine:
            status = "not_checked"
        else:
            status = min((_finding_state(f) for f in mine), key=lambda s: _RANK.get(s, 0))
        problems = item.get("problems")
        rows.append(
            TransactionRow(
                values={name: _text(item.get(name)) for name in FIELDS},
                status=status,
                findings=[
                    f"{ROW_STATES.get(_finding_state(f), f.status)} {f.get_kind_display().lower()}"
                    f" “{_text(f.text)}”: {_text(f.message)}"
                    for f in mine
                    if _finding_state(f) != "supported"
                ],
                problems=[_text(p) for p in problems] if isinstance(problems, list) else [],
            )
        )
    return TransactionTable(run=run, version=version, verification=verification, rows=rows)


# --- The CSV ---------------------------------------------------------------------------------


def csv_cell(value: str) -> str:
    """The cell as a spreadsheet will show it, never run it: a value starting with a formula
    character is prefixed with an apostrophe (a plain number such as -1250.00 is left as is)."""
    value = value[:_MAX_CELL]
    if value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def table_csv(table: TransactionTable) -> str:
    """The table as CSV text (CRLF line ends; the caller adds the byte order mark)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for row in table.rows:
        cells = [
            *(row.values[name] for name in FIELDS),
            row.label,
            "; ".join(row.findings),
            "; ".join(row.problems),
        ]
        writer.writerow([csv_cell(cell) for cell in cells])
    return out.getvalue()


@dataclass(frozen=True)
class CsvExport:
    data: bytes
    filename: str
    artifact: GeneratedArtifact
    rows: int


def transactions_csv_for_user(*, user: User, case_id: int, run_id: int) -> CsvExport:
    """The financial extraction's table as a CSV file (see the module): a lawyer or staff
    member of the case; NoTable (409) for another kind of run or before the table is written.
    Registered as a generated artifact, then audited as a read of the run."""
    case = draft_selectors.case_for_user(user=user, case_id=case_id)
    run = draft_selectors.run_in_case(case=case, run_id=run_id)
    runs.require_member(user=user, case=case, doing="export a run's table")
    table = table_of(run)
    if table is None:
        if run.kind != Run.Kind.FINANCIAL:
            raise NoTable(
                f"Run {run.pk} is a {run.get_kind_display().lower()}: only a financial "
                "extraction has a table to export."
            )
        raise NoTable(
            f"Run {run.pk} has no table yet: it is written when the validation stage succeeds."
        )
    text = table_csv(table)
    data = ("\ufeff" + text).encode("utf-8")
    filename = f"run-{run.pk}-transactions.csv"
    exported_from = GeneratedArtifact.objects.filter(
        case=case, sha256=hashlib.sha256(table.version.text.encode("utf-8")).hexdigest()
    ).first()
    with transaction.atomic():
        artifact = registry.artifact_register(
            data=data,
            text=text,
            kind=GeneratedArtifact.Kind.EXPORT,
            media_type=MEDIA_TYPE,
            title=f"Financial extraction (run {run.pk}) table (CSV export)",
            case=case,
            source=f"run {run.pk} table v{table.version.number} export (csv)",
            exported_from=exported_from,
            created_by=user,
            packet=run.packet,
        )
    read_audit.read_record(
        user=user,
        action="run.transactions_csv",
        case=case,
        target=run,
        detail={
            "rows": len(table.rows),
            "version": table.version.number,
            "verification": table.verification.pk if table.verification else None,
            "sha256": artifact.sha256,
            "artifact": artifact.pk,
        },
    )
    return CsvExport(data=data, filename=filename, artifact=artifact, rows=len(table.rows))
