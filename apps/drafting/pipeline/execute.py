"""One stage of a run, as its job runs it (`stage_run`, called by the task "drafting.run_stage").

1. Claim (one short transaction, run row then stage row locked): nothing to do for a run that
   is no longer queued or running, or a stage that is no longer queued or running. A run whose
   creator has left the case fails here with that reason. Otherwise the stage becomes running
   with the next attempt number (a job re-run after its worker died starts the stage again from
   the start), and its inputs are read: the frozen pages, the latest draft version, earlier
   stages' findings.
2. Body, outside any transaction: a model stage asks for the reply the run's token plan allows
   (pipeline.budget) and renders its template with the evidence that fits (pipeline.context),
   stores the prompt on the stage (chain of custody), and calls its role through dispatch
   (`chat_for_role`: falls back to the next deployment only while nothing was streamed).
   Tokens are stored and published as run events in batches every LEXWEB_RUN_TOKEN_FLUSH_MS,
   cleaned of what a model may write but nothing may store
   (lexweb.text.model_text, applied by the backend client to every token). A free-text reply
   cut at its limit is continued on the same deployment as its stage's policy allows
   (pipeline.endings). The verifier stage asks the verification service and waits for
   its result. While the body runs, the run is watched: a cancelled run (or a newer attempt)
   cancels the body, which closes the backend stream.
3. Success (one transaction, both rows locked again, and only if the stage is still this
   attempt's): the output is stored once (a draft version registered as a generated artifact
   where the stage writes text), the next stage is queued, or the run ends. A gate that answers
   "no" or "insufficient" stops the run with its reasons. A free-text reply still cut at its
   limit is stored as a version marked truncated by a writing stage (never approved or
   exported as it is) and ends any other stage truncated (a failure that says so and keeps the
   cut text); pipeline.endings says why. A version the draft check refuses fails the stage
   with its reason.
4. Failure: a backend that went away (the connection refused or dropped, the stream cut, a
   5xx, a timeout; the reply so far is lost) or a role with no deployment available at that
   moment re-runs the stage whole, after a wait: LEXWEB_STAGE_RETRY_SECONDS (default 5, 15,
   30) holds one wait per retry, so a stage makes at most len + 1 attempts (4; 50 s of waits,
   more than one health-check interval, so a restarted server is found back in time). Each
   attempt goes to the role's first routable deployment then (the same one once it is back, or
   a fallback), on its board's queue, or on the board it last ran on while none is routable.
   The stage says "Attempt N failed: ... Retrying (attempt N+1 of M) in S s." and a
   `stage.retrying` event carries `retry_in_seconds`, `attempts` and the attempt's `reason`;
   after the last attempt the stage and run fail with its reason and the first attempt's
   ("Attempt M of M failed: ... None is left; attempt 1 failed first: ..."). Any other failure
   (an invalid structured answer, a prompt too long for every model, a request the backend
   refused, a wrong API key) fails the stage and the run with its message at once. A structured
   reply that is not the JSON asked for stays on the stage (output_text) with its call's
   custody and finish reason; its error says "cut at the limit (N tokens)" or "invalid JSON at
   character N".
"""

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from apps.cases import selectors as case_selectors
from apps.cluster import labels
from apps.cluster import selectors as cluster_selectors
from apps.cluster.backends import client_for
from apps.cluster.backends.base import (
    BackendAuthError,
    BackendError,
    BackendRequestError,
    Message,
    Timeouts,
)
from apps.cluster.models import Backend, CallRecord, Deployment, Gpu, Role
from apps.cluster.services import dispatch
from apps.drafting.models import Run, RunEvent, Stage
from apps.drafting.pipeline import (
    budget,
    context,
    endings,
    outputs,
    ranking,
    sections,
    streamed,
    watch,
)
from apps.drafting.pipeline.prompts import PromptTemplate, template_load
from apps.drafting.pipeline.work import Outcome, Work
from apps.drafting.services import events as event_writer
from apps.drafting.services import runs, token_events
from apps.evidence.models import FrozenPage
from apps.verification import services as verification_services
from apps.verification.models import Verification
from lexweb.errors import DomainError
from lexweb.jobs import database_lost
from lexweb.text import model_text

T = TypeVar("T")
logger = logging.getLogger(__name__)
N = Stage.Name
WATCH_SECONDS = watch.WATCH_SECONDS
# Reply limits per stage (capped at half a slot's context, and by the run's plan).
MAX_TOKENS = budget.MAX_TOKENS
PROMPT_MARGIN_TOKENS = budget.PROMPT_MARGIN_TOKENS
# Characters of the draft the evidence is ranked against ("the section being written").
QUERY_DRAFT_CHARS = 200_000
MODEL_HASH_SECONDS = 5.0
MODEL_STAGES = set(MAX_TOKENS)
CHECK_STAGES = {N.VERIFIER, N.VERIFIER_AGAIN}
# How long a stage's calls wait for their backend (connection, first token, between tokens).
STAGE_TIMEOUTS = Timeouts()


class StageCancelled(Exception):
    """The run was cancelled (or a newer attempt took the stage) while the body ran."""


# --- 1. Claim --------------------------------------------------------------------------------


def _claim(stage_id: int) -> Work | None:
    with transaction.atomic():
        stage = Stage.objects.filter(pk=stage_id).select_related("run__created_by").first()
        if stage is None:
            return None
        run = Run.objects.select_for_update().select_related("created_by").get(pk=stage.run_id)
        stage = Stage.objects.select_for_update().get(pk=stage_id)
        active = (Run.Status.QUEUED, Run.Status.RUNNING)
        if run.status not in active or stage.status not in (
            Stage.Status.QUEUED,
            Stage.Status.RUNNING,
        ):
            return None
        if case_selectors.membership_get(user=run.created_by, case=run.case) is None:
            _fail_locked(
                run=run,
                stage=stage,
                message=f"{run.created_by} is no longer a member of this case; the run stopped.",
            )
            return None
        stage.status = Stage.Status.RUNNING
        stage.attempt += 1
        stage.started_at = stage.last_progress_at = timezone.now()
        # An earlier attempt's error ("Attempt 1 failed: ...") stays until this one ends.
        stage.save(update_fields=["status", "attempt", "started_at", "last_progress_at"])
        if run.status == Run.Status.QUEUED:
            runs.run_status_set(run=run, status=Run.Status.RUNNING)
        event_writer.run_event_append(
            run=run, kind="stage.status", payload=runs.stage_payload(stage)
        )
        return _work(run=run, stage=stage)


def _fail_unclaimed(*, stage_id: int, error: Exception) -> None:
    """The stage and its run failed with the reason, after its claim raised (rolled back, so
    the stage is still queued or running). Never raises: the claim's error is the job's."""
    message = f"Internal error ({_cause(error)}) before the stage started; see the worker's log."
    try:
        with transaction.atomic():
            stage = Stage.objects.filter(pk=stage_id).only("run_id").first()
            if stage is None:
                return
            run = Run.objects.select_for_update().get(pk=stage.run_id)
            stage = Stage.objects.select_for_update().get(pk=stage_id)
            if run.status in (Run.Status.QUEUED, Run.Status.RUNNING) and stage.status in (
                Stage.Status.QUEUED,
                Stage.Status.RUNNING,
            ):
                _fail_locked(run=run, stage=stage, message=message)
    except Exception:
        logger.exception("Stage %s could not be claimed, nor its run marked failed.", stage_id)


def _work(*, run: Run, stage: Stage) -> Work:
    pages = list(
        FrozenPage.objects.filter(packet_id=run.packet_id)
        .select_related("document")
        .order_by("position")
    )
    latest = None
    if run.draft_id is not None:
        latest = run.draft.versions.order_by("-number").first() if run.draft else None
    earlier = {
        done.name: done.output_json or {}
        for done in Stage.objects.filter(
            run=run, position__lt=stage.position, status=Stage.Status.SUCCEEDED
        )
    }
    return Work(
        stage_id=stage.pk,
        run_id=run.pk,
        attempt=stage.attempt,
        name=stage.name,
        role=stage.role,
        kind=run.kind,
        instructions=run.instructions,
        case_id=run.case_id,
        user_id=run.created_by_id,
        packet_id=run.packet_id,
        packet_hash=run.packet.content_hash,
        pages=pages,
        draft_id=run.draft_id,
        draft_text=latest.text if latest else "",
        draft_number=latest.number if latest else 0,
        earlier=earlier,
        names=list(run.stages.order_by("position").values_list("name", flat=True)),
    )


# --- 2. Body ---------------------------------------------------------------------------------


async def stage_run(*, stage_id: int) -> None:
    """The job's body (see the module docstring). Idempotent: a finished, cancelled or missing
    stage is left alone; a running one (its worker died) starts again from the start."""
    try:
        work = await sync_to_async(_claim)(stage_id)
    except Exception as exc:
        # A database that went away: the job is retried. Anything else (a migration not yet
        # applied, a bug) would fail the job and leave the run queued for ever.
        if not database_lost(exc):
            await sync_to_async(_fail_unclaimed)(stage_id=stage_id, error=exc)
        raise
    if work is None:
        return
    try:
        outcome = await _watched(work, _body(work))
        # In the same try: a version the draft check refuses, or a bug while storing, fails
        # the stage with its real cause instead of leaving it running for the recovery.
        await sync_to_async(_succeed)(work=work, outcome=outcome)
    except StageCancelled:
        return
    except Exception as exc:
        # A database that went away: nothing can be written; the job is retried.
        if database_lost(exc):
            raise
        await sync_to_async(_fail)(work=work, error=exc)
        if not isinstance(exc, DomainError | BackendError):
            raise


async def _watched(work: Work, body: Awaitable[T]) -> T:
    """Run `body`, cancelling it (and so closing any backend stream) as soon as the run is
    cancelled or the stage moves on to another attempt (pipeline.watch: one query every
    WATCH_SECONDS for all the stages of this process)."""
    key = (work.stage_id, work.attempt)
    task = asyncio.ensure_future(body)
    lost, found = watch.watch(key)
    try:
        either: set[asyncio.Future[Any]] = {task, lost}
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        lost.result()  # the check's error, if it failed
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise StageCancelled
    finally:
        watch.unwatch(key, lost, found)
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def _body(work: Work) -> Outcome:
    if work.name in CHECK_STAGES:
        return await _verify(work)
    if work.name == N.VALIDATION:
        return outputs.validation_outcome(work)
    return await _model_stage(work)


async def _model_stage(work: Work) -> Outcome:
    template = template_load(work.name)
    deployments, passed = await sync_to_async(dispatch.routing_for_role)(work.role)
    if not deployments:
        # Every backend of the role out of routing at this moment: a retry may find one back.
        raise dispatch.DeploymentUnavailableError(
            f"No deployment for the {Role(work.role).label} role is available now."
        )
    # The context a slot really has (the smaller of the configured one and what the server
    # reported at its last check); the deployments come with their health rows: no query.
    contexts = {d.pk: cluster_selectors.deployment_context_tokens(d) for d in deployments}
    window = min(contexts.values())
    plan = await sync_to_async(budget.run_plan)(
        work.names,
        roles=runs.STAGE_ROLES,
        kind=Run.Kind(work.kind).label.lower(),
        instructions=work.instructions,
    )
    values = outputs.template_values(work)
    if work.name in budget.READS_DRAFT and work.draft_text.strip():
        parts = await _sections_plan(work, deployments, window, template, values)
        if parts is not None:
            return await _sectioned_stage(
                work, deployments, passed, window, contexts, plan, values, parts
            )
    evidence, max_tokens = await _evidence(
        work, deployments, window, template.render(**values, evidence=""), plan.draft_limit
    )
    system, user = template.render(**values, evidence=evidence.text)
    messages: list[Message] = [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
    ]
    prompt = json.dumps(messages, ensure_ascii=False)
    custody: dict[str, object] = {
        "prompt_text": prompt,
        "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest(),
        "template_name": f"drafting/prompts/{template.name}.txt",
        "template_version": template.version,
        "packet_content_hash": work.packet_hash,
        "pages_sent": evidence.labels,
        "evidence_budget": evidence.budget | {"reply_tokens": max_tokens, "window": window},
        "passed_over": [
            {"deployment": str(p.deployment)[:300], "reason": p.reason} for p in passed
        ],
    }
    await sync_to_async(_custody_store)(work=work, custody=custody)
    batcher = TokenBatcher(work)
    batcher.start()
    try:
        reply = await _reply(
            work,
            messages,
            batcher,
            max_tokens=max_tokens,
            deployment_id=None,
            routing=deployments,
            contexts=contexts,
            window=window,
            draft_limit=plan.draft_limit,
        )
        result = reply.calls[0]
    finally:
        await batcher.stop()
    custody |= await sync_to_async(_call_custody)(result=result)
    if work.name in endings.FREE_TEXT:
        custody |= endings.replied_custody(reply)
    custody["model_file_sha256"] = await _model_file_sha256(result.deployment_id)
    kept = endings.kept_cut(work.name, reply)
    truncated = endings.truncated_message(work.name, reply) if reply.cut and not kept else ""
    return outputs.model_outcome(
        work, text=reply.text, custody=custody, truncated=truncated, kept=kept
    )


async def _sections_plan(
    work: Work,
    deployments: list[Deployment],
    window: int,
    template: PromptTemplate,
    values: dict[str, str],
) -> list[sections.Section] | None:
    """The sections a stage reading the draft reads it in (pipeline.sections), counted by the
    first deployment's tokenizer; None when the whole draft fits its window (one prompt, as
    ever). S is pipeline.budget.section_tokens of the window and of the prompt without the
    draft as counted now (with the longer scope sentence a section's prompt carries)."""
    counter = await context.token_counter(deployments[0], role=work.role)
    try:
        bare = values | {
            "draft": "",
            "scope": budget.scope_sentence(work.name, part=99, parts=99),
        }
        system, user = template.render(**bare, evidence="")
        fixed = await counter.messages(
            [{"role": "system", "content": system}, {"role": "user", "content": user}]
        )
        size = budget.section_tokens(work.name, window=window, fixed=fixed)
        if await counter.text(work.draft_text) <= size:
            return None
        if size < budget.MIN_SECTION_TOKENS:
            label = Stage.Name(work.name).label
            raise DomainError(
                f"The draft does not fit the {label.lower()}'s model even in sections: its "
                f"prompt without the draft takes {fixed:,} tokens of a {window:,}-token slot, "
                f"which leaves room for sections of {max(size, 0):,} tokens, and at least "
                f"{budget.MIN_SECTION_TOKENS} are needed. Ask an admin to route a deployment "
                "with a larger context per slot."
            )
        return await sections.sections_plan(work.draft_text, size, counter.text)
    finally:
        await counter.aclose()


async def _sectioned_stage(
    work: Work,
    deployments: list[Deployment],
    passed: list[Any],
    window: int,
    contexts: dict[int, int],
    plan: budget.Plan,
    values: dict[str, str],
    parts: list[sections.Section],
) -> Outcome:
    """A stage reading the draft run once per section (docs/architecture/drafting.md, "Long
    drafts reviewed in sections"): every section on the deployment that answered the first,
    its own evidence and reply, the tokens streamed as one stage's; the outputs merged by
    outputs.sections_outcome."""
    template = template_load(work.name)
    total = len(parts)
    prompts: list[list[Message]] = []
    labels: list[str] = []
    facts: list[dict[str, object]] = []
    replies: list[endings.Reply] = []
    first: tuple[context.Evidence, int] | None = None
    deployment_id: int | None = None
    written = 0
    limit = sections.stage_limit(plan.draft_limit, sum(part.tokens for part in parts))
    custody: dict[str, object] = {
        "template_name": f"drafting/prompts/{template.name}.txt",
        "template_version": template.version,
        "packet_content_hash": work.packet_hash,
        "passed_over": [
            {"deployment": str(p.deployment)[:300], "reason": p.reason} for p in passed
        ],
    }
    batcher = TokenBatcher(work)
    batcher.start()
    try:
        for index, section in enumerate(parts):
            part = index + 1
            text = section.text(work.draft_text)
            part_values = outputs.section_values(
                work, values, section=section, part=part, parts=total
            )
            share = sections.reply_room(
                limit,
                written=written,
                rest=sum(later.tokens for later in parts[part:]),
                own=section.tokens,
            )
            chosen = [d for d in deployments if d.pk == deployment_id] or deployments
            evidence, max_tokens = await _evidence(
                work,
                chosen,
                window,
                template.render(**part_values, evidence=""),
                share,
                draft=text,
            )
            first = first or (evidence, max_tokens)
            system, user = template.render(**part_values, evidence=evidence.text)
            messages: list[Message] = [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ]
            prompts.append(messages)
            labels += [label for label in evidence.labels if label not in labels]
            prompt = json.dumps(prompts, ensure_ascii=False)
            custody |= {
                "prompt_text": prompt,
                "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest(),
                "pages_sent": labels,
            }
            await sync_to_async(_custody_store)(work=work, custody=custody)
            if replies:
                batcher.separate(
                    sections.joint(replies[-1].text) if work.name in endings.FREE_TEXT else "\n"
                )
            reply = await _reply(
                work,
                messages,
                batcher,
                max_tokens=max_tokens,
                deployment_id=deployment_id,
                contexts=contexts,
                window=window,
                draft_limit=share,
                limit_reached=(
                    f"its share ({share:,} tokens) of the {limit:,} tokens the "
                    f"{Stage.Name(work.name).label.lower()} may write in all was reached"
                ),
            )
            result = reply.calls[0]
            deployment_id = result.deployment_id
            written += reply.completion_tokens
            replies.append(reply)
            facts.append(
                {
                    "part": part,
                    "start": section.start,
                    "end": section.end,
                    "draft_tokens": section.tokens,
                    "pages_sent": evidence.labels,
                    "evidence_tokens": evidence.budget.get("used_tokens"),
                    "reply_tokens": max_tokens,
                    "prompt_tokens": result.prompt_tokens,
                    "completion_tokens": reply.completion_tokens,
                    "finish_reason": reply.calls[-1].finish_reason[:32],
                    "continuations": len(reply.calls) - 1,
                }
            )
    finally:
        await batcher.stop()
    if first is None or deployment_id is None:  # pragma: no cover  (parts is never empty)
        raise DomainError("The draft had no section to review.")
    evidence, max_tokens = first
    custody["evidence_budget"] = evidence.budget | {
        "reply_tokens": max_tokens,
        "window": window,
        "sections": facts,
    }
    custody |= await sync_to_async(_call_custody)(result=replies[0].calls[0])
    calls = [call for reply in replies for call in reply.calls]
    cut = [(part, reply) for part, reply in enumerate(replies, start=1) if reply.cut]
    custody |= {
        "prompt_tokens": sum(reply.calls[0].prompt_tokens for reply in replies),
        "completion_tokens": sum(reply.completion_tokens for reply in replies),
        "finish_reason": (endings.CUT if cut else calls[-1].finish_reason)[:32],
        "continuations": len(calls) - total,
        "duration_ms": sum(call.duration_ms for call in calls),
        "tokens_per_second": endings.replied_custody(endings.Reply(calls=calls, text=""))[
            "tokens_per_second"
        ],
    }
    custody["model_file_sha256"] = await _model_file_sha256(deployment_id)
    joined = ""
    for reply in replies:
        if joined:
            joined += sections.joint(joined) if work.name in endings.FREE_TEXT else "\n"
        joined += reply.text
    kept = None
    if cut and work.name in endings.KEEPS_CUT:
        kept = endings.Cut(
            tokens=sum(reply.completion_tokens for reply in replies),
            not_continued="; ".join(
                f"part {part} of {total} was cut at its limit "
                f"({reply.completion_tokens:,} tokens)"
                + (f": {reply.not_continued}" if reply.not_continued else "")
                for part, reply in cut
            ),
        )
    own = [
        {
            "completion_tokens": reply.completion_tokens,
            "finish_reason": reply.calls[-1].finish_reason,
        }
        for reply in replies
    ]
    return outputs.sections_outcome(
        work,
        replies=[
            (section, reply.text, mine)
            for section, reply, mine in zip(parts, replies, own, strict=True)
        ],
        text=joined,
        custody=custody,
        kept=kept,
    )


async def _reply(
    work: Work,
    messages: list[Message],
    batcher: "TokenBatcher",
    *,
    max_tokens: int,
    deployment_id: int | None,
    routing: list[Deployment] | None = None,
    contexts: dict[int, int],
    window: int,
    draft_limit: int,
    limit_reached: str = "",
) -> endings.Reply:
    """One prompt's reply, streamed through `batcher`: on the role's routing (`deployment_id`
    None; `routing`, as the stage read it) or on that deployment, and continued as the stage's
    policy allows (`_continue`, in the slot of the deployment that answered: its context in
    `contexts`, else `window`)."""
    common: dict[str, Any] = {
        "messages": messages,
        "max_tokens": max_tokens,
        "json_schema": outputs.schema_for(work.name),
        "on_token": batcher.add,
        "timeouts": STAGE_TIMEOUTS,
        "stage_id": work.stage_id,
    }
    if deployment_id is None:
        result = await dispatch.chat_for_role(role=work.role, routing=routing, **common)
    else:
        result = await dispatch.chat(deployment=deployment_id, role=work.role, **common)
    reply = endings.Reply(calls=[result], text=model_text(result.text))
    if work.name in endings.FREE_TEXT:
        await _continue(
            work,
            messages,
            reply,
            context=contexts.get(result.deployment_id, window),
            max_tokens=max_tokens,
            draft_limit=draft_limit,
            on_token=batcher.add,
            limit_reached=limit_reached,
        )
    return reply


async def _continue(
    work: Work,
    messages: list[Message],
    reply: endings.Reply,
    *,
    context: int,
    max_tokens: int,
    draft_limit: int,
    on_token: dispatch.TokenCallback,
    limit_reached: str = "",
) -> None:
    """Continue a free-text reply cut at its limit, as its policy allows (pipeline.endings):
    each continuation on the same deployment, its text appended to `reply`. A writing stage's
    reply stops at the run's draft limit (pipeline.budget), so the stages after it fit; a
    section's at its share of it (`limit_reached` says so when it is reached)."""
    deployment_id = reply.calls[0].deployment_id
    while room := endings.next_continuation(
        work.name, reply, context=context, max_tokens=max_tokens
    ):
        if work.name in budget.WRITES_DRAFT:
            room = min(room, draft_limit - reply.completion_tokens)
            if room < endings.MIN_CONTINUATION_TOKENS:
                reply.not_continued = limit_reached or (
                    f"the run's draft limit ({draft_limit:,} tokens, planned so that the stages "
                    "after it fit their models) was reached"
                )
                return
        try:
            more = await dispatch.chat(
                deployment=deployment_id,
                messages=endings.continuation_messages(messages, reply.text),
                max_tokens=room,
                role=work.role,
                on_token=on_token,
                timeouts=STAGE_TIMEOUTS,
                stage_id=work.stage_id,
            )
        except dispatch.PromptTooLongError as error:
            # The slot's tokenizer counted the text so far longer than its reported tokens.
            reply.not_continued = f"the continuation did not fit the model's slot: {error}"
            return
        reply.calls.append(more)
        reply.text += model_text(more.text)


async def _evidence(
    work: Work,
    deployments: list[Deployment],
    window: int,
    bare: tuple[str, str],
    draft_limit: int,
    *,
    draft: str | None = None,
) -> tuple[context.Evidence, int]:
    """The reply's max_tokens (pipeline.budget.reply_tokens, from the prompt `bare`, rendered
    without evidence) and the excerpts that fit what `window` leaves beside both, counted by
    the first deployment's tokenizer, ranked against the instructions and `draft` (the draft
    under review, or the section being worked on)."""
    first = deployments[0] if deployments else None
    counter = await context.token_counter(first, role=work.role)
    try:
        skeleton = await counter.messages(
            [{"role": "system", "content": bare[0]}, {"role": "user", "content": bare[1]}]
        )
        max_tokens = budget.reply_tokens(
            work.name, window=window, prompt=skeleton, draft_left=draft_limit
        )
        room = max(window - max_tokens - skeleton - PROMPT_MARGIN_TOKENS, 0)
        under_review = work.draft_text if draft is None else draft
        query = ranking.query_text(work.instructions, under_review[:QUERY_DRAFT_CHARS])
        ranked = await sync_to_async(ranking.frozen_pages_ranked)(
            packet_id=work.packet_id, query=query
        )
        evidence = await context.evidence_select(
            work.pages, ranked=[r.page_id for r in ranked], budget_tokens=room, counter=counter
        )
        return evidence, max_tokens
    finally:
        await counter.aclose()


async def _model_file_sha256(deployment_id: int) -> str:
    """The model file's SHA-256 where its backend reports one (Ollama), else "" (llama-server
    names only the file's path, and the site records no hash). Never fails the stage."""
    deployment = (
        await Deployment.objects.select_related("backend").filter(pk=deployment_id).afirst()
    )
    if deployment is None:
        return ""
    client = client_for(deployment.backend)
    try:
        async with asyncio.timeout(MODEL_HASH_SECONDS):
            return await client.model_file_sha256(deployment.model_name) or ""
    except (BackendError, TimeoutError):
        return ""
    finally:
        await client.aclose()


def _custody_store(*, work: Work, custody: dict[str, object]) -> None:
    Stage.objects.filter(pk=work.stage_id, attempt=work.attempt).update(**custody)


def _call_custody(*, result: dispatch.CallResult) -> dict[str, object]:
    deployment = (
        Deployment.objects.select_related("backend__board__host")
        .filter(pk=result.deployment_id)
        .first()
    )
    record = CallRecord.objects.filter(pk=result.call_record_id).first()
    custody: dict[str, object] = {
        "call_record": record,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "finish_reason": result.finish_reason[:32],
        "time_to_first_token_ms": result.time_to_first_token_ms,
        "tokens_per_second": result.decode_tokens_per_second,
        "duration_ms": result.duration_ms,
    }
    if deployment is not None:
        board = deployment.backend.board
        sampling = dict(deployment.sampling or {})
        seed = sampling.get("seed")
        custody |= {
            "deployment": deployment,
            "deployment_label": str(deployment)[:300],
            "model_name": deployment.model_name[:200],
            "board_label": str(board)[:200],
            "gpu_uuids": list(
                Gpu.objects.filter(board=board).exclude(uuid="").values_list("uuid", flat=True)
            ),
            "sampling": sampling,
            "seed": seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        }
    return custody


async def _verify(work: Work) -> Outcome:
    """Ask the verification service to check the latest version, and wait for its answer."""
    verification_id = await sync_to_async(_verification_request)(work)
    while True:
        status, error, queued = await sync_to_async(_verification_state)(verification_id)
        if status == Verification.Status.DONE:
            break
        if status == Verification.Status.FAILED:
            raise DomainError(f"The verifier failed: {error}"[:2000])
        if status == Verification.Status.QUEUED and not queued:
            # Its job is gone without running it (it ran before the row was visible to it, or
            # was removed): run the checks here; the service is idempotent.
            await sync_to_async(verification_services.verification_run)(
                verification_id=verification_id
            )
            continue
        await asyncio.sleep(WATCH_SECONDS)
    data = await sync_to_async(outputs.verification_summary)(verification_id=verification_id)
    return Outcome(data=data, verification_id=verification_id)


def _verification_request(work: Work) -> int:
    if work.draft_id is None or not work.draft_number:
        raise DomainError("There is no draft to verify: the stage before wrote none.")
    stage = Stage.objects.get(pk=work.stage_id)
    existing = stage.verification
    # A re-run of this stage reuses its verification unless that one failed.
    if existing is not None and existing.status != Verification.Status.FAILED:
        return existing.pk
    run = Run.objects.select_related("created_by").get(pk=work.run_id)
    verification = verification_services.verification_request(
        user=run.created_by, case_id=work.case_id, draft_id=work.draft_id, number=work.draft_number
    )
    Stage.objects.filter(pk=work.stage_id).update(verification=verification)
    return verification.pk


def _verification_state(verification_id: int) -> tuple[str, str, bool]:
    """The verification's status and error, and whether a job to run it is waiting or running."""
    row = Verification.objects.filter(pk=verification_id).values("status", "error").get()
    with connection.cursor() as cursor:
        cursor.execute(_VERIFY_JOB_SQL, [str(verification_id)])
        queued = cursor.fetchone() is not None
    return row["status"], row["error"], queued


_VERIFY_JOB_SQL = """
SELECT 1 FROM procrastinate_jobs
 WHERE task_name = 'verification.verify' AND status IN ('todo', 'doing')
   AND args ->> 'verification_id' = %s
 LIMIT 1
"""


class TokenBatcher:
    """Tokens of a running stage, stored and published as one event per flush interval.

    A flush is never cancelled half-way (its tokens would be taken and never stored): `stop()`
    asks the loop to end and waits for it, and the loop's last flush takes the rest.
    """

    def __init__(self, work: Work) -> None:
        self.work = work
        self.pending: list[str] = []
        self.offset = 0
        # Tokens as the stream delivers them (one piece each), for the live tokens/s.
        self.tokens = 0
        self.first_at: float | None = None
        self.every = settings.LEXWEB_RUN_TOKEN_FLUSH_MS / 1000
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # The streamed text, registered with each batch (pipeline.streamed).
        self.registration = streamed.StreamRegistration(
            run_id=work.run_id, stage_id=work.stage_id, attempt=work.attempt, name=work.name,
            case_id=work.case_id, packet_id=work.packet_id,
        )  # fmt: skip

    def add(self, text: str) -> None:
        # Already clean from the backend client; again here because a NUL or a lone surrogate
        # would make the group write fail for every stage of the worker (all their batches
        # are one transaction).
        self.pending.append(model_text(text))
        self.tokens += 1
        if self.first_at is None:
            self.first_at = time.monotonic()

    def separate(self, text: str) -> None:
        """Text between two sections' replies (pipeline.sections.joint): streamed with them,
        not counted as a token."""
        self.pending.append(text)

    def tokens_per_second(self) -> float | None:
        """Tokens after the first over the time since the first, as received from the backend."""
        if self.first_at is None or self.tokens < 2:
            return None
        elapsed = time.monotonic() - self.first_at
        return round((self.tokens - 1) / elapsed, 1) if elapsed > 0 else None

    def start(self) -> None:
        token_events.writer_hold()  # the writer connects while the backend reads the prompt
        self.registration.start()
        self._task = asyncio.ensure_future(self._loop())

    async def _loop(self) -> None:
        try:
            while not self._stopping.is_set():
                await self.flush()
                # Until the next multiple of the interval on the process's clock: the stages of
                # a worker flush together, so their batches make one write (token_events) a tick
                # rather than one each at its own moment (a write a few ms apart, all the time).
                pause = self.every - time.monotonic() % self.every
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), timeout=pause)
            await self.flush()
        finally:
            token_events.writer_release()
            await self.registration.close()  # on success, failure and cancel alike

    async def flush(self) -> None:
        if not self.pending:
            return
        text, self.pending = "".join(self.pending), []
        payload: dict[str, object] = {
            "stage_id": self.work.stage_id,
            "attempt": self.work.attempt,
            "offset": self.offset,
            "text": text,
            "tokens": self.tokens,
            "tokens_per_second": self.tokens_per_second(),
        }
        self.offset += len(text)
        # Stored with the other stages' batches of this process (one transaction for all).
        await token_events.token_event_append(
            run_id=self.work.run_id, payload=payload, growth=await self.registration.grow(text)
        )

    async def stop(self) -> None:
        self._stopping.set()
        if self._task is not None:
            # Shielded: a cancelled stage still stores what it streamed before the cancel.
            await asyncio.shield(self._task)


# --- 3. Success and 4. failure ---------------------------------------------------------------


def _locked(work: Work) -> tuple[Run, Stage] | None:
    """Run and stage locked, if the stage is still this attempt's and the run still running."""
    run = Run.objects.select_for_update().select_related("case", "created_by").get(pk=work.run_id)
    stage = Stage.objects.select_for_update().get(pk=work.stage_id)
    if (
        run.status != Run.Status.RUNNING
        or stage.status != Stage.Status.RUNNING
        or stage.attempt != work.attempt
    ):
        return None
    return run, stage


@transaction.atomic
def _succeed(*, work: Work, outcome: Outcome) -> None:
    locked = _locked(work)
    if locked is None:
        return
    run, stage = locked
    for name, value in outcome.custody.items():
        setattr(stage, name, value)
    stage.output_text = outcome.text
    stage.output_json = outcome.data
    if outcome.verification_id is not None:
        stage.verification_id = outcome.verification_id
    if work.name in outputs.WRITES_VERSION:
        stage.version = outputs.version_store(
            run=run, stage=stage, text=outcome.text, truncated_tokens=outcome.truncated_tokens
        )
    stage.status = Stage.Status.SUCCEEDED
    stage.finished_at = stage.last_progress_at = timezone.now()
    stage.save()
    payload = runs.stage_payload(stage) | {"output": outputs.event_output(stage)}
    event_writer.run_event_append(run=run, kind="stage.status", payload=payload)
    if work.name == N.GATE and (outcome.data or {}).get("answer") != "yes":
        _gate_stop(run=run, stage=stage, answer=outcome.data or {})
        return
    following = Stage.objects.filter(run=run, position__gt=stage.position).order_by("position")
    nxt = following.first()
    if nxt is None:
        heavy = run.kind in (Run.Kind.AFFIDAVIT, Run.Kind.MOTION)
        status = Run.Status.WAITING_FOR_APPROVAL if heavy else Run.Status.SUCCEEDED
        runs.run_status_set(run=run, status=status)
        return
    try:
        runs.stage_defer(stage=nxt)
    except DomainError as exc:
        _fail_locked(run=run, stage=nxt, message=exc.message)


def _gate_stop(*, run: Run, stage: Stage, answer: dict[str, object]) -> None:
    Stage.objects.filter(run=run, position__gt=stage.position).update(status=Stage.Status.SKIPPED)
    reasons = answer.get("reasons") or []
    said = answer.get("answer")
    text = "; ".join(str(reason) for reason in reasons) if isinstance(reasons, list) else ""
    runs.run_status_set(
        run=run,
        status=Run.Status.STOPPED_BY_GATE,
        error=f"The gate answered “{said}”: {text or 'no reasons given'}",
    )


def _cause(error: BaseException) -> str:
    """An unexpected error as the stage records it: its type and the first line of its
    message (at most 200 characters; a database error's next lines quote the SQL), without
    any address (an OSError may quote a backend's host and port; cluster.labels)."""
    lines = str(error).strip().splitlines()
    text = labels.scrub_addresses(lines[0], _backends(), limit=200) if lines else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _backends() -> list[Backend]:
    """Every backend, for their hosts; none when the database cannot say (the error being
    told may be the database's)."""
    try:
        return list(Backend.objects.only("base_url"))
    except DatabaseError:
        return []


def _fail(*, work: Work, error: Exception) -> None:
    message = error.message if isinstance(error, DomainError) else str(error)
    if not isinstance(error, DomainError | BackendError):
        message = f"Internal error ({_cause(error)}); see the worker's log."
    with transaction.atomic():
        locked = _locked(work)
        if locked is None:
            return
        run, stage = locked
        if isinstance(error, outputs.ReplyRejected):
            _rejected_store(stage=stage, error=error)
        wait = retry_wait(stage.attempt) if retryable(error) else None
        if wait is not None:
            if _retry(run=run, stage=stage, message=message, wait=wait):
                return
            message = f"{message} It cannot be run again: {stage.error}"
        elif retryable(error) and stage.attempt > 1:
            message = _last_attempt_failed(run=run, stage=stage, message=message)
        _fail_locked(run=run, stage=stage, message=message)


def retryable(error: Exception) -> bool:
    """A failure another attempt may not meet: the backend went away (refused the connection,
    dropped or cut the stream, answered 5xx, timed out) or none of the role's deployments was
    available. Not a prompt too long (ContextOverflow), a refused request or a wrong API key."""
    return isinstance(error, BackendError) and not isinstance(
        error, BackendRequestError | BackendAuthError
    )


def stage_max_attempts() -> int:
    return len(settings.LEXWEB_STAGE_RETRY_SECONDS) + 1


def retry_wait(attempt: int) -> int | None:
    """Seconds to wait before the attempt after `attempt`; None when `attempt` was the last."""
    waits = settings.LEXWEB_STAGE_RETRY_SECONDS
    return waits[attempt - 1] if 1 <= attempt <= len(waits) else None


def _last_attempt_failed(*, run: Run, stage: Stage, message: str) -> str:
    """What a stage that went away on its last attempt says: that attempt's reason, and the
    first attempt's from its `stage.retrying` event ("Attempt 4 of 4 failed: No deployment ...
    None is left; attempt 1 failed first: the drafter on board A ... dropped the connection")."""
    total = stage_max_attempts()
    earlier = [
        (event.payload["attempt"], event.payload["reason"])
        for event in RunEvent.objects.filter(
            run=run, kind="stage.retrying", payload__stage_id=stage.pk
        ).order_by("seq")
        if "reason" in event.payload
    ]
    stop = "" if message.endswith((".", "!", "?")) else "."
    said = f"Attempt {stage.attempt} of {total} failed: {message}{stop} None is left"
    if not earlier:
        return f"{said}."
    if all(reason == message for _, reason in earlier):
        return f"{said}; each attempt before it failed the same way."
    attempt, reason = earlier[0]
    return f"{said}; attempt {attempt} failed first: {reason}"


def _retry(*, run: Run, stage: Stage, message: str, wait: int) -> bool:
    """Queue the stage's next attempt `wait` seconds from now, saying so on the stage and in a
    `stage.retrying` event; False (the reason in `stage.error`) when it cannot be queued."""
    total = stage_max_attempts()
    stage.error = (
        f"Attempt {stage.attempt} failed: {message} Retrying (attempt {stage.attempt + 1} of "
        f"{total}) in {wait} s."
    )[:4000]
    try:
        with transaction.atomic():
            stage.save(update_fields=["error"])
            runs.stage_defer(stage=stage, schedule_in=wait)
            payload = runs.stage_payload(stage) | {
                "retry_in_seconds": wait,
                "attempts": total,
                "reason": message,
            }
            event_writer.run_event_append(run=run, kind="stage.retrying", payload=payload)
    except DomainError as exc:
        stage.error = exc.message
        return False
    return True


def _rejected_store(*, stage: Stage, error: "outputs.ReplyRejected") -> None:
    """Keep a rejected reply on its stage with the call's custody (model, deployment, token
    counts, finish reason): the reply is the evidence of why the stage failed."""
    for name, value in error.custody.items():
        setattr(stage, name, value)
    stage.output_text = error.text
    stage.save(update_fields=[*error.custody, "output_text"])


def _fail_locked(*, run: Run, stage: Stage, message: str) -> None:
    stage.status = Stage.Status.FAILED
    stage.error = model_text(message)[:4000]
    stage.finished_at = timezone.now()
    stage.save(update_fields=["status", "error", "finished_at"])
    event_writer.run_event_append(run=run, kind="stage.status", payload=runs.stage_payload(stage))
    runs.stages_close(run=run, status=Stage.Status.SKIPPED)
    runs.run_status_set(
        run=run, status=Run.Status.FAILED, error=f"{stage.get_name_display()}: {stage.error}"
    )
