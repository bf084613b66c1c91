"""A run's token plan: each model stage's window is shared between its prompt's fixed part
(template and instructions), the draft under review, evidence and the reply, so that a draft
written to its limit still fits every stage after it, read in sections where it must be.

1. Windows: a stage's window is the smallest context a slot has among its role's routable
   deployments (cluster selectors.deployment_context_tokens: the smaller of the configured one
   and what the server reported), as the stage itself will see it.
2. The draft limit D is the most a writing stage (drafter, heavy reasoner, revision) may write
   in all, continuations included: the drafter's MAX_TOKENS times
   (1 + LEXWEB_STAGE_CONTINUATIONS), lowered only until the stages that do not read a draft
   fit their windows with at least MIN_EVIDENCE_TOKENS of evidence and PROMPT_MARGIN_TOKENS to
   spare (the drafter: fixed + evidence + D; the gate, the summarizer, the extractor: fixed +
   evidence + reply).
3. The stages that read the draft (heavy reasoner, adversary, revision) read it in sections
   (pipeline.sections) of at most S tokens each, their own (`section_tokens`):
   - the heavy reasoner and the revision read a section and write it again:
     fixed + S + evidence + S; the revision's fixed part also holds FINDINGS_TOKENS for the
     verifier's and the reviewer's findings it is given;
   - the adversarial reviewer: fixed + S + evidence + its reply (MAX_TOKENS, a bounded schema).
   A draft of S tokens or less is one section: the stage reads it whole, as before.
   Fixed parts are counted with context.estimate_tokens (conservative: more than a real
   tokenizer counts), as no backend is asked at start.
4. At start (`run_plan_check`, called by runs.run_start before anything is written or any job
   queued) a run whose D would fall under MIN_DRAFT_TOKENS, one with a stage reading the draft
   whose S falls under MIN_SECTION_TOKENS, or one of whose other stages cannot fit at all, is
   refused (RunDoesNotFit) with the arithmetic of the stage that does not fit. Any draft up to
   D then fits: a paragraph longer than S is cut at its sentences, then its words.
5. In each stage (`reply_tokens`, pipeline.execute): the reply asked for is the stage's
   MAX_TOKENS (half its window at most), for a writing stage at most what D leaves (a
   section's share of it), and at most what the window leaves after the prompt as counted then
   (the draft or section under review in it) and the evidence minimum; continuations stop at D
   (`draft_room`). So a window that shrank, or a tokenizer that counts more than the plan's
   estimate, shortens the reply and the evidence instead of failing the stage late.
"""

import string
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.conf import settings

from apps.cluster import selectors as cluster_selectors
from apps.cluster.models import Role
from apps.cluster.services import dispatch
from apps.drafting.models import Stage
from apps.drafting.pipeline.context import estimate_message_tokens
from apps.drafting.pipeline.prompts import template_load
from lexweb.errors import DomainError

N = Stage.Name
# Reply limits per stage (capped at half a slot's context, and by the plan).
MAX_TOKENS: dict[str, int] = {
    N.GATE: 512,
    N.DRAFTER: 2048,
    N.REASONER: 2048,
    N.ADVERSARY: 1024,
    N.REVISION: 2048,
    N.SUMMARIZER: 1024,
    N.EXTRACTOR: 2048,
}
MODEL_STAGES = set(MAX_TOKENS)
PROMPT_MARGIN_TOKENS = 64
MIN_EVIDENCE_TOKENS = 512
MIN_DRAFT_TOKENS = 256
# The smallest section of the draft a stage reading it must be able to take (pipeline.sections).
MIN_SECTION_TOKENS = 256
# What the findings given to the revision take at most: outputs.revision_findings lists them
# within it (blocking ones first, the rest counted), however many the verifier found.
FINDINGS_TOKENS = 512
# The smallest reply a stage is ever asked for.
MIN_REPLY_TOKENS = 16
WRITES_DRAFT = {N.DRAFTER, N.REASONER, N.REVISION}
READS_DRAFT = {N.REASONER, N.ADVERSARY, N.REVISION}


class RunDoesNotFit(DomainError):
    """A stage of the run cannot fit the routed deployments' windows (400)."""

    code = "run_does_not_fit"
    field = ""


@dataclass(frozen=True)
class Plan:
    draft_limit: int  # D: tokens a writing stage may write in all
    windows: dict[str, int]  # stage name -> its window
    fixed: dict[str, int]  # stage name -> its prompt's estimated fixed part
    # Stage name -> S, the largest section of the draft it reads at once (READS_DRAFT only).
    sections: dict[str, int] = field(default_factory=dict)


def fixed_tokens(name: str, *, kind: str, instructions: str) -> int:
    """The estimated tokens of the stage's prompt without draft and evidence (other
    placeholders empty), plus FINDINGS_TOKENS for the revision."""
    template = template_load(name)
    names = {
        *string.Template(template.system).get_identifiers(),
        *string.Template(template.user).get_identifiers(),
    }
    values = dict.fromkeys(names, "") | {"kind": kind, "instructions": instructions}
    if "scope" in names:
        # The longer of its two scope sentences: the one a section's prompt carries.
        values["scope"] = scope_sentence(name, part=99, parts=99)
    system, user = template.render(**{key: values[key] for key in names})
    extra = FINDINGS_TOKENS if name == N.REVISION else 0
    return extra + estimate_message_tokens(
        [{"role": "system", "content": system}, {"role": "user", "content": user}]
    )


def stage_window(role: str) -> int | None:
    """The smallest context a slot has among the role's routable deployments now; None for none."""
    deployments = dispatch.deployments_for_role(role)
    contexts = [cluster_selectors.deployment_context_tokens(d) for d in deployments]
    return min(contexts) if contexts else None


def _reply(name: str, window: int, limit: int) -> int:
    """A stage's reply before the plan's fit: its MAX_TOKENS, half its window at most, D for a
    writing stage."""
    reply = min(MAX_TOKENS[name], max(window // 2, MIN_REPLY_TOKENS))
    return min(reply, limit) if name in WRITES_DRAFT else reply


def scope_sentence(name: str, *, part: int = 1, parts: int = 1) -> str:
    """What a stage reading the draft is told to do with it: the whole draft, or part `part`
    of `parts` (pipeline.sections); the templates' $scope."""
    if parts <= 1:
        whole: dict[str, str] = {
            N.REASONER: "Return the whole improved draft in Markdown.",
            N.REVISION: "Return the whole revised draft in Markdown.",
            N.ADVERSARY: "Attack the whole draft.",
        }
        return whole.get(name, "")
    part_of = (
        f"The draft is long, so it is reviewed in parts: you are given part {part} of {parts} "
        "(the parts are joined again in order)."
    )
    parted: dict[str, str] = {
        N.REASONER: f"{part_of} Return this part, improved, in Markdown, and nothing else.",
        N.REVISION: f"{part_of} The findings listed are this part's and those tied to no "
        "place in the draft. Return this part, revised, in Markdown, and nothing else.",
        N.ADVERSARY: f"{part_of} Attack this part only, quoting its exact words.",
    }
    return parted.get(name, "")


def _needs(name: str, fixed: int, limit: int, window: int) -> list[tuple[int, str]]:
    """The parts of the stage's window, with D (or, for a stage reading the draft, S) =
    `limit`: (tokens, what)."""
    parts = [(fixed, "template and instructions")]
    if name in READS_DRAFT:
        parts.append((limit, "a section of the draft under review, at least"))
    parts.append((MIN_EVIDENCE_TOKENS, "evidence at least"))
    reply = limit if name in WRITES_DRAFT and name in READS_DRAFT else _reply(name, window, limit)
    if name == N.SUMMARIZER:
        reply = min(reply, MIN_DRAFT_TOKENS)
    parts.append((reply, "the reply"))
    parts.append((PROMPT_MARGIN_TOKENS, "margin"))
    return parts


def section_tokens(name: str, *, window: int, fixed: int) -> int:
    """S: the largest section of the draft the stage `name` (one of READS_DRAFT) may read at
    once in a `window`-token slot whose prompt without the draft takes `fixed` (module
    docstring, 3)."""
    room = window - fixed - MIN_EVIDENCE_TOKENS - PROMPT_MARGIN_TOKENS
    if name in WRITES_DRAFT:
        return room // 2
    return room - min(MAX_TOKENS[name], max(window // 2, MIN_REPLY_TOKENS))


def draft_limit(names: list[str], *, windows: dict[str, int], fixed: dict[str, int]) -> int:
    """The largest D (at most the drafter's MAX_TOKENS times 1 + continuations) with which
    every stage of `names` that has a window and reads no draft fits it; below
    MIN_DRAFT_TOKENS when none does. The stages reading the draft read it in sections
    (`section_tokens`) and do not lower D."""
    limit = MAX_TOKENS[N.DRAFTER] * (1 + settings.LEXWEB_STAGE_CONTINUATIONS)
    for name in names:
        if name not in windows or name in READS_DRAFT:
            continue
        window, base = windows[name], fixed[name]
        # Room for the evidence minimum and the margin; the rest is the draft's.
        room = window - base - MIN_EVIDENCE_TOKENS - PROMPT_MARGIN_TOKENS
        if name in WRITES_DRAFT:
            limit = min(limit, room)
        elif sum(tokens for tokens, _what in _needs(name, base, limit, window)) > window:
            return 0  # a stage that reads no draft does not fit at all
    return limit


def run_plan(names: list[str], *, roles: Mapping[str, str], kind: str, instructions: str) -> Plan:
    """The run's plan with the windows routed now; `roles`: stage name -> role. Model stages
    whose role has no routable deployment now are left out (runs refuses those first)."""
    windows: dict[str, int] = {}
    for name in names:
        window = stage_window(roles[name]) if name in MODEL_STAGES else None
        if window is not None:
            windows[name] = window
    fixed = {name: fixed_tokens(name, kind=kind, instructions=instructions) for name in windows}
    sections = {
        name: section_tokens(name, window=windows[name], fixed=fixed[name])
        for name in windows
        if name in READS_DRAFT
    }
    return Plan(
        draft_limit=draft_limit(names, windows=windows, fixed=fixed),
        windows=windows,
        fixed=fixed,
        sections=sections,
    )


def run_plan_check(
    names: list[str], *, roles: Mapping[str, str], kind: str, instructions: str
) -> Plan:
    """The run's plan; RunDoesNotFit, with the arithmetic of the first stage that does not fit
    its window even with a draft of MIN_DRAFT_TOKENS (a section of MIN_SECTION_TOKENS for a
    stage reading the draft), when D falls under MIN_DRAFT_TOKENS or an S under
    MIN_SECTION_TOKENS."""
    plan = run_plan(names, roles=roles, kind=kind, instructions=instructions)
    if plan.draft_limit >= MIN_DRAFT_TOKENS and all(
        size >= MIN_SECTION_TOKENS for size in plan.sections.values()
    ):
        return plan
    for name in names:
        if name not in plan.windows:
            continue
        window = plan.windows[name]
        least = MIN_SECTION_TOKENS if name in READS_DRAFT else MIN_DRAFT_TOKENS
        parts = _needs(name, plan.fixed[name], least, window)
        total = sum(tokens for tokens, _what in parts)
        if total > window:
            sums = " + ".join(f"{tokens:,} ({what})" for tokens, what in parts)
            label = Stage.Name(name).label
            raise RunDoesNotFit(
                f"This run does not fit the models routed now: the {label.lower()} needs "
                f"{sums} = {total:,} tokens; the smallest routed slot for the "
                f"{Role(roles[name]).label} role holds {window:,}. Shorten the instructions, "
                "or ask an admin to route a deployment with a larger context per slot."
            )
    return plan


def reply_tokens(name: str, *, window: int, prompt: int, draft_left: int) -> int:
    """The reply a stage asks for (module docstring, 5): `prompt` is its prompt without
    evidence as counted now, `draft_left` what D leaves a writing stage."""
    reply = min(MAX_TOKENS[name], window // 2)
    if name in WRITES_DRAFT:
        reply = min(reply, draft_left)
    room = window - prompt - MIN_EVIDENCE_TOKENS - PROMPT_MARGIN_TOKENS
    if name in WRITES_DRAFT or name == N.SUMMARIZER:
        # A free-text reply shrinks to fit; a structured one keeps its schema's room (the
        # evidence shrinks instead).
        reply = min(reply, max(room, MIN_REPLY_TOKENS))
    return max(reply, MIN_REPLY_TOKENS)
