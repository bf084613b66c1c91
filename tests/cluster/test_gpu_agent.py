"""Issue "Cluster", requirement 2: the GPU agent records inventory, proposal, samples and its own
state; an admin accepts the proposal. NVML is the reference site's fake (the only fake here);
the database, the channel layer and, for the real command, the process are real."""

import asyncio
import os
import selectors
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.management import CommandError, call_command
from django.utils import timezone

from apps.accounts.models import AuditEvent, User
from apps.cluster import agent, topology
from apps.cluster.events import CLUSTER_GROUP
from apps.cluster.models import Backend, Board, Gpu, GpuLink, GpuSample, GpuStatus, Host
from apps.cluster.nvml import Nvml, NvmlUnavailable, close_nvml, open_nvml, read_samples
from apps.cluster.services import gpu
from lexweb.errors import DomainError
from tests.cluster.fake_nvml import GIB, ReferenceSiteNvml, _Process
from tests.conftest import BASE_DIR, database_url_for_tests
from tests.running import read_until

REFERENCE_BOARDS = [{0, 1}, {2, 3}, {4, 5, 8, 9}, {6, 7, 10, 11}]
# Inside one minute and one hour, so that the samples below share their buckets.
T0 = datetime(2026, 3, 2, 10, 15, 1, tzinfo=UTC)


@pytest.fixture
def host(db: None) -> Host:
    return gpu.host_register(name="threadripper")


@pytest.fixture
def inventory(host: Host) -> dict[int, Gpu]:
    return gpu.gpu_inventory_record(host=host, topology=topology.discover(ReferenceSiteNvml()))


@pytest.fixture
def cluster_channel(settings: Any) -> str:
    """A process-local channel layer, subscribed to the cluster group like the dashboard."""
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 500}}
    }
    layer = get_channel_layer()
    channel: str = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(CLUSTER_GROUP, channel)
    return channel


def _received(channel: str) -> list[dict[str, Any]]:
    """Every message waiting on `channel` (read in one event loop: the queue binds to it)."""

    async def drain() -> list[dict[str, Any]]:
        layer = get_channel_layer()
        found: list[dict[str, Any]] = []
        while True:
            try:
                found.append(await asyncio.wait_for(layer.receive(channel), timeout=0.2))
            except TimeoutError:
                return found

    return async_to_sync(drain)()


def _stop_after(samples: int, stop: threading.Event) -> Callable[[int], None]:
    def on_sample(count: int) -> None:
        if count >= samples:
            stop.set()

    return on_sample


def _run(
    factory: Callable[[], Nvml], stop: threading.Event, *, once: bool = False, name: str = "tr"
) -> tuple[int, list[str]]:
    lines: list[str] = []
    status = agent.run_agent(
        host_name=name,
        interval=0.01,
        nvml_factory=factory,
        once=once,
        stop_event=stop,
        say=lines.append,
    )
    return status, lines


# --- Inventory ------------------------------------------------------------------------------


def test_inventory_records_every_gpu_with_memory_capability_and_bus(
    host: Host, inventory: dict[int, Gpu]
) -> None:
    rows = list(Gpu.objects.filter(host=host).order_by("index"))

    assert [g.index for g in rows] == list(range(12))
    assert rows[3].memory_bytes == 16 * GIB and rows[3].name == "Tesla V100-SXM2-16GB"
    assert {g.memory_bytes for g in rows if g.index != 3} == {32 * GIB}
    assert {g.compute_capability for g in rows} == {"7.0"}
    assert rows[0].pci_bus_id == "00000000:10:00.0"
    assert rows[5].uuid == "GPU-00000005-0000-0000-0000-000000000000"
    assert all(g.board is None for g in rows)


def test_inventory_records_one_link_per_pair_with_its_kind(
    host: Host, inventory: dict[int, Gpu]
) -> None:
    links = {
        frozenset((link.a.index, link.b.index)): (link.kind, link.nvlink_count)
        for link in GpuLink.objects.select_related("a", "b")
    }

    assert len(links) == 66  # every pair of 12 GPUs, once
    assert links[frozenset((4, 5))] == ("nvlink", 2)
    assert links[frozenset((0, 1))] == ("nvlink", 4)
    assert links[frozenset((4, 6))] == ("pix", 0)
    assert links[frozenset((0, 2))] == ("pxb", 0)
    assert links[frozenset((4, 7))] == ("phb", 0)
    assert links[frozenset((0, 4))] == ("node", 0)
    assert links[frozenset((0, 8))] == ("sys", 0)


def test_inventory_stores_the_proposal_and_recording_again_changes_nothing(
    host: Host, inventory: dict[int, Gpu]
) -> None:
    host.refresh_from_db()
    first_at = host.proposed_at
    ids = {g.index: g.pk for g in Gpu.objects.all()}

    gpu.gpu_inventory_record(host=host, topology=topology.discover(ReferenceSiteNvml()))

    host.refresh_from_db()
    assert [set(b) for b in host.proposed_boards] == REFERENCE_BOARDS
    assert first_at is not None and host.proposed_at is not None and host.proposed_at >= first_at
    assert {g.index: g.pk for g in Gpu.objects.all()} == ids
    assert GpuLink.objects.count() == 66


def test_a_lost_nvlink_bridge_turns_its_link_into_a_pcie_path_and_boards_stay(
    host: Host, inventory: dict[int, Gpu], admin_user: User
) -> None:
    gpu.board_proposal_accept(host=host, actor=admin_user)
    nvml = ReferenceSiteNvml()
    nvml.links[2] = nvml.links[3] = []

    gpu.gpu_inventory_record(host=host, topology=topology.discover(nvml))

    link = GpuLink.objects.get(a__index=2, b__index=3)
    assert (link.kind, link.nvlink_count) == ("pix", 0)
    host.refresh_from_db()
    assert [2] in host.proposed_boards and [3] in host.proposed_boards
    # The proposal changed; the boards did not (an admin decides).
    assert set(Gpu.objects.get(index=2).board.gpus.values_list("index", flat=True)) == {2, 3}  # type: ignore[union-attr]


def test_a_card_seen_at_another_index_takes_its_uuid_along(
    host: Host, inventory: dict[int, Gpu]
) -> None:
    # Before: the card NVML now reports at index 11 was stored at index 0.
    Gpu.objects.filter(index=11).update(uuid="GPU-old")
    Gpu.objects.filter(index=0).update(uuid="GPU-00000011-0000-0000-0000-000000000000")

    gpu.gpu_inventory_record(host=host, topology=topology.discover(ReferenceSiteNvml()))

    assert Gpu.objects.get(index=11).uuid == "GPU-00000011-0000-0000-0000-000000000000"
    assert Gpu.objects.get(index=0).uuid == "GPU-00000000-0000-0000-0000-000000000000"


# --- Board proposal -------------------------------------------------------------------------


def _boards(host: Host) -> dict[str, set[int]]:
    return {
        board.name: set(board.gpus.values_list("index", flat=True))
        for board in Board.objects.filter(host=host)
    }


def test_accepting_the_proposal_creates_exactly_the_reference_boards(
    host: Host, inventory: dict[int, Gpu], admin_user: User
) -> None:
    boards = gpu.board_proposal_accept(host=host, actor=admin_user)

    assert _boards(host) == {
        "GPUs 0,1": {0, 1},
        "GPUs 2,3": {2, 3},
        "GPUs 4,5,8,9": {4, 5, 8, 9},
        "GPUs 6,7,10,11": {6, 7, 10, 11},
    }
    assert [b.name for b in boards] == ["GPUs 0,1", "GPUs 2,3", "GPUs 4,5,8,9", "GPUs 6,7,10,11"]
    event = AuditEvent.objects.get(action="cluster.board_proposal_accept")
    assert event.actor == admin_user
    assert event.detail == {"boards": "0,1 | 2,3 | 4,5,8,9 | 6,7,10,11"}


def test_accepting_again_changes_nothing_and_keeps_a_renamed_board(
    host: Host, inventory: dict[int, Gpu], admin_user: User
) -> None:
    first = gpu.board_proposal_accept(host=host, actor=admin_user)
    Board.objects.filter(pk=first[2].pk).update(name="A")

    second = gpu.board_proposal_accept(host=host, actor=admin_user)

    assert [b.pk for b in second] == [b.pk for b in first]
    assert _boards(host)["A"] == {4, 5, 8, 9}
    assert Board.objects.count() == 4
    assert AuditEvent.objects.filter(action="cluster.board_proposal_accept").count() == 1


def test_accepting_is_refused_while_a_backend_uses_a_board_it_would_change(
    host: Host, inventory: dict[int, Gpu], admin_user: User
) -> None:
    half = Board.objects.create(host=host, name="half of B")
    Gpu.objects.filter(host=host, index__in=[6, 7]).update(board=half)
    Backend.objects.create(
        name="reasoner", kind="llama_cpp", base_url="http://10.0.0.2:8080", board=half
    )

    with pytest.raises(DomainError, match=r"'half of B'.*serves backend 'reasoner'"):
        gpu.board_proposal_accept(host=host, actor=admin_user)

    # All or nothing: not even the groups that did not conflict became boards.
    assert _boards(host) == {"half of B": {6, 7}}
    assert not AuditEvent.objects.filter(action="cluster.board_proposal_accept").exists()


def test_a_board_in_use_that_already_is_a_proposed_group_is_not_a_conflict(
    host: Host, inventory: dict[int, Gpu], admin_user: User
) -> None:
    board_b = Board.objects.create(host=host, name="B")
    Gpu.objects.filter(host=host, index__in=[6, 7, 10, 11]).update(board=board_b)
    Backend.objects.create(
        name="r", kind="llama_cpp", base_url="http://10.0.0.2:8080", board=board_b
    )

    boards = gpu.board_proposal_accept(host=host, actor=admin_user)

    assert boards[3].pk == board_b.pk
    assert _boards(host)["B"] == {6, 7, 10, 11} and len(_boards(host)) == 4


def test_boards_left_empty_without_backends_are_removed(
    host: Host, inventory: dict[int, Gpu], admin_user: User
) -> None:
    old = Board.objects.create(host=host, name="old")
    Gpu.objects.filter(host=host, index__in=[3, 4]).update(board=old)

    gpu.board_proposal_accept(host=host, actor=admin_user)

    assert not Board.objects.filter(pk=old.pk).exists()
    assert len(_boards(host)) == 4


def test_an_edited_proposal_is_accepted_as_edited(
    host: Host, inventory: dict[int, Gpu], admin_user: User
) -> None:
    host.proposed_boards = [[0, 1, 2, 3], [4, 5, 8, 9]]
    host.save()

    gpu.board_proposal_accept(host=host, actor=admin_user)

    assert _boards(host) == {"GPUs 0-3": {0, 1, 2, 3}, "GPUs 4,5,8,9": {4, 5, 8, 9}}


@pytest.mark.parametrize(
    ("proposal", "message"),
    [
        ([], "has no board proposal"),
        ([[0, 1], [1, 2]], "GPU 1 is in two proposed boards"),
        ([[0, 12]], "has no GPU 12"),
        ([[0, -1]], "has no GPU -1"),
        ([[0, "1"]], "must be a list of GPU index lists"),
        ([[0, True]], "must be a list of GPU index lists"),
        ([[]], "must be a list of GPU index lists"),
        ({"a": [0]}, "must be a list of GPU index lists"),
        ("0,1", "must be a list of GPU index lists"),
    ],
)
def test_a_malformed_proposal_is_refused_with_a_clear_message(
    host: Host, inventory: dict[int, Gpu], admin_user: User, proposal: object, message: str
) -> None:
    host.proposed_boards = proposal
    host.save()

    with pytest.raises(DomainError, match=message):
        gpu.board_proposal_accept(host=host, actor=admin_user)
    assert not Board.objects.exists()


def test_board_names_stay_short_and_distinct() -> None:
    assert gpu.board_name([9, 8, 5, 4]) == "GPUs 4,5,8,9"
    assert gpu.board_name(list(range(8))) == "GPUs 0-7"
    long_group = list(range(0, 64, 2))
    assert gpu.board_name(long_group) == "32 GPUs from 0"


# --- Samples ------------------------------------------------------------------------------


def _readings(nvml: ReferenceSiteNvml, utilisation: int, **changes: Any) -> list[Any]:
    nvml.utilisation = dict.fromkeys(range(12), utilisation)
    for name, value in changes.items():
        setattr(nvml, name, value)
    return read_samples(nvml)


def test_samples_overwrite_the_latest_status_and_fold_into_one_bucket(
    host: Host, inventory: dict[int, Gpu]
) -> None:
    nvml = ReferenceSiteNvml()
    for offset, utilisation, celsius in ((0, 10, 40), (5, 20, 71), (10, 60, 55)):
        nvml.temperature = dict.fromkeys(range(12), celsius)
        readings = _readings(nvml, utilisation)
        gpu.gpu_samples_record(host=host, readings=readings, at=T0 + timedelta(seconds=offset))

    status = GpuStatus.objects.get(gpu__index=4)
    assert (status.utilisation_pct, status.temperature_c) == (60, 55)
    assert status.sampled_at == T0 + timedelta(seconds=10)
    assert (status.power_w, status.power_limit_w) == (45.0, 300.0)
    assert (status.sm_clock_mhz, status.memory_clock_mhz) == (1530, 877)
    assert status.memory_total_bytes == 32 * GIB
    assert GpuStatus.objects.count() == 12
    for seconds in (60, 3600):
        bucket = GpuSample.objects.get(gpu__index=4, bucket_seconds=seconds)
        assert bucket.samples == 3
        assert bucket.utilisation_avg == pytest.approx(30.0)
        assert (bucket.utilisation_max, bucket.temperature_max_c) == (60, 71)
        assert bucket.power_avg_w == pytest.approx(45.0)
    assert GpuSample.objects.count() == 24  # 12 GPUs x (one minute + one hour)


def test_a_new_minute_opens_a_new_bucket_and_old_buckets_are_pruned(
    host: Host, inventory: dict[int, Gpu]
) -> None:
    nvml = ReferenceSiteNvml()
    gpu.gpu_samples_record(host=host, readings=_readings(nvml, 10), at=T0)
    gpu.gpu_samples_record(host=host, readings=_readings(nvml, 30), at=T0 + timedelta(minutes=1))

    minutes = GpuSample.objects.filter(gpu__index=0, bucket_seconds=60).order_by("bucket_start")
    assert [(b.bucket_start, b.samples) for b in minutes] == [
        (datetime(2026, 3, 2, 10, 15, tzinfo=UTC), 1),
        (datetime(2026, 3, 2, 10, 16, tzinfo=UTC), 1),
    ]
    hour = GpuSample.objects.get(gpu__index=0, bucket_seconds=3600)
    assert (hour.bucket_start, hour.samples, hour.utilisation_avg) == (
        datetime(2026, 3, 2, 10, 0, tzinfo=UTC),
        2,
        pytest.approx(20.0),
    )

    gpu.gpu_samples_record(host=host, readings=_readings(nvml, 0), at=T0 + timedelta(days=3))
    assert GpuSample.objects.filter(gpu__index=0, bucket_seconds=60).count() == 1
    assert GpuSample.objects.filter(gpu__index=0, bucket_seconds=3600).count() == 2

    gpu.gpu_samples_record(host=host, readings=_readings(nvml, 0), at=T0 + timedelta(days=91))
    assert GpuSample.objects.filter(gpu__index=0, bucket_seconds=3600).count() == 2  # 3 d, 91 d


def test_unsupported_fields_are_left_empty_and_stored_as_unknown(
    host: Host, inventory: dict[int, Gpu]
) -> None:
    nvml = ReferenceSiteNvml()
    nvml.unsupported |= {
        "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetTemperature",
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetEnforcedPowerLimit",
        "nvmlDeviceGetClockInfo",
        "nvmlDeviceGetComputeRunningProcesses",
    }

    readings = read_samples(nvml)
    gpu.gpu_samples_record(host=host, readings=readings, at=T0)

    reading = readings[0]
    assert (reading.utilisation_pct, reading.temperature_c, reading.power_w) == (None, None, None)
    assert (reading.sm_clock_mhz, reading.processes) == (None, [])
    assert reading.memory_used_bytes == 300 * 1024**2
    status = GpuStatus.objects.get(gpu__index=0)
    assert (status.utilisation_pct, status.temperature_c, status.power_w) == (None, None, None)
    assert (status.power_limit_w, status.sm_clock_mhz, status.memory_clock_mhz) == (None,) * 3
    assert status.memory_used_bytes == 300 * 1024**2


def test_processes_are_recorded_with_names_and_unknown_memory(
    host: Host, inventory: dict[int, Gpu]
) -> None:
    nvml = ReferenceSiteNvml()
    nvml.processes[4] = [_Process(pid=4242, usedGpuMemory=20 * GIB), _Process(77, None)]
    nvml.process_names = {4242: "/opt/llama.cpp/llama-server"}  # 77 has exited meanwhile

    gpu.gpu_samples_record(host=host, readings=read_samples(nvml), at=T0)

    assert GpuStatus.objects.get(gpu__index=4).processes == [
        {"pid": 4242, "name": "/opt/llama.cpp/llama-server", "used_memory_bytes": 20 * GIB},
        {"pid": 77, "name": "", "used_memory_bytes": None},
    ]
    assert GpuStatus.objects.get(gpu__index=5).processes == []


def test_a_reading_for_a_gpu_without_a_row_is_skipped(host: Host) -> None:
    assert gpu.gpu_samples_record(host=host, readings=read_samples(ReferenceSiteNvml()), at=T0) == 0
    assert not GpuStatus.objects.exists()


def test_each_sample_is_published_to_the_cluster_group_after_commit(
    host: Host,
    inventory: dict[int, Gpu],
    cluster_channel: str,
    django_capture_on_commit_callbacks: Any,
) -> None:
    nvml = ReferenceSiteNvml()
    with django_capture_on_commit_callbacks(execute=True):
        gpu.gpu_samples_record(host=host, readings=_readings(nvml, 42), at=T0)
        assert _received(cluster_channel) == []  # nothing before commit

    events = _received(cluster_channel)
    assert [e["index"] for e in events] == list(range(12))
    assert events[3] == {
        "type": "cluster.gpu_sample",
        "gpu_id": inventory[3].pk,
        "host": "threadripper",
        "index": 3,
        "sampled_at": T0.isoformat(),
        "utilisation_pct": 42,
        "memory_used_bytes": 300 * 1024**2,
        "memory_total_bytes": 16 * GIB,
        "temperature_c": 35,
        "power_w": 45.0,
    }


def test_agent_status_is_published_only_when_it_changes_but_seen_always_moves(
    host: Host, cluster_channel: str, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        assert gpu.host_agent_status_set(host=host, status=Host.AgentStatus.OK, message="x")
    host.refresh_from_db()
    first_seen = host.agent_seen_at
    assert first_seen is not None
    # The clock has moved on since the first report (no sleep: microseconds pass on their own).
    while timezone.now() <= first_seen:
        pass
    with django_capture_on_commit_callbacks(execute=True):
        assert not gpu.host_agent_status_set(host=host, status=Host.AgentStatus.OK, message="x")
        # An unchanged report publishes nothing but still says the agent was seen just now.
        host.refresh_from_db()
        unchanged_seen = host.agent_seen_at
        assert unchanged_seen is not None and unchanged_seen > first_seen
        while timezone.now() <= unchanged_seen:
            pass
        assert gpu.host_agent_status_set(host=host, status=Host.AgentStatus.ERROR, message="y\n")

    events = _received(cluster_channel)
    assert [(e["type"], e["status"], e["message"]) for e in events] == [
        ("cluster.agent_status", "ok", "x"),
        ("cluster.agent_status", "error", "y"),
    ]
    host.refresh_from_db()
    assert first_seen is not None and host.agent_seen_at is not None
    assert host.agent_seen_at >= first_seen
    assert host.agent_seen_at > unchanged_seen


# --- The agent loop -----------------------------------------------------------------------


def test_agent_records_inventory_and_samples_each_cycle_until_stopped(db: None) -> None:
    stop = threading.Event()
    nvml = ReferenceSiteNvml()
    nvml.on_sample = _stop_after(3, stop)

    status, lines = _run(lambda: nvml, stop)

    assert status == 0
    assert lines == [
        "gpu_agent: reading 12 GPUs on tr; NVLink groups: 0,1 | 2,3 | 4,5,8,9 | 6,7,10,11"
    ]
    host = Host.objects.get(name="tr")
    assert (host.agent_status, host.agent_message) == ("ok", "Reading 12 GPUs")
    assert [set(b) for b in host.proposed_boards] == REFERENCE_BOARDS
    assert GpuStatus.objects.filter(gpu__host=host).count() == 12
    # Three cycles, whichever minute buckets they fell into.
    minute_samples = GpuSample.objects.filter(gpu__index=0, bucket_seconds=60)
    assert sum(b.samples for b in minute_samples) == 3
    assert nvml.shutdowns == 1
    assert not Board.objects.exists()


def test_agent_once_reads_one_cycle_and_returns_0(db: None) -> None:
    nvml = ReferenceSiteNvml()

    status, lines = _run(lambda: nvml, threading.Event(), once=True)

    assert status == 0 and len(lines) == 1 and nvml.samples_read == 1
    assert GpuStatus.objects.count() == 12


def test_no_nvml_is_said_once_retried_and_shown_as_the_hosts_status(db: None) -> None:
    stop = threading.Event()
    attempts: list[int] = []

    def factory() -> Nvml:
        attempts.append(1)
        if len(attempts) == 3:
            stop.set()
        raise NvmlUnavailable("libnvidia-ml.so.1 not found (no NVIDIA driver installed)")

    status, lines = _run(factory, stop)

    assert status == 0 and len(attempts) == 3
    assert lines == [
        "gpu_agent: no NVML on tr: libnvidia-ml.so.1 not found (no NVIDIA driver installed); "
        "retrying every 0.01 s"
    ]
    host = Host.objects.get(name="tr")
    assert host.agent_status == "no_nvml"
    assert host.agent_message == "No NVML: libnvidia-ml.so.1 not found (no NVIDIA driver installed)"


def test_each_distinct_no_nvml_reason_is_said_once(db: None) -> None:
    stop = threading.Event()
    reasons = iter(["no GPU", "no GPU", "the NVIDIA kernel driver is not loaded", "no GPU"])

    def factory() -> Nvml:
        reason = next(reasons, None)
        if reason is None:
            stop.set()
            reason = "no GPU"
        raise NvmlUnavailable(reason)

    _, lines = _run(factory, stop)

    assert [line.split(": ", 2)[2].split(";")[0] for line in lines] == [
        "no GPU",
        "the NVIDIA kernel driver is not loaded",
        "no GPU",
    ]


def test_once_without_nvml_says_one_line_and_returns_1(db: None) -> None:
    def factory() -> Nvml:
        raise NvmlUnavailable("no GPU")

    status, lines = _run(factory, threading.Event(), once=True)

    assert (status, lines) == (1, ["gpu_agent: no NVML on tr: no GPU"])


def test_an_nvml_error_mid_run_sets_error_and_the_agent_reconnects(
    db: None, cluster_channel: str, django_capture_on_commit_callbacks: Any
) -> None:
    import pynvml

    stop = threading.Event()
    first, second = ReferenceSiteNvml(), ReferenceSiteNvml()

    def fall_over(count: int) -> None:
        if count == 2:
            first.failing_with = pynvml.NVML_ERROR_GPU_IS_LOST

    first.on_sample = fall_over
    second.on_sample = _stop_after(1, stop)
    fakes = iter([first, second])

    with django_capture_on_commit_callbacks(execute=True):
        status, lines = _run(lambda: next(fakes), stop)

    assert status == 0
    assert lines[1] == "gpu_agent: NVML error on tr: GPU is lost; reconnecting every 0.01 s"
    assert lines[0] == lines[2] and lines[0].startswith("gpu_agent: reading 12 GPUs")
    assert first.shutdowns == 1 and second.shutdowns == 1
    statuses = [
        (e["status"], e["message"])
        for e in _received(cluster_channel)
        if e["type"] == "cluster.agent_status"
    ]
    assert statuses == [
        ("ok", "Reading 12 GPUs"),
        ("error", "NVML error: GPU is lost"),
        ("ok", "Reading 12 GPUs"),
    ]


def test_a_gpu_falling_off_the_bus_makes_the_agent_take_a_new_inventory(db: None) -> None:
    stop = threading.Event()
    nvml = ReferenceSiteNvml()

    def swap_card(count: int) -> None:
        if count == 2:
            # The card at index 11 is replaced (another UUID) while this sample is read.
            nvml.uuids[11] = "GPU-00000011-new"
        if count == 4:
            stop.set()

    nvml.on_sample = swap_card

    _run(lambda: nvml, stop)

    assert Gpu.objects.get(index=11).uuid == "GPU-00000011-new"
    assert sum(b.samples for b in GpuSample.objects.filter(gpu__index=0, bucket_seconds=60)) == 3


# --- Hostile input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("h" * 101, "longer than 100 characters"),
        ("gpu\x1b[31mhost", "control characters"),
        ("gpu\nhost", "control characters"),
        (" gpu", "surrounding spaces"),
    ],
)
def test_a_bad_host_name_is_refused_before_nvml_is_opened(
    db: None, name: str, message: str
) -> None:
    opened: list[int] = []

    def factory() -> Nvml:
        opened.append(1)
        return ReferenceSiteNvml()

    with pytest.raises(DomainError, match=message):
        _run(factory, threading.Event(), once=True, name=name)
    assert opened == [] and not Host.objects.exists()


def test_the_command_turns_a_bad_host_name_into_one_clear_error(db: None) -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)

    with pytest.raises(CommandError, match=r"^The host name is longer than 100 characters\.$"):
        call_command("gpu_agent", "--host", "x" * 500, "--once")
    # The command's stop handlers are gone again: this process's Ctrl-C still works.
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


@pytest.mark.parametrize("value", ["0", "-5", "0.1", "abc", "", "nan", "inf", "1e9", "5s", "3601"])
def test_a_bad_interval_is_refused_in_one_line(value: str) -> None:
    with pytest.raises(CommandError, match=r"^--interval must be a number of seconds from 0.5 "):
        call_command("gpu_agent", "--interval", value, "--once")


def test_run_agent_refuses_a_non_positive_interval(db: None) -> None:
    with pytest.raises(ValueError, match="positive"):
        agent.run_agent(
            host_name="tr",
            interval=0,
            nvml_factory=ReferenceSiteNvml,
            once=True,
            stop_event=threading.Event(),
            say=print,
        )


# --- The real command, as a process -------------------------------------------------------


def _nvml_here() -> bool:
    """Whether this machine has NVML and a GPU: the real command's answer depends on it."""
    try:
        nvml = open_nvml()
    except NvmlUnavailable:
        return False
    close_nvml(nvml)
    return True


def _agent_env() -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url_for_tests(),
        "LEXWEB_LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }


def _agent_command(*args: str) -> list[str]:
    return [sys.executable, str(BASE_DIR / "manage.py"), "gpu_agent", *args]


@pytest.fixture
def agent_process(transactional_db: None) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        _agent_command("--host", "ci-agent", "--interval", "0.5"),
        cwd=BASE_DIR,
        env=_agent_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


def _output_within(process: subprocess.Popen[str], seconds: float) -> str:
    """What the process prints in the next `seconds` (it should print nothing while retrying)."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if selector.select(timeout=seconds):
            return process.stdout.readline()
    return ""


@pytest.mark.slow
def test_real_command_once_says_one_line_and_exits_by_what_this_machine_has(
    transactional_db: None,
) -> None:
    result = subprocess.run(
        _agent_command("--host", "ci-once", "--once"),
        cwd=BASE_DIR,
        env=_agent_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    lines = (result.stdout + result.stderr).splitlines()
    host = Host.objects.get(name="ci-once")
    if _nvml_here():
        assert (result.returncode, host.agent_status) == (0, "ok"), lines
        assert len(lines) == 1 and lines[0].startswith("gpu_agent: reading ")
    else:
        assert (result.returncode, host.agent_status) == (1, "no_nvml"), lines
        assert len(lines) == 1 and lines[0].startswith("gpu_agent: no NVML on ci-once: ")
        assert host.agent_message.startswith("No NVML: ")


@pytest.mark.product  # the command as a process, signalled
def test_real_command_keeps_retrying_quietly_and_stops_cleanly_on_sigterm(
    agent_process: subprocess.Popen[str],
) -> None:
    first = read_until(agent_process, "gpu_agent: ", timeout=60)
    seen = Host.objects.get(name="ci-agent").agent_seen_at

    # Three more intervals: more reports in the database, not one more line on the console.
    assert _output_within(agent_process, 1.6) == ""
    host = Host.objects.get(name="ci-agent")
    assert seen is not None and host.agent_seen_at is not None and host.agent_seen_at > seen
    agent_process.send_signal(signal.SIGTERM)
    rest, _ = agent_process.communicate(timeout=30)

    assert agent_process.returncode == 0
    assert rest == ""
    expected = "reading " if _nvml_here() else "no NVML on ci-agent: "
    assert first.count("\n") == 1 and expected in first
    assert host.agent_status == ("ok" if _nvml_here() else "no_nvml")
