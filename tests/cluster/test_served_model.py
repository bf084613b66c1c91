"""Issue 29, requirements 4 (first part) and 7: each health check reads what a backend really
serves and the context one request really gets there; a deployment whose server serves another
model is `misconfigured` and unroutable; the smaller of the served and configured contexts
drives the context guard. Against the fakes over HTTP and against a real llama.cpp server
started without --alias with 256-token slots (marked `llamacpp`)."""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from asgiref.sync import async_to_sync, sync_to_async

from apps.accounts.models import User
from apps.cluster import selectors
from apps.cluster.backends import LlamaCppClient, Message, Timeouts
from apps.cluster.models import (
    BackendHealth,
    CallRecord,
    Deployment,
    DeploymentHealth,
    Role,
)
from apps.cluster.services import dispatch, health
from lexweb.errors import DomainError
from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from tests.cluster.dispatch_fixtures import backend_make, chat_requests, deployment_make, route_make
from tests.conftest import session_client
from tests.harness.llamacpp import LlamaCppServer, running_llamacpp

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

State = DeploymentHealth.State
# deployment_make: 8192 tokens over 2 slots.
CONFIGURED = 4096
HELLO: list[Message] = [{"role": "user", "content": "Hello there."}]


def _words(n: int) -> list[Message]:
    return [{"role": "user", "content": " ".join(f"w{i}" for i in range(n))}]


async def _deployment(
    fake: FakeBackend, *, model: str = "tiny", board: str = "board-a"
) -> Deployment:
    backend = await sync_to_async(backend_make)(
        base_url=fake.base_url, kind=fake.settings.kind, board=board
    )
    return await sync_to_async(deployment_make)(backend, model=model)


async def _served(deployment: Deployment) -> DeploymentHealth:
    return await DeploymentHealth.objects.aget(pk=deployment.pk)


async def _routed(role: str) -> list[int]:
    return [d.pk for d in await sync_to_async(dispatch.deployments_for_role)(role)]


def _fake(**settings: Any) -> FakeSettings:
    """A fake llama-server, fast, with `settings`."""
    return FakeSettings(kind="llama_cpp", **{"tokens_per_second": 5000.0, **settings})


# --- Which model ------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_server_serving_another_model_makes_the_deployment_misconfigured_and_unroutable(
) -> None:  # fmt: skip
    async with (
        FakeBackend(_fake(model="gemma-3-27b")) as wrong,
        FakeBackend(_fake(model="tiny")) as right,
    ):
        bad = await _deployment(wrong, model="qwen-a", board="board-a")
        good = await _deployment(right, model="tiny", board="board-b")
        await sync_to_async(route_make)(Role.DRAFTER, bad, good)

        row = await health.backend_health_check(backend_id=bad.backend_id)
        await health.backend_health_check(backend_id=good.backend_id)

        served = await _served(bad)
        assert served.state == State.MISCONFIGURED
        assert (
            "gemma-3-27b" in served.served_model
            and "/models/gemma-3-27b.gguf" in served.served_model
        )
        assert "qwen-a" in served.message and "gemma-3-27b" in served.message
        # The server itself answers: the backend is fine, it just serves the wrong model; no
        # probe was sent to a model it does not serve.
        assert row.state == BackendHealth.State.OK
        assert chat_requests(wrong) == []
        assert await _routed(Role.DRAFTER) == [good.pk]

        result = await dispatch.chat_for_role(role=Role.DRAFTER, messages=HELLO, max_tokens=2)
        assert result.deployment_id == good.pk
        with pytest.raises(dispatch.DeploymentUnavailableError, match="misconfigured"):
            await dispatch.chat(deployment=bad.pk, messages=HELLO, max_tokens=2)
        assert chat_requests(wrong) == []

        # The server restarted with the right model: the next check puts it back.
        wrong.settings.model = "qwen-a"
        await health.backend_health_check(backend_id=bad.backend_id)
        assert (await _served(bad)).state == State.OK
        assert await _routed(Role.DRAFTER) == [bad.pk, good.pk]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("configured", "path"),
    [
        ("tiny", "/srv/models/tiny.gguf"),
        ("Qwen3-8B-Q8_0", "/srv/models/qwen3-8b-q8_0.gguf"),
        ("qwen3-235b-q4_k_m.gguf", "/srv/models/Qwen3-235B-Q4_K_M-00001-of-00003.gguf"),
    ],
)
async def test_a_server_without_alias_is_matched_by_its_gguf_file_name(
    configured: str, path: str
) -> None:
    async with FakeBackend(_fake(model="ignored", model_path=path, no_alias=True)) as fake:
        deployment = await _deployment(fake, model=configured)
        await health.backend_health_check(backend_id=deployment.backend_id)

    served = await _served(deployment)
    assert (served.state, served.served_model) == (State.OK, path)


@pytest.mark.parametrize(
    ("kind", "configured", "names", "matches"),
    [
        ("llama_cpp", "tiny", ("tiny",), True),
        ("llama_cpp", "tiny", ("/models/tiny.gguf",), True),
        ("llama_cpp", "tiny", ("/models/tiny-2.gguf",), False),
        ("llama_cpp", "tiny", (), False),
        ("llama_cpp", "../../etc/passwd", ("/etc/passwd",), True),
        ("llama_cpp", "tiny", ("C:\\models\\TINY.GGUF",), True),
        ("llama_cpp", "x" * 5000, ("y" * 5000,), False),
        ("llama_cpp", "", ("",), True),
        ("ollama", "llama3", ("llama3:latest",), True),
        ("ollama", "llama3:8b", ("llama3:latest",), False),
        ("ollama", "hf.co/org/model:Q4", ("hf.co/org/model:Q4",), True),
        ("ollama", "model", ("other/model:latest",), False),
    ],
)
def test_served_matches_names_as_each_server_gives_them(
    kind: str, configured: str, names: tuple[str, ...], matches: bool
) -> None:
    assert health.served_matches(kind=kind, configured=configured, names=names) is matches


@pytest.mark.asyncio
async def test_ollama_without_the_model_pulled_is_misconfigured_and_says_how_to_pull_it() -> None:
    settings = FakeSettings(kind="ollama", tokens_per_second=5000.0, pulled_models=["phi3"])
    async with FakeBackend(settings) as fake:
        deployment = await _deployment(fake, model="gemma4:26b")
        await health.backend_health_check(backend_id=deployment.backend_id)

    served = await _served(deployment)
    assert (served.state, served.served_model) == (State.MISCONFIGURED, "phi3:latest")
    assert "ollama pull gemma4:26b" in served.message
    assert chat_requests(fake) == []


# --- Which context ----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_256_token_slot_is_read_and_the_guard_refuses_before_sending() -> None:
    async with (
        FakeBackend(_fake(n_ctx_per_slot=256)) as small,
        FakeBackend(_fake()) as large,
    ):
        narrow = await _deployment(small, board="board-a")
        wide = await _deployment(large, board="board-b")
        await sync_to_async(route_make)(Role.SUMMARIZER, narrow, wide)
        await health.backend_health_check(backend_id=narrow.backend_id)

        served = await _served(narrow)
        assert (served.served_context, served.context_source) == (256, "/props")
        assert "256" in served.message and str(CONFIGURED) in served.message
        loaded = await sync_to_async(dispatch._deployment_load)(deployment_id=narrow.pk)
        assert selectors.deployment_context_tokens(loaded) == 256
        probes = len(chat_requests(small))

        # 300 words: within the configured 4096, beyond the 256 the server really has.
        with pytest.raises(dispatch.PromptTooLongError, match="holds 256 tokens"):
            await dispatch.chat(deployment=narrow.pk, messages=_words(300), max_tokens=8)
        assert len(chat_requests(small)) == probes  # refused here, not by the server

        result = await dispatch.chat_for_role(
            role=Role.SUMMARIZER, messages=_words(300), max_tokens=8
        )
        assert result.deployment_id == wide.pk


@pytest.mark.asyncio
async def test_props_without_n_ctx_falls_back_to_the_slots() -> None:
    async with FakeBackend(_fake(n_ctx_per_slot=512, props_without_n_ctx=True)) as fake:
        deployment = await _deployment(fake)
        await health.backend_health_check(backend_id=deployment.backend_id)

    served = await _served(deployment)
    assert (served.state, served.served_context, served.context_source) == (
        State.OK,
        512,
        "/slots",
    )


@pytest.mark.asyncio
@pytest.mark.parametrize("n_ctx", [-5, 0, 10**12])
async def test_a_context_no_slot_can_have_is_not_believed(n_ctx: int) -> None:
    async with FakeBackend(_fake(n_ctx_per_slot=n_ctx)) as fake:
        deployment = await _deployment(fake)
        await health.backend_health_check(backend_id=deployment.backend_id)

    served = await _served(deployment)
    assert (served.state, served.served_context, served.context_source) == (State.OK, None, "")
    loaded = await sync_to_async(dispatch._deployment_load)(deployment_id=deployment.pk)
    assert selectors.deployment_context_tokens(loaded) == CONFIGURED


@pytest.mark.asyncio
async def test_a_server_that_reports_no_context_leaves_the_configured_one() -> None:
    # A deployment checked never (no row) and one whose server said nothing: both configured.
    async with FakeBackend(_fake()) as fake:
        deployment = await _deployment(fake)
    await DeploymentHealth.objects.acreate(deployment=deployment, state=State.OK)
    loaded = await sync_to_async(dispatch._deployment_load)(deployment_id=deployment.pk)
    assert selectors.deployment_context_tokens(loaded) == CONFIGURED


@pytest.mark.asyncio
async def test_ollama_cuts_num_ctx_to_the_models_own_length_and_a_prompt_cut_there_is_caught(
) -> None:  # fmt: skip
    settings = FakeSettings(kind="ollama", tokens_per_second=5000.0, context_length=1024)
    async with FakeBackend(settings) as fake:
        deployment = await _deployment(fake)
        await health.backend_health_check(backend_id=deployment.backend_id)
        served = await _served(deployment)
        assert (served.served_context, served.context_source) == (1024, "/api/show")
        # A check after the probe loaded it: in memory with the context Ollama really gave.
        await health.backend_health_check(backend_id=deployment.backend_id)
        assert (await _served(deployment)).served_context == 1024

        # Ollama silently cuts a 1,500-word prompt to its 1,024 tokens (num_ctx 4096 was sent):
        # the reply is thrown away instead of being used.
        with pytest.raises(dispatch.PromptTruncatedError, match="1024-token context"):
            await dispatch.chat(deployment=deployment.pk, messages=_words(1500), max_tokens=8)
        [*_, call] = chat_requests(fake)
        assert call["options"]["num_ctx"] == CONFIGURED
    record = await CallRecord.objects.order_by("-pk").afirst()
    assert record is not None and record.outcome == CallRecord.Outcome.TRUNCATED


# --- Bad input from the job -------------------------------------------------------------------


@pytest.mark.parametrize("timestamp", [10**20, -(10**20)])
def test_a_timestamp_that_is_no_time_is_refused(timestamp: int) -> None:
    with pytest.raises(DomainError, match="not a time"):
        health.tick_from_timestamp(timestamp)


def test_a_scheduled_time_ahead_of_the_clock_counts_as_now() -> None:
    from django.utils import timezone

    now = timezone.now()
    assert health.tick_from_timestamp(int(now.timestamp()) + 3600, now=now) == now


# --- Shown on the dashboard and in the admin --------------------------------------------------


def test_the_dashboard_and_the_admin_show_a_misconfigured_deployment_with_both_names(
    lawyer: User, admin_user: User
) -> None:
    settings = _fake(model="gemma-3-27b", n_ctx_per_slot=256)
    with FakeBackend.in_thread(settings) as fake:
        backend = backend_make(base_url=fake.base_url)
        deployment = deployment_make(backend, model="qwen-a")
        async_to_sync(health.backend_health_check)(backend_id=backend.pk)

    page = session_client(lawyer).get("/cluster/").content.decode()
    assert "Misconfigured" in page
    assert "Configured: qwen-a; the server serves: gemma-3-27b, /models/gemma-3-27b.gguf" in page
    assert "context mismatch" in page and "the server gives 256, 4096 configured" in page

    status = session_client(lawyer).get("/api/v1/cluster/status")
    [out] = status.json()["deployments"]
    assert (out["served_state"], out["configured_context"], out["served_context"]) == (
        "misconfigured",
        CONFIGURED,
        256,
    )
    assert out["context_tokens"] == 256 and "gemma-3-27b" in out["served_model"]

    admin = session_client(admin_user)
    listing = admin.get("/admin/cluster/deployment/").content.decode()
    assert "MISCONFIGURED: configured qwen-a, the server serves gemma-3-27b" in listing
    change = admin.get(f"/admin/cluster/deployment/{deployment.pk}/change/").content.decode()
    assert "MISMATCH, the server gives 256 (/props), 4096 configured" in change
    assert admin.get("/admin/cluster/deploymenthealth/").status_code == 200


# --- A real llama.cpp server ------------------------------------------------------------------


@pytest.fixture(scope="module")
def narrow_llamacpp(tiny_gguf: Path) -> Iterator[LlamaCppServer]:
    """A real server with two 256-token slots, started without --alias (it names its model by
    the file's path)."""
    with running_llamacpp(
        tiny_gguf, tiny_gguf.with_name("narrow.log"), context=512, slots=2, alias=""
    ) as server:
        yield server


@pytest_asyncio.fixture(params=["fake", pytest.param("real", marks=pytest.mark.llamacpp)])
async def narrow_server(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """The same server twice: the fake and the real one, both 256-token slots, no alias, the
    model file /…/tiny.gguf."""
    if request.param == "real":
        real: LlamaCppServer = request.getfixturevalue("narrow_llamacpp")
        yield real.base_url
        return
    path = str(request.getfixturevalue("tiny_gguf"))
    async with FakeBackend(_fake(n_ctx_per_slot=256, no_alias=True, model_path=path)) as fake:
        yield fake.base_url


@pytest.mark.asyncio
async def test_served_names_and_context_are_the_same_on_the_fake_and_the_real_server(
    narrow_server: str, tiny_gguf: Path
) -> None:
    client = LlamaCppClient(narrow_server, timeouts=Timeouts(probe=10.0))
    try:
        served = await client.served("anything")
        props = await client.props()
    finally:
        await client.aclose()

    assert served.names == (str(tiny_gguf),)
    assert (served.context_per_slot, served.context_source) == (256, "/props")
    assert (props["model_alias"], props["model_path"]) == (str(tiny_gguf), str(tiny_gguf))


@pytest.mark.asyncio
async def test_on_the_server_a_256_token_slot_is_read_a_long_prompt_refused_and_the_model_named(
    narrow_server: str,
) -> None:
    backend = await sync_to_async(backend_make)(base_url=narrow_server)
    right = await sync_to_async(deployment_make)(backend, model="tiny")
    wrong = await sync_to_async(deployment_make)(backend, model="qwen-a")

    row = await health.backend_health_check(backend_id=backend.pk)

    assert row.state == BackendHealth.State.OK
    served = await _served(right)
    assert (served.state, served.served_context, served.context_source) == (State.OK, 256, "/props")
    assert (await _served(wrong)).state == State.MISCONFIGURED
    # A prompt that fits the configured 4096 but not the server's 256: refused before it is
    # sent (before the change, the server answered it with a 400).
    with pytest.raises(dispatch.PromptTooLongError, match="holds 256 tokens"):
        await dispatch.chat(deployment=right.pk, messages=_words(400), max_tokens=8)
    record = await CallRecord.objects.order_by("-pk").afirst()
    assert record is not None and record.outcome == CallRecord.Outcome.REFUSED
    # A short one goes through.
    result = await dispatch.chat(deployment=right.pk, messages=HELLO, max_tokens=2)
    assert result.completion_tokens == 2
