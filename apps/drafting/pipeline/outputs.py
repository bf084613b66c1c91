"""What each stage asks for and what it keeps: JSON schemas of the structured answers (sent as
llama-server `json_schema` / Ollama `format`), their parsing (an answer that is not valid JSON
or breaks its schema fails the stage with a clear message), the adversary's findings anchored
to spans of the draft, the financial table, and the draft versions the text stages write.
"""

import dataclasses
import datetime
import hashlib
import json
from decimal import Decimal, InvalidOperation

from django.conf import settings

from apps.cluster.tokens import estimate_tokens
from apps.drafting.models import Draft, DraftVersion, Run, Stage
from apps.drafting.pipeline import sections
from apps.drafting.pipeline.budget import FINDINGS_TOKENS, scope_sentence
from apps.drafting.pipeline.endings import Cut
from apps.drafting.pipeline.work import Outcome, Work
from apps.drafting.services import drafts as draft_services
from apps.evidence.prompt import page_label
from apps.evidence.services import registry
from apps.verification.models import Finding, Verification
from lexweb.errors import DomainError
from lexweb.text import model_data

N = Stage.Name
WRITES_VERSION = {N.DRAFTER, N.REASONER, N.REVISION, N.SUMMARIZER, N.VALIDATION}
_DRAFT_KIND: dict[str, str] = {
    Run.Kind.AFFIDAVIT: Draft.Kind.AFFIDAVIT,
    Run.Kind.MOTION: Draft.Kind.MOTION,
    Run.Kind.SUMMARY: Draft.Kind.SUMMARY,
    Run.Kind.FINANCIAL: Draft.Kind.OTHER,
}
# Every string and list is bounded, so that the longest reply each schema admits fits its
# stage's max_tokens (cluster.backends.grammar.worst_case_tokens; tests/drafting/
# test_structured_budgets.py checks each one).
GATE_MAX_REASONS = 3
GATE_MAX_MISSING = 3
GATE_REASON_CHARS = 90
GATE_MISSING_CHARS = 50
ADVERSARY_MAX_FINDINGS = 3
ADVERSARY_QUOTE_CHARS = 110
ADVERSARY_COMMENT_CHARS = 160
# A transaction's fields and their lengths: an ISO date, a decimal amount, a name, a line of
# description, a Bates label.
TRANSACTION_CHARS = {"date": 10, "amount": 20, "counterparty": 60, "description": 100, "bates": 40}
TRANSACTION_FIELDS = list(TRANSACTION_CHARS)
EXTRACTOR_MAX_TRANSACTIONS = 6


def _text(chars: int) -> dict[str, object]:
    return {"type": "string", "maxLength": chars}


def _texts(items: int, chars: int) -> dict[str, object]:
    return {"type": "array", "items": _text(chars), "maxItems": items}


GATE_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "enum": ["yes", "no", "insufficient"]},
        "reasons": _texts(GATE_MAX_REASONS, GATE_REASON_CHARS),
        "missing_evidence": _texts(GATE_MAX_MISSING, GATE_MISSING_CHARS),
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
            "maxItems": ADVERSARY_MAX_FINDINGS,
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ADVERSARY_KINDS},
                    "quote": _text(ADVERSARY_QUOTE_CHARS),
                    "comment": _text(ADVERSARY_COMMENT_CHARS),
                },
                "required": ["kind", "quote", "comment"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["findings"],
    "additionalProperties": False,
}


def transactions_limit() -> int:
    """Transactions one extractor reply may list: LEXWEB_RUN_MAX_TRANSACTIONS, but no more than
    the worst-case reply of EXTRACTOR_MAX_TRANSACTIONS fits the stage's max_tokens."""
    return min(settings.LEXWEB_RUN_MAX_TRANSACTIONS, EXTRACTOR_MAX_TRANSACTIONS)


def extractor_schema() -> dict[str, object]:
    return {
        "type": "object",
        "properties": {
            "transactions": {
                "type": "array",
                "maxItems": transactions_limit(),
                "items": {
                    "type": "object",
                    "properties": {name: _text(n) for name, n in TRANSACTION_CHARS.items()},
                    "required": TRANSACTION_FIELDS,
                    "additionalProperties": False,
                },
            }
        },
        "required": ["transactions"],
        "additionalProperties": False,
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
    problems, attacks = revision_findings(
        _items(verifier.get("findings")), _items(adversary.get("findings"))
    )
    return {
        "kind": Run.Kind(work.kind).label.lower(),
        "instructions": work.instructions,
        "draft": work.draft_text,
        "verifier_findings": problems,
        "reviewer_findings": attacks,
        "max_transactions": str(transactions_limit()),
        "max_reasons": str(GATE_MAX_REASONS),
        "reason_chars": str(GATE_REASON_CHARS),
        "max_missing": str(GATE_MAX_MISSING),
        "missing_chars": str(GATE_MISSING_CHARS),
        "max_findings": str(ADVERSARY_MAX_FINDINGS),
        "quote_chars": str(ADVERSARY_QUOTE_CHARS),
        "comment_chars": str(ADVERSARY_COMMENT_CHARS),
        # The whole draft; a section's prompt says which part it is (pipeline.sections).
        "scope": scope_sentence(work.name),
    }


def section_values(
    work: "Work", values: dict[str, str], *, section: sections.Section, part: int, parts: int
) -> dict[str, str]:
    """`values` (template_values) for part `part` of `parts` of the draft (pipeline.sections):
    the section as the draft, the scope sentence saying which part it is, and for the
    revision the findings in that section and those anchored nowhere."""
    section_values = values | {
        "draft": section.text(work.draft_text).rstrip(),
        "scope": scope_sentence(work.name, part=part, parts=parts),
    }
    if work.name == N.REVISION:
        verifier = _items(work.earlier.get(N.VERIFIER, {}).get("findings"))
        adversary = _items(work.earlier.get(N.ADVERSARY, {}).get("findings"))
        problems, attacks = revision_findings(
            [item for item in verifier if sections.in_section(item, section)],
            [item for item in adversary if sections.in_section(item, section)],
        )
        section_values |= {"verifier_findings": problems, "reviewer_findings": attacks}
    return section_values


# A finding's claim and message as the revision is given them, at most (the stored finding keeps
# them whole).
REVISION_CLAIM_CHARS = 160
REVISION_MESSAGE_CHARS = 240
# The order the revision is given findings in: what blocks approval first.
_REVISION_ORDER: dict[str, int] = {
    Finding.Status.CONTRADICTED: 0,
    Finding.Status.UNSUPPORTED: 1,
    Finding.Status.NEEDS_REVIEW: 3,
}
_REVIEWER_RANK = 2  # the reviewer's findings: after what blocks, before what needs review


def revision_findings(
    verifier: list[dict[str, object]],
    reviewer: list[dict[str, object]],
    *,
    budget: int = FINDINGS_TOKENS,
) -> tuple[str, str]:
    """The verifier's and the reviewer's findings as the revision's prompt lists them, within
    `budget` tokens together as `estimate_tokens` counts them (more than a real tokenizer): the
    window plan keeps FINDINGS_TOKENS of the revision's window for them (budget.fixed_tokens),
    so they can never squeeze out the draft it rewrites. Each is cut to a line; what blocks
    approval comes first (the verifier's contradicted, then unsupported), then the reviewer's,
    then what needs review; a section whose findings do not all fit ends with a line counting
    those left out (the verifier checks the revision again in any case)."""
    problems = [
        (
            _REVISION_ORDER.get(str(item.get("status")), 4),
            key,
            f"- “{_short(str(item.get('text')), REVISION_CLAIM_CHARS)}”: {item.get('status')}: "
            f"{_short(str(item.get('message')), REVISION_MESSAGE_CHARS)}",
        )
        for key, item in enumerate(verifier)
    ]
    attacks = [
        (
            _REVIEWER_RANK,
            len(problems) + key,
            "- "
            + _short(
                f"{item.get('kind')}: “{item.get('quote')}”: {item.get('comment')}",
                REVISION_CLAIM_CHARS + REVISION_MESSAGE_CHARS,
            ),
        )
        for key, item in enumerate(reviewer)
    ]
    # Room for a counting line under each section.
    left = budget - 2 * _LEFT_OUT_TOKENS
    kept: set[int] = set()
    for _, key, line in sorted(problems + attacks):
        cost = estimate_tokens(line) + 1
        if cost <= left:
            kept.add(key)
            left -= cost
    return _section(problems, kept), _section(attacks, kept)


# What "- … and 12345 more findings like these, not listed here." costs, at most.
_LEFT_OUT_TOKENS = 24


def _section(lines: list[tuple[int, int, str]], kept: set[int]) -> str:
    shown = [line for _, key, line in sorted(lines) if key in kept]
    if len(shown) < len(lines):
        shown.append(
            f"- … and {len(lines) - len(shown)} more findings like these, not listed here."
        )
    return "\n".join(shown) or "(none)"


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _items(value: object) -> list[dict[str, object]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


# --- Parsing model answers -------------------------------------------------------------------


def _json_object(text: str, what: str) -> dict[str, object]:
    """The reply's JSON object, every string in it (keys included) cleaned by the model-text
    rule: "\\u0000" or "\\ud800" inside a string must not fail the database write."""
    try:
        data = model_data(json.loads(text))
    except json.JSONDecodeError as exc:
        raise DomainError(
            f"The {what} did not answer valid JSON: invalid JSON at character {exc.pos} "
            f"({exc.msg}); the stage failed. Start the run again, or ask an admin to check the "
            "model."
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
    limit = transactions_limit()
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


class ReplyRejected(DomainError):
    """A structured stage's reply that is not the JSON asked for. Carries the reply and the
    call's custody (model, deployment, token counts, finish reason), which the failed stage
    keeps."""

    code = "reply_rejected"

    def __init__(self, message: str, *, text: str, custody: dict[str, object]) -> None:
        super().__init__(message)
        self.text = text
        self.custody = custody


class ReplyTruncated(ReplyRejected):
    """A free-text stage's reply still cut at its limit after the continuations its policy
    allows (pipeline.endings): never stored as a draft version; the stage keeps the cut text
    and the calls' custody."""

    code = "reply_truncated"


def _structured(work: "Work", text: str) -> dict[str, object]:
    if work.name == N.GATE:
        return gate_parse(text)
    if work.name == N.ADVERSARY:
        return adversary_parse(text, draft=work.draft_text)
    return extractor_parse(text)


def model_outcome(
    work: "Work",
    *,
    text: str,
    custody: dict[str, object],
    truncated: str = "",
    kept: Cut | None = None,
) -> "Outcome":
    """The stage's outcome from its reply (already cleaned by lexweb.text.model_text). A
    structured reply that does not parse raises ReplyRejected, saying "cut at the limit (N
    tokens)" when the backend stopped it at max_tokens, else why it is not the JSON asked for.
    A free-text reply with no text raises ReplyRejected; one that ended cut at its limit
    (after its continuations, pipeline.endings) is kept when its stage keeps it (`kept`: the
    outcome carries its tokens for its version, and {"truncated": ...} as its data), else
    raises ReplyTruncated with `truncated`, the message endings.truncated_message wrote."""

    if work.name in (N.GATE, N.ADVERSARY, N.EXTRACTOR):
        try:
            return Outcome(text=text, data=_structured(work, text), custody=custody)
        except DomainError as error:
            message = error.message
            if custody.get("finish_reason") == "length":
                what = Stage.Name(work.name).label.lower()
                message = (
                    f"The {what}'s reply was cut at the limit "
                    f"({custody.get('completion_tokens')} tokens) before its JSON was complete; "
                    "the stage failed. Start the run again, or ask an admin to check the model."
                )
            raise ReplyRejected(message, text=text, custody=custody) from None
    what = Stage.Name(work.name).label.lower()
    if not text.strip():
        raise ReplyRejected(
            f"The {what} wrote no text ({custody.get('completion_tokens', 0)} tokens of nothing "
            "but white space or control characters, which are not kept); the stage failed. "
            "Start the run again, or ask an admin to check the model.",
            text=text,
            custody=custody,
        )
    if custody.get("finish_reason") == "length" and kept is not None:
        return Outcome(
            text=text,
            data={"truncated": kept.as_json()},
            custody=custody,
            truncated_tokens=kept.tokens,
        )
    if custody.get("finish_reason") == "length":
        message = truncated or (
            f"The {what}'s reply was cut at its limit ({custody.get('completion_tokens')} "
            "tokens); no draft version was saved from it."
        )
        raise ReplyTruncated(message, text=text, custody=custody)
    return Outcome(text=text, custody=custody)


def sections_outcome(
    work: "Work",
    *,
    replies: list[tuple[sections.Section, str, dict[str, object]]],
    text: str,
    custody: dict[str, object],
    kept: Cut | None,
) -> "Outcome":
    """The outcome of a stage run in sections (pipeline.sections): `replies` holds each
    section, its reply and that reply's own custody (token counts, finish reason); `text` the
    replies joined as they streamed, `custody` the stage's. The reviewer's findings are every
    section's, anchored in the whole draft; a writing stage's text is the joined replies, kept
    truncated (`kept`) when a section ended cut. A section's reply that is not the JSON asked
    for, or holds no text, fails the stage saying which part."""
    parts = len(replies)
    what = Stage.Name(work.name).label.lower()
    if work.name == N.ADVERSARY:
        findings: list[dict[str, object]] = []
        for part, (section, reply, own) in enumerate(replies, start=1):
            part_work = dataclasses.replace(work, draft_text=section.text(work.draft_text))
            try:
                outcome = model_outcome(part_work, text=reply, custody=own)
            except ReplyRejected as error:
                raise ReplyRejected(
                    f"Part {part} of {parts} of the draft: {error.message}",
                    text=text,
                    custody=custody,
                ) from None
            found = _items((outcome.data or {}).get("findings"))
            findings += sections.findings_moved(found, section)
        return Outcome(text=text, data={"findings": findings}, custody=custody)
    for part, (_section, reply, own) in enumerate(replies, start=1):
        if not reply.strip():
            raise ReplyRejected(
                f"The {what} wrote no text for part {part} of {parts} of the draft "
                f"({own.get('completion_tokens', 0)} tokens of nothing but white space or "
                "control characters, which are not kept); the stage failed. Start the run "
                "again, or ask an admin to check the model.",
                text=text,
                custody=custody,
            )
    return model_outcome(work, text=text, custody=custody, kept=kept)


# --- Financial validation --------------------------------------------------------------------


def validation_outcome(work: "Work") -> "Outcome":
    """Check each extracted transaction (a real date, a decimal amount, a Bates label of the
    packet) and write the table the verifier then checks, citing each row's Bates number."""

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


def version_store(
    *, run: Run, stage: Stage, text: str, truncated_tokens: int | None = None
) -> DraftVersion:
    """The stage's text as the next version of the run's draft (the draft is created with the
    first one), registered as a generated artifact; marked truncated with `truncated_tokens`
    when the reply was kept cut at its limit (pipeline.endings). Runs inside the caller's
    transaction, so a re-run stage never stores its text twice."""
    content = draft_services.pasted_content(text=text)
    if truncated_tokens is not None:
        content = dataclasses.replace(content, truncated_tokens=truncated_tokens)
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
        packet=run.packet,
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
