"""Data from outside that used to crash a job or leave a row unwritten: control characters in
a backend's text, non-numbers and NaN in sampling presets, an admin deleting a deployment
while it answers, an impossible role, odd NVML readings, a database that refuses a sample."""

import asyncio
import dataclasses
import threading
import time
from datetime import UTC, datetime

import pytest
from asgiref.sync import sync_to_async

from apps.cluster import agent
from apps.cluster.backends.base import Message
from apps.cluster.models import BackendHealth, CallRecord, Deployment, GpuStatus, Host
from apps.cluster.nvml import read_samples
from apps.cluster.sampling import sampling_check, sampling_to_send
from apps.cluster.services import dispatch, gpu, health
from apps.cluster.topology import Gpu as NvmlGpu
from apps.cluster.topology import Topology, discover
from lexweb.errors import DomainError
from lexweb.text import one_line
from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from tests.cluster.dispatch_fixtures import backend_make, deployment_make
from tests.cluster.fake_nvml import ReferenceSiteNvml

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def test_one_line_drops_control_characters_and_bounds_the_text() -> None:
    assert one_line("model\x00 down\n\tnow\x1b[31m", 200) == "model down now[31m"
    assert one_line("x" * 500, 300) == "x" * 300


@pytest.mark.django_db
def test_a_backend_failure_message_with_nul_bytes_is_stored_cleaned() -> None:
    backend = backend_make(base_url="http://127.0.0.1:9")

    health.backend_call_failed(backend_id=backend.pk, message="boom\x00 in\x00 runner")

    row = BackendHealth.objects.get(pk=backend.pk)
    # One failed call leaves the backend's state as it was (issue 29), the message stored.
    assert (row.state, row.message) == (BackendHealth.State.UNKNOWN, "boom in runner")


@pytest.mark.parametrize(
    ("presets", "message"),
    [
        ([1, 2], "JSON object"),
        ({"temperature": float("nan")}, "finite"),
        ({"top_p": float("inf")}, "finite"),
        ({"temperature": "hot"}, "must be a number"),
        ({"temperature": True}, "must be a number"),
        ({"bad name": 1}, "not a sampling option name"),
        ({f"k{n}": 1 for n in range(21)}, "At most 20"),
    ],
)
def test_sampling_presets_are_finite_numbers_by_name(presets: object, message: str) -> None:
    with pytest.raises(DomainError, match=message):
        sampling_check(presets)


def test_stored_presets_that_would_fail_every_call_are_left_out_when_sending() -> None:
    stored = {"temperature": "hot", "top_p": 0.9, "seed": 7, "min_p": float("nan"), "x": None}

    assert sampling_to_send(stored) == {"top_p": 0.9, "seed": 7}
    assert sampling_to_send(["not", "a", "mapping"]) == {}


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_deployment_deleted_while_it_answers_keeps_the_answer_and_its_record() -> None:
    settings = FakeSettings(kind="llama_cpp", tokens_per_second=40, reply="one two three four")
    async with FakeBackend(settings) as fake:
        backend = await sync_to_async(backend_make)(base_url=fake.base_url)
        deployment = await sync_to_async(deployment_make)(backend)
        call = asyncio.create_task(
            dispatch.chat(deployment=deployment.pk, messages=_ask(), max_tokens=4)
        )
        await fake.wait_until(lambda: fake.generating == 1, timeout=10)
        await Deployment.objects.filter(pk=deployment.pk).adelete()

        result = await asyncio.wait_for(call, timeout=20)

    assert result.text.split() == ["one", "two", "three", "four"]
    record = await CallRecord.objects.aget(pk=result.call_record_id)
    assert (record.deployment_id, record.outcome) == (None, CallRecord.Outcome.OK)
    assert record.deployment_label == f"tiny on {backend.name}"


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_an_unknown_role_is_refused_before_anything_is_sent(
    fake_llama: FakeBackend,
) -> None:
    backend = await sync_to_async(backend_make)(base_url=fake_llama.base_url)
    deployment = await sync_to_async(deployment_make)(backend)

    with pytest.raises(DomainError, match="Unknown role"):
        await dispatch.chat(deployment=deployment, messages=_ask(), max_tokens=4, role="x" * 40)

    assert not fake_llama.requests
    assert not await CallRecord.objects.aexists()


def _ask() -> list[Message]:
    return [{"role": "user", "content": "Say four words."}]


@pytest.fixture
def host(db: None) -> Host:
    return gpu.host_register(name="tr")


def test_nvml_listing_an_index_twice_is_refused_and_records_nothing(host: Host) -> None:
    twice = Topology(
        gpus=[NvmlGpu(0, "GPU-a", "V100", "0:1", 2**35), NvmlGpu(0, "GPU-b", "V100", "0:2", 2**35)]
    )

    with pytest.raises(DomainError, match="GPU index twice"):
        gpu.gpu_inventory_record(host=host, topology=twice)

    assert not host.gpus.exists()


def test_two_readings_for_one_gpu_in_a_batch_record_the_first(host: Host) -> None:
    nvml = ReferenceSiteNvml()
    gpu.gpu_inventory_record(host=host, topology=discover(nvml))
    [first, *_] = read_samples(nvml)
    again = dataclasses.replace(first, utilisation_pct=99)

    assert gpu.gpu_samples_record(host=host, readings=[first, again], at=T0) == 1

    assert GpuStatus.objects.get(gpu__host=host, gpu__index=0).utilisation_pct == 0


class _StopsAfterPasses(ReferenceSiteNvml):
    """The reference site, whose GPU 0 reports a temperature no column holds; `stop` is set
    once every GPU has been read `passes` times."""

    def __init__(self, stop: threading.Event, passes: int) -> None:
        super().__init__()
        self.temperature[0] = 10**6
        self.stop, self.left = stop, passes * 12

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        self.left -= 1
        if self.left <= 0:
            self.stop.set()
        return super().nvmlDeviceGetTemperature(handle, sensor)


@pytest.mark.django_db(transaction=True)
def test_a_sample_the_database_refuses_is_said_once_and_the_agent_goes_on() -> None:
    stop = threading.Event()
    nvml = _StopsAfterPasses(stop, passes=3)
    lines: list[str] = []

    status = agent.run_agent(
        host_name="tr", interval=0.01, nvml_factory=lambda: nvml, once=False, stop_event=stop,
        say=lines.append,
    )  # fmt: skip

    assert status == 0 and nvml.left <= 0
    refused = [line for line in lines if line.startswith("gpu_agent: cannot record on tr:")]
    assert refused == [
        'gpu_agent: cannot record on tr: value "1000000" is out of range for type smallint; '
        "retrying every 0.01 s"
    ], lines
    assert not GpuStatus.objects.exists()  # nothing half-written


class _RefusedOnce(ReferenceSiteNvml):
    """The reference site, whose GPU 0 reports a temperature no column holds on the first pass
    only (as a database away for one report would refuse it)."""

    def __init__(self) -> None:
        super().__init__()
        self.normal, self.temperature[0], self.left = self.temperature[0], 10**6, 12

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        self.left -= 1
        if self.left == 0:
            self.temperature[0] = self.normal
        return super().nvmlDeviceGetTemperature(handle, sensor)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_after_a_refused_report_the_next_comes_within_a_second_not_an_interval_later() -> None:
    stop, lines = threading.Event(), list[str]()
    nvml = _RefusedOnce()
    agent_thread = threading.Thread(
        target=agent.run_agent,
        kwargs={
            "host_name": "tr", "interval": 60.0, "nvml_factory": lambda: nvml, "once": False,
            "stop_event": stop, "say": lines.append,
        },
    )  # fmt: skip
    started = time.monotonic()
    agent_thread.start()
    try:
        while not GpuStatus.objects.exists() and time.monotonic() - started < 10:
            time.sleep(0.05)
        recorded_after = time.monotonic() - started
    finally:
        stop.set()
        agent_thread.join(timeout=30)
    assert GpuStatus.objects.exists(), lines
    assert recorded_after < agent.DATABASE_RETRY_S + 5, recorded_after
    assert any(line.endswith("; retrying every 1 s") for line in lines), lines
