"""What each stage asks for and what it keeps: JSON schemas of the structured answers (sent as
llama-server `json_schema` / Ollama `format`), their parsing (an answer that is not valid JSON
or breaks its schema fails the stage with a clear message), the adversary's findings anchored
to spans of the draft, the financial table, and the draft versions the text stages write.
"""

import datetime
import hashlib
import json
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from django.conf import settings

from apps.drafting import services as draft_services
from apps.drafting.models import Draft, DraftVersion, Run, Stage
from apps.evidence.prompt import page_label
from apps.evidence.services import registry
from apps.verification.models import Finding, Verification
from lexweb.errors import DomainError

if TYPE_CHECKING:
    from apps.drafting.pipeline.execute import Outcome, Work

N = Stage.Name
WRITES_VERSION = {N.DRAFTER, N.REASONER, N.REVISION, N.SUMMARIZER, N.VALIDATION}
_DRAFT_KIND: dict[str, str] = {
    Run.Kind.AFFIDAVIT: Draft.Kind.AFFIDAVIT,
    Run.Kind.MOTION: Draft.Kind.MOTION,
    Run.Kind.SUMMARY: Draft.Kind.SUMMARY,
    Run.Kind.FINANCIAL: Draft.Kind.OTHER,
}
_STRINGS = {"type": "array", "items": {"type": "string"}, "maxItems": 50}

GATE_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "enum": ["yes", "no", "insufficient"]},
        "reasons": _STRINGS,
        "missing_evidence": _STRINGS,
    },
    "required": ["answer", "reasons", "missing_evidence"],
    "additionalProperties": False,
}
ADVERSARY_KINDS = ["weak_point", "counter_argument", "unsupported_assertion"]
ADVERSARY_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "findings": {
            "type": "array",
            "maxItems": 100,
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ADVERSARY_KINDS},
                    "quote": {"type": "string"},
                    "comment": {"type": "string"},
                },
                "required": ["kind", "quote", "comment"],
            },
        }
    },
    "required": ["findings"],
}
TRANSACTION_FIELDS = ["date", "amount", "counterparty", "description", "bates"]


def extractor_schema() -> dict[str, object]:
    return {
        "type": "object",
        "properties": {
            "transactions": {
                "type": "array",
                "maxItems": settings.LEXWEB_RUN_MAX_TRANSACTIONS,
                "items": {
                    "type": "object",
                    "properties": {name: {"type": "string"} for name in TRANSACTION_FIELDS},
                    "required": TRANSACTION_FIELDS,
                },
            }
        },
        "required": ["transactions"],
    }


def schema_for(name: str) -> dict[str, object] | None:
    if name == N.GATE:
        return GATE_SCHEMA
    if name == N.ADVERSARY:
        return ADVERSARY_SCHEMA
    if name == N.EXTRACTOR:
        return extractor_schema()
    return None


# --- Prompt values ---------------------------------------------------------------------------


def template_values(work: "Work") -> dict[str, str]:
    verifier = work.earlier.get(N.VERIFIER, {})
    adversary = work.earlier.get(N.ADVERSARY, {})
    problems = [
        f"- “{item.get('text')}”: {item.get('status')}: {item.get('message')}"
        for item in _items(verifier.get("findings"))
    ]
    attacks = [
        f"- {item.get('kind')}: “{item.get('quote')}”: {item.get('comment')}"
        for item in _items(adversary.get("findings"))
    ]
    return {
        "kind": Run.Kind(work.kind).label.lower(),
        "instructions": work.instructions,
        "draft": work.draft_text,
        "verifier_findings": "\n".join(problems) or "(none)",
        "reviewer_findings": "\n".join(attacks) or "(none)",
        "max_transactions": str(settings.LEXWEB_RUN_MAX_TRANSACTIONS),
    }


def _items(value: object) -> list[dict[str, object]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


# --- Parsing model answers -------------------------------------------------------------------


def _json_object(text: str, what: str) -> dict[str, object]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DomainError(
            f"The {what} did not answer valid JSON ({exc.msg} at character {exc.pos}); the "
            "stage failed. Start the run again, or ask an admin to check the model."
        ) from None
    except ValueError:  # e.g. a number of thousands of digits
        raise DomainError(
            f"The {what} answered JSON that cannot be read (a value is out of range); the stage "
            "failed. Start the run again, or ask an admin to check the model."
        ) from None
    if not isinstance(data, dict):
        raise DomainError(f"The {what} answered JSON that is not an object; the stage failed.")
    return data


def _strings(data: dict[str, object], key: str, what: str) -> list[str]:
    value = data.get(key)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise DomainError(f"The {what}'s answer breaks its schema: “{key}” must be a list of text.")
    return value


def gate_parse(text: str) -> dict[str, object]:
    data = _json_object(text, "gate")
    answer = data.get("answer")
    if answer not in ("yes", "no", "insufficient"):
        raise DomainError(
            f"The gate's answer breaks its schema: “answer” is {answer!r:.40}, not yes, no or "
            "insufficient."
        )
    return {
        "answer": answer,
        "reasons": _strings(data, "reasons", "gate"),
        "missing_evidence": _strings(data, "missing_evidence", "gate"),
    }


def adversary_parse(text: str, *, draft: str) -> dict[str, object]:
    """Findings, each anchored to the first place its quote occurs in the draft (start/end None
    when the quote is not the draft's words: shown as such, never guessed)."""
    data = _json_object(text, "adversarial reviewer")
    raw = data.get("findings")
    if not isinstance(raw, list):
        raise DomainError("The reviewer's answer breaks its schema: “findings” must be a list.")
    findings = []
    for index, item in enumerate(raw):
        fields = item if isinstance(item, dict) else {}
        kind, quote, comment = (fields.get(name) for name in ("kind", "quote", "comment"))
        if (
            kind not in ADVERSARY_KINDS
            or not isinstance(quote, str)
            or not isinstance(comment, str)
        ):
            raise DomainError(
                f"The reviewer's answer breaks its schema at finding {index + 1}: each finding "
                f"has a kind ({', '.join(ADVERSARY_KINDS)}), a quote and a comment."
            )
        start = draft.find(quote) if quote.strip() else -1
        findings.append(
            {
                "kind": kind,
                "quote": quote,
                "comment": comment,
                "start": start if start >= 0 else None,
                "end": start + len(quote) if start >= 0 else None,
            }
        )
    return {"findings": findings}


def extractor_parse(text: str) -> dict[str, object]:
    data = _json_object(text, "extractor")
    raw = data.get("transactions")
    limit = settings.LEXWEB_RUN_MAX_TRANSACTIONS
    if not isinstance(raw, list):
        raise DomainError("The extractor's answer breaks its schema: no “transactions” list.")
    if len(raw) > limit:
        raise DomainError(
            f"The extractor's answer breaks its schema: {len(raw)} transactions, at most {limit}."
        )
    rows = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict) or not all(
            isinstance(item.get(name), str) for name in TRANSACTION_FIELDS
        ):
            raise DomainError(
                f"The extractor's answer breaks its schema at transaction {index + 1}: each has "
                f"{', '.join(TRANSACTION_FIELDS)} as text."
            )
        rows.append({name: item[name] for name in TRANSACTION_FIELDS})
    return {"transactions": rows}


def model_outcome(work: "Work", *, text: str, custody: dict[str, object]) -> "Outcome":
    from apps.drafting.pipeline.execute import Outcome

    if work.name == N.GATE:
        return Outcome(text=text, data=gate_parse(text), custody=custody)
    if work.name == N.ADVERSARY:
        return Outcome(
            text=text, data=adversary_parse(text, draft=work.draft_text), custody=custody
        )
    if work.name == N.EXTRACTOR:
        return Outcome(text=text, data=extractor_parse(text), custody=custody)
    if not text.strip():
        raise DomainError(f"The {Stage.Name(work.name).label.lower()} wrote nothing.")
    return Outcome(text=text, custody=custody)


# --- Financial validation --------------------------------------------------------------------


def validation_outcome(work: "Work") -> "Outcome":
    """Check each extracted transaction (a real date, a decimal amount, a Bates label of the
    packet) and write the table the verifier then checks, citing each row's Bates number."""
    from apps.drafting.pipeline.execute import Outcome

    labels = {label for page in work.pages for label in page.bates} | {
        page_label(page) for page in work.pages
    }
    rows = []
    for row in _items(work.earlier.get(N.EXTRACTOR, {}).get("transactions")):
        problems = []
        try:
            datetime.date.fromisoformat(str(row.get("date")))
        except ValueError:
            problems.append("the date is not a date (YYYY-MM-DD)")
        try:
            Decimal(str(row.get("amount")).replace(",", ""))
        except InvalidOperation:
            problems.append("the amount is not a number")
        if row.get("bates") not in labels:
            problems.append("the Bates number is not in the packet")
        rows.append({**row, "problems": problems})
    lines = ["| Date | Amount | Counterparty | Description | Citation |", "|---|---|---|---|---|"]
    lines += [
        f"| {r['date']} | {r['amount']} | {_cell(r['counterparty'])} | "
        f"{_cell(r['description'])} | [{_cell(r['bates'])}] |"
        for r in rows
    ]
    text = "\n".join(lines) if rows else "No transactions were found in the evidence."
    return Outcome(text=text, data={"transactions": rows})


def _cell(value: object) -> str:
    return " ".join(str(value).replace("|", "/").split())


# --- Verification and versions ---------------------------------------------------------------


def verification_summary(*, verification_id: int) -> dict[str, object]:
    verification = Verification.objects.get(pk=verification_id)
    findings = list(
        Finding.objects.filter(verification=verification).exclude(status=Finding.Status.SUPPORTED)
    )
    return {
        "verification_id": verification.pk,
        "claims": verification.claim_count,
        "blocking": sum(1 for f in findings if f.blocks and not hasattr(f, "override")),
        "findings": [
            {
                "start": f.start,
                "end": f.end,
                "text": f.text,
                "kind": f.kind,
                "status": f.status,
                "message": f.message,
            }
            for f in findings
        ],
    }


def version_store(*, run: Run, stage: Stage, text: str) -> DraftVersion:
    """The stage's text as the next version of the run's draft (the draft is created with the
    first one), registered as a generated artifact. Runs inside the caller's transaction, so a
    re-run stage never stores its text twice."""
    content = draft_services.pasted_content(text=text)
    user = run.created_by
    if run.draft_id is None:
        title = f"{Run.Kind(run.kind).label} (run {run.pk})"
        draft = draft_services.draft_create(
            user=user,
            case_id=run.case_id,
            title=title,
            kind=_DRAFT_KIND[run.kind],
            packet_id=run.packet_id,
            content=content,
            written_by=DraftVersion.WrittenBy.MODEL,
        )
        run.draft = draft
        run.save(update_fields=["draft"])
        version = draft.versions.get(number=1)
    else:
        version = draft_services.version_add(
            user=user,
            case_id=run.case_id,
            draft_id=run.draft_id,
            content=content,
            written_by=DraftVersion.WrittenBy.MODEL,
        )
    registry.artifact_register(
        data=text.encode("utf-8"),
        text=text,
        kind="model_output",
        media_type="text/markdown",
        title=f"{Run.Kind(run.kind).label} draft v{version.number} (run {run.pk}, {stage.name})",
        case=run.case,
        source=f"run {run.pk} stage {stage.position} {stage.name}",
        created_by=user,
    )
    return version


def event_output(stage: Stage) -> dict[str, object]:
    """What a stage's "succeeded" event carries: its structured answer and its version."""
    return {
        "json": stage.output_json,
        "version": stage.version.number if stage.version else None,
        "sha256": hashlib.sha256(stage.output_text.encode()).hexdigest()
        if stage.output_text
        else None,
    }
