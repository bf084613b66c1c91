"""The demo's GPU agent (lexweb_dev.fake_nvml, `manage.py demo_gpu_agent`): the product's own
agent loop on a fake NVML of the reference site as the demo registered it, whose figures follow
the demo backends' load, read over their own HTTP endpoints (real fake backends here) and the
admission leases in PostgreSQL."""

import contextlib
import functools
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from pytest_django.fixtures import Settings

from apps.cluster import agent
from apps.cluster.models import Backend, Gpu, GpuLink, GpuStatus, Host
from apps.cluster.nvml import read_samples
from apps.cluster.services.admission import lease_key
from lexweb_dev import demo
from lexweb_dev.fake_nvml import (
    IDLE_MEMORY_BYTES,
    SLOT_MEMORY_BYTES,
    DemoNvml,
    demo_nvml_for,
    http_probe,
    idle_probe,
    leases_held,
)
from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from tests.cluster.test_demo import _free_port_run
from tests.conftest import BASE_DIR, database_url_for_tests

BOARD_A = [4, 5, 8, 9]


def _seed(settings: Settings) -> int:
    base = _free_port_run(5)
    settings.LEXWEB_DEMO_BACKEND_PORT = base
    call_command("seed_demo_site")
    return base


def _urls(base: int) -> dict[str, str]:
    return demo.demo_backend_urls(text=demo.REFERENCE_SITE.read_text("utf-8"), port_base=base)


def _fake(host: str, base: int, probe=idle_probe) -> DemoNvml:  # type: ignore[no-untyped-def]
    found = demo_nvml_for(
        Host.objects.get(name=host),
        demo_urls=_urls(base),
        speeds=demo.DEMO_SPEEDS,
        default_speed=demo.DEMO_DEFAULT_SPEED,
        probe=probe,
        refresh_s=0.0,
    )
    assert found is not None
    return found


def _links(host: str) -> set[tuple[int, int, int]]:
    return {
        (a, b, count)
        for a, b, count in GpuLink.objects.filter(a__host__name=host).values_list(
            "a__index", "b__index", "nvlink_count"
        )
    }


@pytest.mark.django_db
def test_the_agent_records_the_demo_site_as_registered_without_touching_boards(
    settings: Settings,
) -> None:
    base = _seed(settings)
    boards = dict(Gpu.objects.values_list("pk", "board_id"))
    links = {name: _links(name) for name in ("threadripper", "epyc")}

    for name, count in (("threadripper", 12), ("epyc", 6)):
        fake = _fake(name, base)
        said: list[str] = []
        status = agent.run_agent(
            host_name=name,
            interval=1.0,
            nvml_factory=functools.partial(lambda nvml: nvml, fake),
            once=True,
            stop_event=threading.Event(),
            say=said.append,
        )
        assert status == 0, said
        assert said[0].startswith(f"gpu_agent: reading {count} GPUs on {name}")
        host = Host.objects.get(name=name)
        assert (host.agent_status, host.agent_message) == ("ok", f"Reading {count} GPUs")
        assert GpuStatus.objects.filter(gpu__host=host).count() == count

    # Same boards, same NVLinks (the site file's), every card now with its UUID and bus id.
    assert dict(Gpu.objects.values_list("pk", "board_id")) == boards
    assert {name: _links(name) for name in links} == links
    assert not Gpu.objects.filter(uuid="").exists()
    proposal = Host.objects.get(name="threadripper").proposed_boards
    assert sorted(map(sorted, proposal)) == [[0, 1], [2, 3], [4, 5, 8, 9], [6, 7, 10, 11]]
    # A loaded model's estimate is in use on its board, split over its GPUs.
    board_a = Backend.objects.get(name="llama-board-a").deployments.get()
    per_gpu = board_a.memory_estimate_bytes // 4
    used = dict(
        GpuStatus.objects.filter(gpu__host__name="threadripper").values_list(
            "gpu__index", "memory_used_bytes"
        )
    )
    assert all(used[i] == IDLE_MEMORY_BYTES + per_gpu for i in BOARD_A)
    # Cards of different sizes take shares by size (GPU 3 has 16 GB, GPU 2 32 GB).
    adversary = Backend.objects.get(name="llama-adversary").deployments.get()
    assert used[2] - IDLE_MEMORY_BYTES == adversary.memory_estimate_bytes * 2 // 3
    assert used[3] - IDLE_MEMORY_BYTES == adversary.memory_estimate_bytes // 3


@contextlib.contextmanager
def _streaming(fake: FakeBackend, tokens: int) -> Iterator[None]:
    """A streamed chat on `fake` while the block runs (it holds one slot)."""
    done = threading.Event()

    def call() -> None:
        body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": tokens}
        with (
            contextlib.suppress(httpx.HTTPError),
            httpx.stream(
                "POST",
                f"{fake.base_url}/v1/chat/completions",
                json={**body, "stream": True},
                timeout=30,
            ) as response,
        ):
            for _ in response.iter_bytes():
                if done.is_set():
                    break

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    try:
        fake.wait_until_sync(lambda: len(fake.slots.busy) == 1, timeout=10)
        yield
    finally:
        done.set()
        thread.join(timeout=30)


@pytest.mark.django_db
@pytest.mark.slow
def test_a_busy_llama_server_makes_its_board_busy_and_no_other(settings: Settings) -> None:
    base = _seed(settings)
    backend = Backend.objects.get(name="llama-board-a")
    port = int(backend.base_url.rsplit(":", 1)[1])
    fake_settings = FakeSettings(kind="llama_cpp", model="qwen3.6-35b-a3b", slots=2,
                                 tokens_per_second=20.0)  # fmt: skip
    with (
        FakeBackend.in_thread(fake_settings, port=port) as fake,
        httpx.Client(timeout=2.0, trust_env=False) as client,
    ):
        nvml = _fake("threadripper", base, http_probe(client))
        idle = read_samples(nvml)
        with _streaming(fake, tokens=400):
            time.sleep(0.3)
            busy = read_samples(nvml)
        after = read_samples(nvml)

    for reading in idle:
        assert reading.utilisation_pct == 0
    for reading in busy:
        if reading.index in BOARD_A:
            # One of two slots busy, or the decode rate: about half the board, never idle.
            assert reading.utilisation_pct is not None and 40 <= reading.utilisation_pct <= 100
            assert (
                reading.memory_used_bytes
                == (idle[reading.index].memory_used_bytes or 0) + SLOT_MEMORY_BYTES
            )
            assert reading.processes and reading.processes[0]["name"] == "llama-server"
            assert reading.power_w is not None and reading.power_w > 45
        else:
            assert reading.utilisation_pct == 0
    # Boards whose servers are not running show only the driver's share.
    assert idle[6].memory_used_bytes == IDLE_MEMORY_BYTES and not idle[6].processes
    assert all(r.memory_used_bytes == idle[r.index].memory_used_bytes for r in after)


@pytest.mark.django_db
def test_lexweb_calls_on_ollama_show_through_the_admission_leases(settings: Settings) -> None:
    base = _seed(settings)
    backend = Backend.objects.get(name="ollama-epyc")
    port = int(backend.base_url.rsplit(":", 1)[1])
    fake_settings = FakeSettings(kind="ollama", model="gemma4:26b", slots=4)
    with (
        FakeBackend.in_thread(fake_settings, port=port),
        httpx.Client(timeout=2.0, trust_env=False) as client,
    ):
        nvml = _fake("epyc", base, http_probe(client))
        unloaded = read_samples(nvml)
        key = lease_key(backend.pk, 1)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [key])
        try:
            [demo_backend] = nvml.backends
            assert leases_held(demo_backend) == 1
            leased = read_samples(nvml)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
        assert leases_held(demo_backend) == 0

    # Nothing loaded (no /api/ps entry, no call): idle cards.
    assert all(r.utilisation_pct == 0 for r in unloaded)
    assert all(r.memory_used_bytes == IDLE_MEMORY_BYTES for r in unloaded)
    # One of four slots in use by lexweb: a quarter of the board, and the model in memory.
    assert all(r.utilisation_pct is not None and 20 <= r.utilisation_pct <= 30 for r in leased)
    assert all((r.memory_used_bytes or 0) > IDLE_MEMORY_BYTES + SLOT_MEMORY_BYTES for r in leased)


@pytest.mark.django_db
def test_a_host_with_a_backend_that_is_not_the_demos_is_never_played(
    settings: Settings,
) -> None:
    base = _seed(settings)
    # An admin pointed one of the host's backends at the firm's own server.
    Backend.objects.filter(name="llama-gate").update(base_url="http://10.0.0.5:8083")

    for name in ("threadripper", "epyc"):
        found = demo_nvml_for(
            Host.objects.get(name=name),
            demo_urls=_urls(base),
            speeds={},
            default_speed=60.0,
            probe=idle_probe,
        )
        assert (found is None) == (name == "threadripper")
    # A host whose GPUs are not numbered 0..n-1 cannot be NVML's either.
    Gpu.objects.filter(host__name="epyc", index=5).update(index=9)
    assert (
        demo_nvml_for(
            Host.objects.get(name="epyc"),
            demo_urls=_urls(base),
            speeds={},
            default_speed=60.0,
            probe=idle_probe,
        )
        is None
    )


@pytest.mark.django_db
@pytest.mark.slow
def test_a_backend_that_answers_nonsense_or_nothing_leaves_its_board_idle(
    settings: Settings,
) -> None:
    base = _seed(settings)
    backend = Backend.objects.get(name="llama-board-a")
    port = int(backend.base_url.rsplit(":", 1)[1])
    # An Ollama where a llama-server should be: /slots is a 404 there.
    with (
        FakeBackend.in_thread(FakeSettings(kind="ollama"), port=port),
        httpx.Client(timeout=2.0, trust_env=False) as client,
    ):
        readings = read_samples(_fake("threadripper", base, http_probe(client)))
    assert all(r.utilisation_pct == 0 and r.memory_used_bytes == IDLE_MEMORY_BYTES
               for r in readings)  # fmt: skip


@pytest.mark.django_db
def test_the_command_refuses_without_the_demo_and_bad_intervals(settings: Settings) -> None:
    settings.LEXWEB_DEMO_DATA = False
    with pytest.raises(CommandError, match="only with LEXWEB_DEMO_DATA"):
        call_command("demo_gpu_agent")
    settings.LEXWEB_DEMO_DATA = True
    for bad in ("0", "-1", "nan", "1e9", "five", "x" * 500):
        with pytest.raises(CommandError, match="--interval must be"):
            call_command("demo_gpu_agent", interval=bad)


@pytest.mark.product  # the command as a process, signalled
@pytest.mark.django_db(transaction=True)
def test_the_command_runs_an_agent_per_demo_host_until_sigint(settings: Settings) -> None:
    base = _seed(settings)
    process = subprocess.Popen(
        [sys.executable, str(BASE_DIR / "manage.py"), "demo_gpu_agent", "--interval", "0.5"],
        cwd=BASE_DIR,
        env={
            "DATABASE_URL": database_url_for_tests(),
            "PATH": "/usr/bin:/bin",
            "PYTHONUNBUFFERED": "1",
            "LEXWEB_DEMO_BACKEND_PORT": str(base),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while GpuStatus.objects.count() < 18:
            assert process.poll() is None, process.communicate()[0]
            assert time.monotonic() < deadline, "no samples from the demo agents"
            time.sleep(0.2)
        first = dict(GpuStatus.objects.values_list("gpu_id", "sampled_at"))
        time.sleep(1.5)
        later = dict(GpuStatus.objects.values_list("gpu_id", "sampled_at"))
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)

    assert process.returncode == 0, output
    assert all(later[pk] > first[pk] for pk in first)  # still sampling, every interval
    assert "gpu_agent: reading 12 GPUs on threadripper" in output
    assert "gpu_agent: reading 6 GPUs on epyc" in output
    assert set(Host.objects.values_list("agent_status", flat=True)) == {"ok"}
