"""How a reply ended is a stored fact, and a free-text stage cut at its limit is never a silent
success (issue 29, requirement 2; apps/drafting/pipeline/endings.py): the drafter and the
revision continue a cut reply on the same deployment, up to LEXWEB_STAGE_CONTINUATIONS calls;
a draft still cut is kept as a version marked truncated with the count, verified (its findings
shown) and never approved or exported; a summary cut ends its stage truncated, stores no
version, and the run fails saying so. Fake llama-servers over HTTP: a fake given a reply longer
than the request's max_tokens ends "length", and continues its reply from an assistant
prefill."""

import pytest
from django.test import Client

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import CallRecord, Deployment
from apps.cluster.services.dispatch import CallResult
from apps.drafting.models import DraftVersion, Run, Stage
from apps.drafting.pipeline import endings
from apps.verification.models import Finding
from tests.drafting import run_fixtures as rf

# The drafter's deployment: 2 slots of 8,192 tokens, so its replies take their 2,048 tokens and
# the run's draft limit (pipeline.budget: the revision, on this deployment too, reads the draft
# and writes it again) leaves room for a continuation.
DRAFTER_CONTEXT = 16384
DRAFTER_LIMIT = 2048


def _words(count: int) -> str:
    """`count` distinct words of one token each: letters only ("w0" would be two tokens, as
    the tokenizer splits digits), "a" to "zzz"."""
    return " ".join(_letters(n) for n in range(count))


def _letters(n: int) -> str:
    name = ""
    while True:
        n, digit = divmod(n, 26)
        name = chr(ord("a") + digit) + name
        if not n:
            return name


def _small_drafter(site: rf.Site) -> None:
    # The stages that read the draft get the same slots (else the run's draft limit is theirs).
    for role in ("drafter", "reasoner", "adversary"):
        Deployment.objects.filter(pk=site.deployments[role].pk).update(context_size=DRAFTER_CONTEXT)
        site.fakes[role].settings.n_ctx_per_slot = DRAFTER_CONTEXT // 2


def _calls(stage: Stage) -> list[tuple[str, int]]:
    records = CallRecord.objects.filter(stage=stage).order_by("started_at", "pk")
    return [(r.finish_reason, r.completion_tokens) for r in records]


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_draft_cut_at_its_limit_is_continued_and_stored_whole(
    lawyer: User, case: Case, lawyer_api: Client, lawyer_client: Client
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    draft = _words(DRAFTER_LIMIT + 100)
    with rf.site_running({**rf.REPLIES, "drafter": draft}) as site:
        _small_drafter(site)
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    drafter = run.stages.get(name="drafter")
    assert drafter.version is not None and drafter.version.text == drafter.output_text == draft
    assert (drafter.finish_reason, drafter.continuations) == ("stop", 1)
    assert drafter.completion_tokens == DRAFTER_LIMIT + 100
    # Two calls of the same deployment, each recorded and linked to the stage.
    assert _calls(drafter) == [("length", DRAFTER_LIMIT), ("stop", 100)]
    assert {r.deployment_id for r in CallRecord.objects.filter(stage=drafter)} == {
        site.deployments["drafter"].pk
    }
    assert drafter.call_record is not None and drafter.call_record.finish_reason == "length"
    assert drafter.ending == f"stop after 1 continuation ({DRAFTER_LIMIT + 100:,} tokens in all)"
    # The revision (the drafter's role again) was continued the same way.
    assert run.stages.get(name="revision").continuations == 1

    body = lawyer_api.get(f"/api/v1/cases/{case.pk}/runs/{run.pk}").json()
    shown = {stage["name"]: stage for stage in body["stages"]}
    assert shown["drafter"]["finish_reason"] == "stop"
    assert shown["drafter"]["continuations"] == 1
    assert shown["drafter"]["ending"] == drafter.ending
    assert (shown["gate"]["finish_reason"], shown["gate"]["ending"]) == ("stop", "stop")
    assert shown["verifier"]["finish_reason"] == ""  # no model reply

    # The run page says how each model stage's reply ended; a check that called no model, no
    # ending at all.
    page = lawyer_client.get(f"/cases/{case.pk}/runs/{run.pk}/").content.decode()
    for stage in run.stages.exclude(finish_reason=""):
        line = f'data-ending-for="{stage.pk}" data-finish-reason="{stage.finish_reason}"'
        assert f"{line}>{stage.ending}</dd>" in page, stage.name
    assert f'data-ending-for="{run.stages.get(name="verifier").pk}"' not in page


# What the drafter claims before its words run on: the amount is in no page of the packet.
INVENTED = "The lease began on 3 March 2024 [“record.pdf” p. 1]. The rent was $4,100,000.00. "


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_draft_still_cut_after_its_continuation_is_kept_truncated_verified_never_approved(
    lawyer: User, case: Case, lawyer_api: Client, lawyer_client: Client
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    # No writing model ends a reply (a base model): the drafter, the heavy reasoner and the
    # revision (the drafter's role again) are each cut again after their continuation.
    never_ends = INVENTED + _words(5000)
    replies = {**rf.REPLIES, "drafter": never_ends, "reasoner": never_ends}
    with rf.site_running(replies) as site:
        _small_drafter(site)
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    # The run went on: the verifier read the cut draft, the run waits for a lawyer.
    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    drafter = run.stages.get(name="drafter")
    assert drafter.status == Stage.Status.SUCCEEDED and drafter.error == ""
    (first, second) = _calls(drafter)
    assert first == ("length", DRAFTER_LIMIT) and second[0] == "length"
    total = DRAFTER_LIMIT + second[1]
    assert (drafter.finish_reason, drafter.continuations, drafter.completion_tokens) == (
        "length",
        1,
        total,
    )
    assert (
        drafter.ending == f"cut at its limit again after 1 continuation ({total:,} tokens in all)"
    )
    assert drafter.output_json == {
        "truncated": {"tokens": total, "not_continued": "LEXWEB_STAGE_CONTINUATIONS allows 1"}
    }
    first_version = drafter.version
    assert first_version is not None and first_version.text == drafter.output_text
    assert first_version.text.startswith(INVENTED) and first_version.truncated_tokens == total

    # The heavy reasoner's version, cut the same way, is the one the verifier checked: the
    # invented amount blocks.
    reasoner = run.stages.get(name="reasoner")
    reasoned = reasoner.version
    assert reasoned is not None and reasoned.truncated_tokens == reasoner.completion_tokens
    verifier = run.stages.get(name="verifier")
    assert verifier.status == Stage.Status.SUCCEEDED
    assert verifier.verification is not None and verifier.verification.version == reasoned
    summary = verifier.output_json or {}
    assert summary["blocking"] >= 1
    assert any("4,100,000" in str(f["text"]) for f in summary["findings"])

    # The revision's reply was cut the same way: the final version is truncated too.
    revision = run.stages.get(name="revision")
    final = revision.version
    assert final is not None and final.truncated_tokens == revision.completion_tokens
    assert run.stages.get(name="verifier_again").verification.version == final  # type: ignore[union-attr]

    # The API says so, and approval is refused whatever the findings, with no override.
    base = f"/api/v1/cases/{case.pk}/drafts/{final.draft_id}/versions/{final.number}"
    shown = lawyer_api.get(base).json()
    assert (shown["truncated"], shown["truncated_tokens"]) == (True, final.truncated_tokens)
    blocking = Finding.objects.filter(
        verification__version=final,
        status__in=[Finding.Status.UNSUPPORTED, Finding.Status.CONTRADICTED],
    )
    assert blocking.exists()
    for finding in blocking:
        overridden = lawyer_api.post(
            f"{base}/findings/{finding.pk}/override",
            {"reason": "Checked by hand against the lease."},
            content_type="application/json",
        )
        assert overridden.status_code == 200, overridden.content
    refused = lawyer_api.post(f"{base}/approve")
    assert refused.status_code == 409 and refused.json()["code"] == "version_truncated"
    assert f"after {final.truncated_tokens:,} tokens" in refused.json()["detail"]
    exported = lawyer_api.post(f"{base}/export", {"format": "pdf"}, content_type="application/json")
    assert exported.status_code == 409 and exported.json()["code"] == "version_truncated"
    final.refresh_from_db()
    assert final.approved_at is None
    assert Run.objects.get(pk=run.pk).status == Run.Status.WAITING_FOR_APPROVAL

    # The run page and the version page say it plainly; the approve button is disabled.
    page = lawyer_client.get(f"/cases/{case.pk}/runs/{run.pk}/").content.decode()
    assert f'id="final-cut-v{final.number}"' in page
    assert f'id="stage-cut-v{first_version.number}"' in page
    assert (
        f"cut at its limit after {total} tokens (not continued: LEXWEB_STAGE_CONTINUATIONS "
        "allows 1)" in page
    )
    version_page = lawyer_client.get(
        f"/cases/{case.pk}/drafts/{final.draft_id}/versions/{final.number}/"
    ).content.decode()
    assert f'id="version-cut-v{final.number}"' in version_page
    assert 'id="approve-button" disabled' in version_page
    draft_page = lawyer_client.get(f"/cases/{case.pk}/drafts/{final.draft_id}/").content.decode()
    assert draft_page.count("Cut at its limit</span>") == final.number  # every version of it


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_summary_cut_at_its_limit_is_not_continued_and_ends_truncated(
    lawyer: User, case: Case, lawyer_client: Client
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running({"summarizer": _words(1500)}):
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
        with rf.ThreadWorker():
            run = rf.finished(run)

    stage = run.stages.get()
    assert run.status == Run.Status.FAILED and stage.status == Stage.Status.FAILED
    assert _calls(stage) == [("length", 1024)]
    assert stage.error.startswith(
        "The summarizer's reply was cut at its limit (1,024 tokens); the summarizer's replies "
        "are not continued. No draft version was saved from it"
    )
    assert (stage.finish_reason, stage.continuations) == ("length", 0)
    assert stage.ending == "cut at its limit (1,024 tokens)"
    assert not DraftVersion.objects.exists()
    page = lawyer_client.get(f"/cases/{case.pk}/runs/{run.pk}/").content.decode()
    assert "cut at its limit (1,024 tokens)" in page


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_with_continuations_off_a_cut_draft_is_kept_truncated_at_once(
    lawyer: User, case: Case, settings: object
) -> None:
    settings.LEXWEB_STAGE_CONTINUATIONS = 0  # type: ignore[attr-defined]
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running({**rf.REPLIES, "drafter": _words(DRAFTER_LIMIT + 100)}) as site:
        _small_drafter(site)
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    drafter = run.stages.get(name="drafter")
    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    assert _calls(drafter) == [("length", DRAFTER_LIMIT)]
    assert (drafter.output_json or {})["truncated"] == {
        "tokens": DRAFTER_LIMIT,
        "not_continued": "continuations are off (LEXWEB_STAGE_CONTINUATIONS is 0)",
    }
    assert drafter.version is not None and drafter.version.truncated_tokens == DRAFTER_LIMIT


# --- The policy's arithmetic -----------------------------------------------------------------


def _call(*, finish: str, prompt: int = 300, completion: int = 1024) -> CallResult:
    return CallResult(
        text="",
        finish_reason=finish,
        deployment_id=1,
        call_record_id=1,
        prompt_tokens=prompt,
        completion_tokens=completion,
        time_to_first_token_ms=None,
        duration_ms=0.0,
        prefill_tokens_per_second=None,
        decode_tokens_per_second=None,
    )


def _next(name: str, *calls: CallResult, context: int = 4096) -> tuple[int, str]:
    reply = endings.Reply(calls=list(calls), text="")
    room = endings.next_continuation(name, reply, context=context, max_tokens=1024)
    return room, reply.not_continued


def test_a_continuation_gets_the_room_the_slot_has_left_at_most_max_tokens() -> None:
    assert _next("drafter", _call(finish="length")) == (1024, "")
    # 2,048 - 300 - 1,024 - 32 (the margin) = 692.
    assert _next("drafter", _call(finish="length"), context=2048) == (692, "")
    assert _next("revision", _call(finish="length"), context=1420) == (64, "")


def test_no_continuation_for_a_reply_that_ended_or_one_the_policy_or_the_slot_refuses(
    settings: object,
) -> None:
    assert _next("drafter", _call(finish="stop")) == (0, "")
    assert _next("summarizer", _call(finish="length")) == (
        0,
        "the summarizer's replies are not continued",
    )
    assert _next("reasoner", _call(finish="length"), _call(finish="length")) == (
        0,
        "LEXWEB_STAGE_CONTINUATIONS allows 1",
    )
    assert _next("drafter", _call(finish="length"), context=1419) == (
        0,
        "the model's 1,419-token slot had no room left to continue it (63 tokens free, at "
        "least 64 needed)",
    )
    settings.LEXWEB_STAGE_CONTINUATIONS = 0  # type: ignore[attr-defined]
    assert _next("drafter", _call(finish="length"))[1] == (
        "continuations are off (LEXWEB_STAGE_CONTINUATIONS is 0)"
    )


def test_every_free_text_stage_has_a_policy_and_no_structured_one_does() -> None:
    writes_text = {Stage.Name.DRAFTER, Stage.Name.REASONER, Stage.Name.REVISION}
    assert writes_text | {Stage.Name.SUMMARIZER} == endings.FREE_TEXT
    # The stages that write the whole draft keep a reply still cut; a summary does not.
    assert writes_text == endings.KEEPS_CUT
    assert not endings.FREE_TEXT & {Stage.Name.GATE, Stage.Name.ADVERSARY, Stage.Name.EXTRACTOR}
