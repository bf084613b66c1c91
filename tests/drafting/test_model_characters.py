"""Whatever a model writes is data, never a crash (issue 29, requirement 6): control characters,
noncharacters, bidi overrides and JSON escapes of NUL and lone surrogates from a real (fake)
llama-server over HTTP are dropped by lexweb.text.model_text before anything stores, checks,
streams or exports them; the draft check and the verifier see the stored text."""

import io
import json
from typing import Any

import docx
import pymupdf
import pytest
from django.test import Client
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import User
from apps.cases.models import Case
from apps.drafting.models import Draft, DraftVersion, Run, RunEvent, Stage
from apps.verification.models import Verification
from tests.drafting import run_fixtures as rf
from tests.drafting.makers import draft_of, packet_of, read_pdf, verified

UNSAFE = {chr(c) for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0))}
UNSAFE |= {"\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068"}
UNSAFE |= {"\u2069", "\ufffe", "\uffff"}


def _streamed(run: Run, stage: Stage) -> str:
    events = RunEvent.objects.filter(run=run, kind="stage.tokens", payload__stage_id=stage.pk)
    return "".join(str(e.payload["text"]) for e in events.order_by("seq"))


def _jobs_failed() -> int:
    return ProcrastinateJob.objects.filter(task_name="drafting.run_stage", status="failed").count()


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_reply_of_only_control_characters_fails_its_stage_with_the_true_reason(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    controls = "\x05 \x14 \x01\x02 \x7f \x85 \x1b\x07 \x00"
    with rf.site_running({"summarizer": controls}):
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
        with rf.ThreadWorker():
            run = rf.finished(run, timeout=30)

    stage = run.stages.get(name="summarizer")
    assert run.status == Run.Status.FAILED and stage.status == Stage.Status.FAILED
    assert "The summarizer wrote no text (" in stage.error and "control characters" in run.error
    assert "database" not in run.error
    assert stage.finish_reason == "stop" and stage.completion_tokens > 0
    assert not DraftVersion.objects.exists()
    assert not set(_streamed(run, stage)) & UNSAFE and not set(stage.output_text) & UNSAFE
    assert _jobs_failed() == 0  # the job ended normally: nothing was left for the recovery


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_bidi_overrides_and_noncharacters_never_reach_the_draft_its_checks_or_its_events(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    reply = (
        "The lease began on 3 March 2024 [“record.pdf” p. 1]. \u202eThe rent was paid.\u202c"
        "\ufffe\x05 \u2066Signed\u2069\uffff \x14end."
    )
    clean = "The lease began on 3 March 2024 [“record.pdf” p. 1]. The rent was paid. Signed end."
    with rf.site_running({**rf.REPLIES, "drafter": reply}):
        run = rf.start(user=lawyer, case=case, packet=packet, kind="affidavit")
        with rf.ThreadWorker():
            run = rf.finished(run, timeout=60)

    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    stage = run.stages.get(name="drafter")
    version = DraftVersion.objects.get(draft=run.draft, number=1)
    assert version.text == stage.output_text == _streamed(run, stage) == clean
    # The verifier checked the stored text: each claim is found at its place in that text.
    verification = Verification.objects.get(version=version)
    assert verification.status == Verification.Status.DONE and verification.claim_count >= 1
    findings = list(verification.findings.all())
    assert findings and all(clean[f.start : f.end] == f.text for f in findings)
    assert _jobs_failed() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_nul_and_lone_surrogate_escapes_in_a_structured_reply_are_stored_cleaned(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    gate = (
        '{"answer": "yes", "reasons": ["The lease\\u0000 is in the record.\\ud800"], '
        '"missing_evidence": ["\\u0000notice\\udfff", "\\u202erent"]}'
    )
    with rf.site_running({**rf.REPLIES, "gate": gate}):
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run, timeout=60)

    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    stage = run.stages.get(name="gate")
    assert stage.output_json == {
        "answer": "yes",
        "reasons": ["The lease is in the record."],
        "missing_evidence": ["notice", "rent"],
    }
    assert stage.output_text == gate  # the reply as written: its escapes are plain ASCII
    event = RunEvent.objects.filter(
        run=run, kind="stage.status", payload__stage_id=stage.pk, payload__status="succeeded"
    ).get()
    assert event.payload["output"]["json"] == stage.output_json


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_reply_the_draft_check_refuses_fails_its_stage_with_that_reason_not_its_job(
    lawyer: User, case: Case, settings: Any
) -> None:
    settings.LEXWEB_MAX_DRAFT_BYTES = 1024
    packet = rf.frozen_packet(case=case, user=lawyer)
    reply = " ".join(f"paragraph{n}" for n in range(200))  # 2,489 bytes, 200 tokens
    with rf.site_running({"summarizer": reply}):
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
        with rf.ThreadWorker():
            run = rf.finished(run, timeout=30)

    stage = run.stages.get()
    assert run.status == Run.Status.FAILED and stage.status == Stage.Status.FAILED
    assert stage.error.startswith("The draft is 2,489 bytes; the limit is 1,024 bytes.")
    assert run.error == f"Summarizer: {stage.error}"
    assert not DraftVersion.objects.exists() and _jobs_failed() == 0


# --- Exports of any stored text ----------------------------------------------------------------

HOSTILE = (
    "# Motion\u202e to dismiss\n\nThe lease began on 3 March 2024.\ufffe\x05 "
    "\u202eThe rent was paid.\u202c\x0c\uffff\n\n- Item\x1b one"
)


@pytest.fixture
def hostile_draft(lawyer: User, case: Case) -> Draft:
    document = read_pdf(case=case, user=lawyer, lines=["The lease began on 3 March 2024."])
    packet = packet_of(case=case, user=lawyer, documents=[document])
    draft = draft_of(case=case, user=lawyer, packet=packet, title="Brief\u202e one\x07")
    # A row written some other way than the draft check (an import, an older version).
    DraftVersion.objects.filter(draft=draft).update(text=HOSTILE)
    verified(draft=draft, user=lawyer, statuses=["supported"])
    return draft


def _export(client: Client, draft: Draft, fmt: str) -> Any:
    return client.post(
        f"/api/v1/cases/{draft.case_id}/drafts/{draft.pk}/versions/1/export",
        {"format": fmt},
        content_type="application/json",
    )


@pytest.mark.django_db
def test_a_docx_export_of_a_version_holding_controls_and_overrides_succeeds_clean(
    lawyer_api: Client, hostile_draft: Draft
) -> None:
    response = _export(lawyer_api, hostile_draft, "docx")

    assert response.status_code == 200, response.content[:300]
    document = docx.Document(io.BytesIO(response.content))
    # After the case's caption (court, title, number, the draft's title: four lines).
    text = "\n".join(paragraph.text for paragraph in document.paragraphs[4:])
    assert (
        text == "Motion to dismiss\nThe lease began on 3 March 2024. The rent was paid.\nItem one"
    )
    assert document.paragraphs[3].text == "Brief one v1"
    assert document.core_properties.title == "Brief one v1"


@pytest.mark.django_db
def test_a_pdf_export_of_a_version_holding_overrides_shows_no_reversed_text(
    lawyer_api: Client, hostile_draft: Draft
) -> None:
    response = _export(lawyer_api, hostile_draft, "pdf")

    assert response.status_code == 200, response.content[:300]
    with pymupdf.open(stream=response.content, filetype="pdf") as pdf:
        text = " ".join(" ".join(page.get_text().split()) for page in pdf)
    assert "The rent was paid." in text and "Motion to dismiss" in text
    assert "diap saw tner" not in text and not set(text) & UNSAFE
    assert json.loads(json.dumps(text)) == text
