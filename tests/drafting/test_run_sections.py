"""Issue 29, requirement 4: a draft written to the drafter's own limit still fits the heavy
reasoner, the adversarial reviewer and the revision, which read it in sections where it does not
fit their window whole (apps/drafting/pipeline/sections.py; docs/architecture/drafting.md, "Long
drafts reviewed in sections"). Fake llama-servers over HTTP with small slots; the reviewing
stages' fakes write their replies from the prompt they are sent (the demo writer)."""

import asyncio
import itertools
import json

import pytest

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import CallRecord
from apps.cluster.tokens import estimate_tokens
from apps.drafting.models import Run, RunEvent, Stage
from apps.drafting.pipeline import budget, sections
from apps.drafting.services import runs
from lexweb_dev.fakebackend.tokens import count_text_tokens
from tests.drafting import run_fixtures as rf

MOTION = runs.stage_plan(kind="motion", high_stakes=False)
INSTRUCTIONS = "Draft a motion on the lease."
SLOT = 2560


async def _estimate(text: str) -> int:
    return estimate_tokens(text)


def _plan(draft: str, limit: int) -> list[sections.Section]:
    return asyncio.run(sections.sections_plan(draft, limit, _estimate))


def test_a_long_draft_is_cut_at_paragraphs_into_sections_that_cover_it_whole() -> None:
    draft = "# Motion\n\n" + "\n\n".join(
        f"## Point {k}\n\nThe lessee paid the rent in month {k}. " + "It was accepted. " * 30
        for k in range(1, 7)
    )
    parts = _plan(draft, 300)

    assert len(parts) > 3
    assert "".join(part.text(draft) for part in parts) == draft
    for part in parts:
        assert estimate_tokens(part.text(draft)) <= 300
        assert part.start == 0 or draft[part.start - 2 : part.start] == "\n\n"
    # A heading opens its section, never ends one with its text left for the next.
    for part in parts:
        last = part.text(draft).rstrip().splitlines()[-1]
        assert not last.startswith("## ")
    assert sum(part.text(draft).startswith("## Point") for part in parts) >= 5


def test_a_paragraph_over_a_section_is_cut_at_sentences_and_a_word_over_one_at_characters() -> None:
    sentences = " ".join(f"Sentence {k} of the one long paragraph ends here." for k in range(60))
    parts = _plan(sentences, 120)
    assert len(parts) > 2 and "".join(part.text(sentences) for part in parts) == sentences
    for part in parts[:-1]:
        assert part.text(sentences).endswith("here. ")
        assert estimate_tokens(part.text(sentences)) <= 120

    blob = "Intro.\n\n" + "x" * 3000
    parts = _plan(blob, 200)
    assert "".join(part.text(blob) for part in parts) == blob
    assert all(estimate_tokens(part.text(blob)) <= 200 for part in parts)


def test_findings_move_to_the_whole_draft_and_the_revision_gets_its_sections_findings() -> None:
    draft = "First part.\n\nSecond part says the rent was paid.\n"
    second = sections.Section(start=13, end=len(draft), tokens=10)
    found = [{"quote": "the rent was paid", "start": 17, "end": 34}, {"quote": "x", "start": None}]
    moved = sections.findings_moved(found, second)
    assert draft[moved[0]["start"] : moved[0]["end"]] == "the rent was paid"
    assert moved[1]["start"] is None
    assert sections.in_section({"start": 20}, second) and sections.in_section({}, second)
    assert not sections.in_section({"start": 3}, second)
    assert sections.joint("a\n") == "\n" and sections.joint("a") == "\n\n"
    assert sections.joint("a\n\n") == ""


def test_the_plan_takes_the_drafters_limit_and_sections_for_the_stages_reading_the_draft() -> None:
    fixed = {name: budget.fixed_tokens(name, kind="motion", instructions=INSTRUCTIONS)
             for name in budget.MODEL_STAGES}  # fmt: skip
    windows = {name: 4096 for name in MOTION if name in budget.MODEL_STAGES}

    limit = budget.draft_limit(MOTION, windows=windows, fixed=fixed)

    drafter = fixed["drafter"] + limit + budget.MIN_EVIDENCE_TOKENS + budget.PROMPT_MARGIN_TOKENS
    assert drafter == 4096
    # Read whole, a draft that long would not fit the revision (it reads it and writes it).
    whole = fixed["revision"] + 2 * limit + budget.MIN_EVIDENCE_TOKENS
    assert whole > 4096
    for name in budget.READS_DRAFT:
        size = budget.section_tokens(name, window=4096, fixed=fixed[name])
        reply = size if name in budget.WRITES_DRAFT else budget.MAX_TOKENS[name]
        total = fixed[name] + size + budget.MIN_EVIDENCE_TOKENS + reply
        assert budget.MIN_SECTION_TOKENS < size < limit
        assert total + budget.PROMPT_MARGIN_TOKENS <= 4096 < total + budget.PROMPT_MARGIN_TOKENS + 2


def _long_draft(tokens: int) -> str:
    """A motion of about `tokens` tokens (as the fake's tokenizer counts them), in points that
    each cite the record."""
    lines = ["# Motion for summary judgment", ""]
    point = 0
    while count_text_tokens("\n".join(lines)) < tokens:
        point += 1
        lines += [
            f"## Point {point}",
            "",
            "The lease began on 3 March 2024 at a monthly rent of $1,250.00 [“record.pdf” p. 1].",
            "",
            f"On point {point}, the lessee relies on the lease agreement between Acme Ltd and "
            "Widget LLC [“record.pdf” p. 1].",
            "",
        ]
    return "\n".join(lines)


def _streamed(stage: Stage) -> str:
    events = RunEvent.objects.filter(
        run_id=stage.run_id, kind="stage.tokens", payload__stage_id=stage.pk
    ).order_by("seq")
    return "".join(event.payload["text"] for event in events)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_motion_drafted_to_its_limit_is_reviewed_in_sections_and_waits_for_approval(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    fixed = {name: budget.fixed_tokens(name, kind="motion", instructions=INSTRUCTIONS)
             for name in budget.MODEL_STAGES}  # fmt: skip
    windows = {name: SLOT for name in MOTION if name in budget.MODEL_STAGES}
    limit = budget.draft_limit(MOTION, windows=windows, fixed=fixed)
    draft = _long_draft(limit - 80)
    drafted = count_text_tokens(draft)
    # Without sections the reviewing stages could not read it: the revision would need the
    # draft twice (read and written), the reviewer the draft and its reply, beside the rest.
    assert drafted <= limit
    for name in budget.READS_DRAFT:
        assert budget.section_tokens(name, window=SLOT, fixed=fixed[name]) < drafted
    assert fixed["revision"] + 2 * drafted + budget.MIN_EVIDENCE_TOKENS > SLOT

    with rf.site_running({**rf.REPLIES, "drafter": draft}) as site:
        for deployment in site.deployments.values():
            deployment.context_size, deployment.parallel_slots = SLOT, 1
            deployment.save(update_fields=["context_size", "parallel_slots"])
        for role, fake in site.fakes.items():
            fake.settings.n_ctx_per_slot = SLOT
            if role in ("reasoner", "adversary"):
                fake.settings.reply, fake.settings.demo_writer = None, True
        run = rf.start(user=lawyer, case=case, packet=packet, instructions=INSTRUCTIONS)
        with rf.ThreadWorker():
            # The revision runs on the drafter's deployment: once the draft is written, that
            # model writes from its prompt too (the revision is three stages later).
            rf.eventually(
                lambda: (
                    Stage.objects.get(run=run, name="drafter").status != Stage.Status.QUEUED
                    and Stage.objects.get(run=run, name="drafter").status != Stage.Status.RUNNING
                ),
                timeout=60,
            )
            drafter_fake = site.fakes["drafter"].settings
            drafter_fake.reply, drafter_fake.demo_writer = None, True
            run = rf.finished(run, timeout=180)

    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    stages = {stage.name: stage for stage in run.stages.select_related("version")}
    assert stages["drafter"].output_text == draft and stages["drafter"].finish_reason == "stop"
    versions = {v.number: v.text for v in run.draft.versions.all()}
    read_by = {"reasoner": versions[1], "adversary": versions[2], "revision": versions[2]}
    for name in ("reasoner", "adversary", "revision"):
        stage = stages[name]
        parts = stage.evidence_budget["sections"]
        assert len(parts) >= 2, name
        # The sections cover the draft the stage read, in order.
        assert parts[0]["start"] == 0 and parts[-1]["end"] == len(read_by[name])
        assert all(a["end"] == b["start"] for a, b in itertools.pairwise(parts))
        prompts = json.loads(stage.prompt_text)
        assert len(prompts) == len(parts)
        for part, messages in zip(parts, prompts, strict=True):
            text = read_by[name][part["start"] : part["end"]].rstrip()
            assert f"The draft:\n{text}\n" in messages[1]["content"]
            assert f"part {part['part']} of {len(parts)}" in messages[0]["content"]
        records = CallRecord.objects.filter(stage=stage)
        assert records.count() == len(parts) + stage.continuations
        assert {record.deployment_id for record in records} == {stage.deployment_id}
        # Every call fitted its slot.
        assert all(r.prompt_tokens + r.completion_tokens <= SLOT for r in records)
        # Its tokens streamed as one stage's, the parts joined as stored.
        assert _streamed(stage) == stage.output_text
    # The reasoner's parts, joined, are its version: every point, in order, once.
    reasoned = stages["reasoner"].version.text
    headings = [line for line in reasoned.splitlines() if line.startswith("## Point")]
    assert headings == [line for line in draft.splitlines() if line.startswith("## Point")]
    # The reviewer's findings come from several sections, anchored in the whole draft.
    findings = stages["adversary"].output_json["findings"]
    anchored = [f for f in findings if f["start"] is not None]
    assert len(anchored) >= len(stages["adversary"].evidence_budget["sections"])
    for finding in anchored:
        assert versions[2][finding["start"] : finding["end"]] == finding["quote"]
    assert stages["revision"].version.number == 3 and stages["revision"].finish_reason == "stop"
