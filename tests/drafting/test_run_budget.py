"""Issue 29, requirement 4: each stage's window is planned across instructions, the draft under
review, evidence and reply (apps/drafting/pipeline/budget.py), so that a draft written to the
run's limit still fits the heavy reasoner, the reviewer and the revision (in sections where
needed: tests/drafting/test_run_sections.py); a run that cannot fit the routed deployments is
refused at start with the arithmetic, before any job is queued."""

import pytest
from django.test import Client
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import Role, RoleRoute
from apps.drafting.models import Run, Stage
from apps.drafting.pipeline import budget
from apps.drafting.services import runs
from tests.cluster.dispatch_fixtures import backend_make, closed_port_url, deployment_make
from tests.drafting import run_fixtures as rf

MOTION = runs.stage_plan(kind="motion", high_stakes=False)
INSTRUCTIONS = "Draft a motion on the lease."


def _route_all(*, context_size: int, parallel_slots: int = 1) -> None:
    backend = backend_make(base_url=closed_port_url(), board="board-budget")
    deployment = deployment_make(backend, context_size=context_size, parallel_slots=parallel_slots)
    for position, role in enumerate(Role.values, start=1):
        RoleRoute.objects.create(role=role, position=position, deployment=deployment)


@pytest.mark.django_db
def test_a_motion_that_cannot_fit_the_routed_slots_is_refused_at_start_with_the_arithmetic(
    lawyer_api: Client, lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    _route_all(context_size=2048)
    body = {"kind": "motion", "packet_id": packet.pk, "instructions": INSTRUCTIONS}

    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/runs", body, content_type="application/json"
    )

    assert response.status_code == 400, response.content
    answer = response.json()
    assert answer["code"] == "run_does_not_fit"
    # The reviewer reads a draft and answers in up to 1,024 tokens (half the slot): with even
    # the smallest section of a draft it does not fit.
    fixed = budget.fixed_tokens("adversary", kind="motion", instructions=INSTRUCTIONS)
    total = fixed + 256 + 512 + 1024 + 64
    assert total > 2048
    assert answer["detail"] == (
        f"This run does not fit the models routed now: the adversarial reviewer needs {fixed:,} "
        "(template and instructions) + 256 (a section of the draft under review, at least) + "
        "512 (evidence at least) + "
        f"1,024 (the reply) + 64 (margin) = {total:,} tokens; the smallest routed slot for the "
        "Adversarial reviewer role holds 2,048. Shorten the instructions, or ask an admin to "
        "route a deployment with a larger context per slot."
    )
    assert not Run.objects.exists()
    assert not ProcrastinateJob.objects.filter(task_name="drafting.run_stage").exists()


@pytest.mark.django_db
def test_a_summary_fits_where_a_motion_does_not_and_an_oversized_prompt_is_refused(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    _route_all(context_size=2048)

    run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
    assert run.stages.get().status == Stage.Status.QUEUED

    # Instructions that leave the summarizer no room at all: refused, naming the summarizer.
    with pytest.raises(budget.RunDoesNotFit, match=r"the summarizer needs .* holds 2,048\."):
        rf.start(user=lawyer, case=case, packet=packet, kind="summary", instructions="x " * 1500)


def test_a_stages_reply_shrinks_to_what_its_prompt_leaves() -> None:
    fixed = {name: budget.fixed_tokens(name, kind="motion", instructions=INSTRUCTIONS)
             for name in budget.MODEL_STAGES}  # fmt: skip
    windows = {name: 4096 for name in MOTION if name in budget.MODEL_STAGES}
    limit = budget.draft_limit(MOTION, windows=windows, fixed=fixed)

    # In a stage: the reply shrinks to what the prompt leaves beside the evidence minimum; a
    # structured reply keeps its schema's room.
    assert budget.reply_tokens("reasoner", window=4096, prompt=2500, draft_left=limit) == 1020
    assert budget.reply_tokens("reasoner", window=4096, prompt=300, draft_left=1000) == 1000
    assert budget.reply_tokens("adversary", window=4096, prompt=3000, draft_left=limit) == 1024


def _verifier_finding(number: int, status: str) -> dict[str, object]:
    # Varied, long claims and messages: amounts and Bates-like numbers (digits count one
    # token each), words, quotes.
    claim = (
        f"On March {number % 28 + 1}, 20{number % 30:02d} the lessee paid ${number * 7919:,}.37 "
    )
    return {
        "text": claim * (1 + number % 4),
        "status": status,
        "message": f"No frozen page carries {number * 7919:,}.37; ACME{number:07d} " * 6,
    }


def test_the_revision_is_given_findings_within_the_reserve_blocking_ones_first() -> None:
    """The revision's prompt keeps FINDINGS_TOKENS of its window for the findings: however many
    the verifier and the reviewer found, their lines fit it (as counted conservatively), what
    blocks approval comes first, and the findings left out are counted."""
    from apps.cluster.tokens import estimate_tokens
    from apps.drafting.pipeline.outputs import revision_findings

    statuses = ["needs_review", "unsupported", "contradicted", "needs_review"]
    verifier = [_verifier_finding(n, statuses[n % 4]) for n in range(300)]
    reviewer = [
        {"kind": "weak_point", "quote": "9" * 110, "comment": "1,2,3 " * 40} for _ in range(3)
    ]
    problems, attacks = revision_findings(verifier, reviewer)

    assert estimate_tokens(problems) + estimate_tokens(attacks) <= budget.FINDINGS_TOKENS
    problem_lines = problems.splitlines()
    listed, left_out = problem_lines[:-1], problem_lines[-1]
    assert left_out == f"- … and {300 - len(listed)} more findings like these, not listed here."
    assert listed and all(": contradicted: " in line for line in listed[:10])
    shown = [line.split("”: ")[1].split(":")[0] for line in listed]
    order = {"contradicted": 0, "unsupported": 1, "needs_review": 2}
    assert shown == sorted(shown, key=order.__getitem__)
    # The reviewer's few findings are listed (cut to a line), or counted when they cannot fit.
    assert attacks.count("\n") <= 3 and attacks != "(none)"


def test_a_few_findings_are_all_given_to_the_revision_whole() -> None:
    from apps.drafting.pipeline.outputs import revision_findings

    verifier = [
        {"text": "$4,100", "status": "unsupported", "message": "No page carries $4,100."},
        {"text": "ACME000017", "status": "needs_review", "message": "Check the page."},
    ]
    reviewer = [{"kind": "weak_point", "quote": "the notice", "comment": "Which notice?"}]
    problems, attacks = revision_findings(verifier, reviewer)
    assert problems == (
        "- “$4,100”: unsupported: No page carries $4,100.\n"
        "- “ACME000017”: needs_review: Check the page."
    )
    assert attacks == "- weak_point: “the notice”: Which notice?"
    assert revision_findings([], []) == ("(none)", "(none)")
