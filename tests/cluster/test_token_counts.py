"""Issue 29, requirement 5: prompts are counted with the deployment's own tokenizer, each text
once (cluster.tokens caches counts by text hash, per tokenizer, in a bounded LRU); Ollama,
which cannot count before a call, is estimated, and the estimate is calibrated from the prompt
tokens its earlier calls reported (a margin, a floor), which the context guard then uses."""

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from apps.cluster import selectors, tokens
from apps.cluster.backends import LlamaCppClient, Message, OllamaClient
from apps.cluster.models import Backend, CallRecord, Deployment
from apps.cluster.services import dispatch
from lexweb_dev.fakebackend import FakeBackend, count_prompt_tokens, count_text_tokens
from tests.cluster.dispatch_fixtures import backend_make, chat_requests, deployment_make

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

Outcome = CallRecord.Outcome
HELLO: list[Message] = [{"role": "user", "content": "Summarise the deposition of 2 May 2022."}]


def _counting_requests(fake: FakeBackend) -> list[str]:
    return [path for _m, path, _b in fake.requests if path in ("/tokenize", "/apply-template")]


def _words(count: int) -> list[Message]:
    return [{"role": "user", "content": " ".join(["exhibit"] * count)}]


async def _deployment(
    fake: FakeBackend, *, model: str = "tiny", context_size: int = 8192, slots: int = 2
) -> Deployment:
    backend = await sync_to_async(backend_make)(base_url=fake.base_url, kind=fake.settings.kind)
    deployment: Deployment = await sync_to_async(deployment_make)(
        backend, model=model, context_size=context_size, parallel_slots=slots
    )
    return deployment


# --- The cache ---------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_prompt_is_counted_by_the_server_once_then_from_the_cache(
    fake_llama: FakeBackend,
) -> None:
    deployment = await _deployment(fake_llama)

    first = await dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=3)
    second = await dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=3)

    assert _counting_requests(fake_llama) == ["/apply-template", "/tokenize"]
    assert first.prompt_tokens == second.prompt_tokens == count_prompt_tokens(HELLO)
    assert len(chat_requests(fake_llama)) == 2


@pytest.mark.asyncio
async def test_counts_are_kept_apart_per_model_and_per_address(fake_llama: FakeBackend) -> None:
    one = await _deployment(fake_llama, model="qwen-a")
    other = await _deployment(fake_llama, model="qwen-b")

    await dispatch.chat(deployment=one, messages=HELLO, max_tokens=3)
    await dispatch.chat(deployment=other, messages=HELLO, max_tokens=3)

    # The same prompt on another model is another tokenizer's count: asked again.
    assert _counting_requests(fake_llama) == ["/apply-template", "/tokenize"] * 2
    backend = one.backend
    assert tokens.tokenizer_of(backend.pk, backend.base_url, "m") != tokens.tokenizer_of(
        backend.pk, "http://10.0.0.9:8080", "m"
    )
    assert tokens.tokenizer_of(None, backend.base_url, "m") is None


@pytest.mark.asyncio
@pytest.mark.slow
async def test_texts_are_cached_by_content_and_unsaved_backends_not_at_all(
    fake_llama: FakeBackend,
) -> None:
    client = LlamaCppClient(fake_llama.base_url)
    tokenizer = tokens.tokenizer_of(10**9, fake_llama.base_url, "tiny")
    hostile = "NUL \x00, \u202e bidi, U+FFFE \ufffe and ADY0000001 " * 4000
    try:
        counted = [await tokens.count_text(client, tokenizer, hostile) for _ in range(3)]
        other = await tokens.count_text(client, tokenizer, hostile + "!")
        unsaved = [await tokens.count_text(client, None, "Hello world") for _ in range(2)]
    finally:
        await client.aclose()

    assert counted == [count_text_tokens(hostile)] * 3
    assert other == count_text_tokens(hostile + "!")
    assert unsaved == [2, 2]
    # One request for the text, one for the changed text, two for the uncached ones.
    assert _counting_requests(fake_llama) == ["/tokenize"] * 4
    assert tokens.cached_text_count(tokenizer, hostile) == counted[0]


@pytest.mark.asyncio
async def test_nothing_is_cached_for_a_backend_without_a_tokenizer(
    fake_ollama: FakeBackend,
) -> None:
    client = OllamaClient(fake_ollama.base_url)
    tokenizer = tokens.tokenizer_of(10**9 + 1, fake_ollama.base_url, "tiny")
    try:
        assert await tokens.count_text(client, tokenizer, "Hello world") is None
        assert await tokens.count_messages(client, tokenizer, HELLO) is None
    finally:
        await client.aclose()

    assert tokens.cached_text_count(tokenizer, "Hello world") is None
    assert tokens.cached_messages_count(tokenizer, HELLO) is None


def test_the_cache_drops_the_least_recently_used_count_beyond_its_size() -> None:
    cache = tokens.CountCache(entries=2)
    key = [((1, "http://a", "m"), "text", bytes([n])) for n in range(3)]
    cache.put(key[0], 10)
    cache.put(key[1], 11)
    assert cache.get(key[0]) == 10  # now the most recently used

    cache.put(key[2], 12)

    assert (cache.get(key[0]), cache.get(key[1]), cache.get(key[2])) == (10, None, 12)
    assert len(cache) == 2 and (cache.hits, cache.misses) == (3, 1)


# --- Ollama: the calibrated estimate -------------------------------------------------------------


def test_calibration_is_the_largest_ratio_plus_the_margin_within_floor_and_ceiling() -> None:
    assert tokens.calibration_from([]) == tokens.Calibration(scale=1.0, calls=0)
    assert not tokens.calibration_from([(0, 100), (100, 0)]).calibrated

    learnt = tokens.calibration_from([(100, 200), (150, 200)])

    assert (learnt.scale, learnt.calls) == (0.825, 2)  # 0.75 x 1.10
    assert learnt.tokens(1000) == 825
    assert tokens.calibration_from([(10, 1000)]).scale == tokens.CALIBRATION_FLOOR
    assert tokens.calibration_from([(1000, 10)]).scale == tokens.CALIBRATION_CEILING
    assert "x0.82" in learnt.describe() and "2 calls" in learnt.describe()


@pytest.mark.asyncio
async def test_ollama_prompts_go_out_until_a_call_calibrates_the_guard_then_are_refused(
    fake_ollama: FakeBackend,
) -> None:
    deployment = await _deployment(fake_ollama, context_size=256, slots=1)
    long = _words(300)

    # Not calibrated yet: the estimate alone refuses nothing; Ollama cuts the prompt and the
    # call fails closed (a cut call teaches nothing: its count is num_ctx, not the prompt's).
    with pytest.raises(dispatch.PromptTruncatedError):
        await dispatch.chat(deployment=deployment, messages=long, max_tokens=4)
    fitting = await dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=4)
    with pytest.raises(dispatch.PromptTooLongError) as refused:
        await dispatch.chat(deployment=deployment, messages=long, max_tokens=4)

    assert len(chat_requests(fake_ollama)) == 2
    record = await CallRecord.objects.aget(pk=fitting.call_record_id)
    estimate = tokens.estimate_message_tokens(HELLO)
    assert (record.prompt_tokens, record.prompt_estimate_tokens) == (
        count_prompt_tokens(HELLO),
        estimate,
    )
    calibration = await sync_to_async(selectors.deployment_token_calibration)(
        deployment_id=deployment.pk
    )
    assert calibration.calls == 1
    assert calibration.scale == max(
        round(count_prompt_tokens(HELLO) / estimate * 1.1, 4), tokens.CALIBRATION_FLOOR
    )
    expected = calibration.tokens(tokens.estimate_message_tokens(long))
    assert f"The prompt is about {expected} tokens" in str(refused.value)
    assert "calibrated from the prompt tokens" in str(refused.value)
    last = await CallRecord.objects.order_by("-pk").afirst()
    assert last is not None
    assert (last.outcome, last.prompt_estimate_tokens) == (
        Outcome.REFUSED,
        tokens.estimate_message_tokens(long),
    )


@pytest.mark.asyncio
async def test_llama_server_calls_record_no_estimate(fake_llama: FakeBackend) -> None:
    deployment = await _deployment(fake_llama)

    result = await dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=3)

    record = await CallRecord.objects.aget(pk=result.call_record_id)
    assert record.prompt_estimate_tokens is None
    assert record.prompt_tokens == count_prompt_tokens(HELLO)


def _record(deployment: Deployment, *, minutes: int, outcome: str, reported: int, estimate: int):  # type: ignore[no-untyped-def]
    return CallRecord.objects.create(
        deployment=deployment,
        deployment_label=str(deployment),
        board_label="board",
        started_at=timezone.now() - timedelta(minutes=minutes),
        outcome=outcome,
        prompt_tokens=reported,
        prompt_estimate_tokens=estimate,
    )


def test_calibration_learns_from_the_latest_completed_calls_of_its_own_deployment() -> None:
    backend = backend_make(base_url="http://127.0.0.1:9", kind=Backend.Kind.OLLAMA)
    ours, theirs = deployment_make(backend, model="a"), deployment_make(backend, model="b")
    # The latest CALIBRATION_CALLS completed calls report half their estimates...
    for minute in range(tokens.CALIBRATION_CALLS):
        _record(ours, minutes=minute, outcome=Outcome.OK, reported=50, estimate=100)
    # ...an older one, a truncated one, a refused one and another deployment's say more.
    _record(ours, minutes=60, outcome=Outcome.OK, reported=300, estimate=100)
    _record(ours, minutes=1, outcome=Outcome.TRUNCATED, reported=900, estimate=100)
    _record(ours, minutes=1, outcome=Outcome.REFUSED, reported=0, estimate=100)
    _record(theirs, minutes=1, outcome=Outcome.OK, reported=400, estimate=100)

    calibration = selectors.deployment_token_calibration(deployment_id=ours.pk)

    assert (calibration.scale, calibration.calls) == (0.55, tokens.CALIBRATION_CALLS)
    assert selectors.deployment_token_calibration(deployment_id=theirs.pk).scale == 4.4
