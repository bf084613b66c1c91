"""The demo's NVML: the reference site's GPUs as the demo cluster registered them, with figures
that follow the load on the demo's fake backends. Only `manage.py demo_gpu_agent` uses it; the
product never fakes NVML (apps.cluster.nvml opens the real one).

For each host the fake answers pynvml's functions (same names, pynvml's own error classes) from
the host's Gpu and GpuLink rows: names, memory, NVLink ports (a pair joined by n links shows n
ports at each end). The load is read the way one would read a real server, once per sample:

- llama-server: GET /slots (slots processing) and GET /metrics (tokens predicted so far);
- Ollama: GET /api/ps (models loaded; Ollama reports no busy slots);
- both: the admission leases lexweb holds on the backend's slots (PostgreSQL advisory locks),
  which is how many calls lexweb has running there.

A GPU of a board with a backend then shows the deployment's placement estimate in use (spread
over the board's GPUs by their size) while the model is loaded, and utilisation from the busy
share of the slots or the decode rate, whichever is higher; temperature and power follow
utilisation.
"""

import math
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import httpx
import pynvml
from django.db import connection

from apps.cluster.models import Backend, Gpu, GpuLink, Host
from apps.cluster.services.admission import lease_key

MIB = 1024**2
IDLE_MEMORY_BYTES = 300 * MIB  # the driver's own share on an idle card
SLOT_MEMORY_BYTES = 256 * MIB  # compute buffers of a busy slot, per GPU
POWER_LIMIT_MW = 300_000
IDLE_POWER_MW = 45_000
PROBE_TIMEOUT_S = 1.0
_PREDICTED = re.compile(r"^llamacpp:tokens_predicted_total\s+([0-9.eE+]+)\s*$", re.MULTILINE)


@dataclass
class NvmlPci:
    busId: str


@dataclass
class NvmlMemory:
    total: int
    used: int
    free: int


@dataclass
class NvmlUtilization:
    gpu: int
    memory: int


@dataclass
class NvmlProcess:
    pid: int
    usedGpuMemory: int | None


@dataclass(frozen=True)
class BackendLoad:
    """What one backend is doing right now, as seen from outside it."""

    reachable: bool
    busy_slots: int
    loaded: bool  # the model's weights are in GPU memory
    tokens_per_second: float | None  # decode rate since the previous look, when known


@dataclass
class DemoBackend:
    """A demo backend on one of the host's boards, and what the fake needs to play its load."""

    id: int
    name: str
    kind: str
    base_url: str
    slots: int
    gpu_indices: list[int]
    memory_estimate_bytes: int
    nominal_tokens_per_second: float
    predicted_total: float | None = None
    predicted_at: float | None = None


@dataclass
class DemoGpu:
    index: int
    name: str
    memory_bytes: int
    # The peer at each active NVLink port.
    ports: list[int] = field(default_factory=list)


def _bus(index: int) -> str:
    return f"00000000:{0x10 + index * 0x10:02X}:00.0"


class DemoNvml:
    """pynvml for one demo host. `probe(backend)` reads a backend's load (tests pass their own);
    readings are refreshed at most every `refresh_s` seconds, so one sample pass reads each
    backend once."""

    def __init__(
        self,
        *,
        host: str,
        gpus: Sequence[DemoGpu],
        backends: Sequence[DemoBackend],
        probe: Callable[[DemoBackend], BackendLoad],
        refresh_s: float = 1.0,
        seed: int = 0,
    ) -> None:
        self.host = host
        self.gpus = list(gpus)
        self.backends = list(backends)
        self.probe = probe
        self.refresh_s = refresh_s
        self.random = random.Random(seed)  # noqa: S311  (jitter on a demo figure)
        self.loads: dict[int, BackendLoad] = {}
        self.read_at = -math.inf
        self.utilisation: dict[int, int] = {}
        self.memory_used: dict[int, int] = {}
        self.shutdowns = 0

    # -- the load ---------------------------------------------------------------------------

    def refresh(self) -> None:
        if time.monotonic() - self.read_at < self.refresh_s:
            return
        self.loads = {backend.id: self.probe(backend) for backend in self.backends}
        self.read_at = time.monotonic()
        utilisation = dict.fromkeys(range(len(self.gpus)), 0)
        memory = dict.fromkeys(range(len(self.gpus)), IDLE_MEMORY_BYTES)
        for backend in self.backends:
            load = self.loads[backend.id]
            if not backend.gpu_indices or not load.reachable:
                continue
            busy_share = min(1.0, load.busy_slots / max(1, backend.slots))
            rate_share = 0.0
            if load.tokens_per_second and backend.nominal_tokens_per_second > 0:
                capacity = backend.nominal_tokens_per_second * backend.slots
                rate_share = min(1.0, load.tokens_per_second / capacity)
            share = max(busy_share, rate_share)
            for index in backend.gpu_indices:
                if index not in memory:
                    continue
                busy = round(share * 92) + self.random.randint(0, 3) if share else 0
                utilisation[index] = min(100, utilisation[index] + busy)
                if load.loaded:
                    memory[index] += self.weights_on(backend, index)
                memory[index] += load.busy_slots * SLOT_MEMORY_BYTES
        for index, gpu in enumerate(self.gpus):
            memory[index] = min(memory[index], gpu.memory_bytes)
        self.utilisation, self.memory_used = utilisation, memory

    def weights_on(self, backend: DemoBackend, index: int) -> int:
        """The model's share on one of its GPUs: split by card size, as llama.cpp's
        --tensor-split and Ollama spread a model over cards of different sizes."""
        sizes = [self.gpus[i].memory_bytes for i in backend.gpu_indices if i < len(self.gpus)]
        total = sum(sizes)
        if not total or index >= len(self.gpus):
            return 0
        return backend.memory_estimate_bytes * self.gpus[index].memory_bytes // total

    # -- pynvml -----------------------------------------------------------------------------

    def _gpu(self, handle: int) -> DemoGpu:
        if not isinstance(handle, int) or not 0 <= handle < len(self.gpus):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self.gpus[handle]

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._gpu(index)
        return index

    def nvmlDeviceGetName(self, handle: int) -> str:
        return self._gpu(handle).name

    def nvmlDeviceGetUUID(self, handle: int) -> str:
        self._gpu(handle)
        # Stable per host and index: the same card across restarts of the demo.
        digest = sum(ord(c) * (n + 1) for n, c in enumerate(self.host)) % 10**8
        return f"GPU-{digest:08d}-demo-{handle:04d}-0000-000000000000"

    def nvmlDeviceGetPciInfo(self, handle: int) -> NvmlPci:
        self._gpu(handle)
        return NvmlPci(_bus(handle).lower())

    def nvmlDeviceGetCudaComputeCapability(self, handle: int) -> tuple[int, int]:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetNvLinkState(self, handle: int, link: int) -> int:
        return 1 if link < len(self._gpu(handle).ports) else 0

    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: int, link: int) -> NvmlPci:
        ports = self._gpu(handle).ports
        if link >= len(ports):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return NvmlPci(_bus(ports[link]))

    def nvmlDeviceGetTopologyCommonAncestor(self, device1: int, device2: int) -> int:
        # The demo knows only the NVLinks the site file lists.
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> NvmlMemory:
        gpu = self._gpu(handle)
        self.refresh()
        used = self.memory_used.get(handle, IDLE_MEMORY_BYTES)
        return NvmlMemory(total=gpu.memory_bytes, used=used, free=gpu.memory_bytes - used)

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> NvmlUtilization:
        self._gpu(handle)
        self.refresh()
        value = self.utilisation.get(handle, 0)
        return NvmlUtilization(gpu=value, memory=value // 2)

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        self._gpu(handle)
        return 34 + self.utilisation.get(handle, 0) * 45 // 100

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:
        self._gpu(handle)
        share = self.utilisation.get(handle, 0) / 100
        return IDLE_POWER_MW + round(share * (POWER_LIMIT_MW - IDLE_POWER_MW) * 0.9)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: int) -> int:
        self._gpu(handle)
        return POWER_LIMIT_MW

    def nvmlDeviceGetClockInfo(self, handle: int, clock_type: int) -> int:
        self._gpu(handle)
        busy = self.utilisation.get(handle, 0) > 0
        if clock_type == pynvml.NVML_CLOCK_SM:
            return 1530 if busy else 135
        return 877

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[NvmlProcess]:
        self._gpu(handle)
        found = []
        for backend in self.backends:
            load = self.loads.get(backend.id)
            if handle in backend.gpu_indices and load is not None and load.loaded:
                used = self.weights_on(backend, handle)
                found.append(NvmlProcess(pid=_pid(backend), usedGpuMemory=used))
        return found

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        for backend in self.backends:
            if _pid(backend) == pid:
                return "llama-server" if backend.kind == Backend.Kind.LLAMA_CPP else "ollama"
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)


def _pid(backend: DemoBackend) -> int:
    return 40_000 + backend.id


# --- Reading a backend's load ---------------------------------------------------------------


def http_probe(client: httpx.Client) -> Callable[[DemoBackend], BackendLoad]:
    """A probe that asks the backend itself (and the admission leases) what it is doing."""

    def probe(backend: DemoBackend) -> BackendLoad:
        leased = leases_held(backend)
        try:
            if backend.kind == Backend.Kind.LLAMA_CPP:
                return _llama_load(client, backend, leased)
            return _ollama_load(client, backend, leased)
        except (httpx.HTTPError, ValueError, TypeError, KeyError):
            # Down or answering nonsense: its GPUs are idle, as a stopped server's would be.
            return BackendLoad(reachable=False, busy_slots=0, loaded=False, tokens_per_second=None)

    return probe


def _llama_load(client: httpx.Client, backend: DemoBackend, leased: int) -> BackendLoad:
    slots = client.get(f"{backend.base_url}/slots").raise_for_status().json()
    busy = sum(1 for slot in slots if isinstance(slot, dict) and slot.get("is_processing"))
    rate = None
    metrics = client.get(f"{backend.base_url}/metrics")
    found = _PREDICTED.search(metrics.text) if metrics.is_success else None
    if found is not None:
        total, now = float(found.group(1)), time.monotonic()
        if backend.predicted_total is not None and backend.predicted_at is not None:
            span = now - backend.predicted_at
            if span > 0 and total >= backend.predicted_total:
                rate = (total - backend.predicted_total) / span
        backend.predicted_total, backend.predicted_at = total, now
    return BackendLoad(
        reachable=True, busy_slots=max(busy, leased), loaded=True, tokens_per_second=rate
    )


def _ollama_load(client: httpx.Client, backend: DemoBackend, leased: int) -> BackendLoad:
    models = client.get(f"{backend.base_url}/api/ps").raise_for_status().json()["models"]
    loaded = bool(models) or leased > 0
    return BackendLoad(reachable=True, busy_slots=leased, loaded=loaded, tokens_per_second=None)


_LEASES_SQL = """
SELECT count(*) FROM pg_locks
 WHERE locktype = 'advisory' AND granted AND objsubid = 1
   AND ((classid::bigint << 32) | objid::bigint) = ANY(%s)
"""


def leases_held(backend: DemoBackend) -> int:
    """How many of the backend's slots lexweb's admission holds now (its advisory locks)."""
    keys = [lease_key(backend.id, slot) for slot in range(backend.slots)]
    with connection.cursor() as cursor:
        cursor.execute(_LEASES_SQL, [keys])
        row = cursor.fetchone()
    return int(row[0]) if row else 0


# --- Building the fake from the registry ----------------------------------------------------


def demo_nvml_for(
    host: Host,
    *,
    demo_urls: dict[str, str],
    speeds: dict[str, float],
    default_speed: float,
    probe: Callable[[DemoBackend], BackendLoad],
    refresh_s: float = 1.0,
) -> DemoNvml | None:
    """The demo NVML of `host`, from its rows; None when the host is not the demo's to play:
    its GPU indices are not 0..n-1, it has no GPUs, or one of its backends is not a demo
    backend (a firm's own server on this host: its real agent reports here, never a fake)."""
    rows = list(Gpu.objects.filter(host=host).order_by("index"))
    if not rows or [gpu.index for gpu in rows] != list(range(len(rows))):
        return None
    backends_here = list(
        Backend.objects.filter(board__host=host, enabled=True)
        .prefetch_related("deployments")
        .order_by("name")
    )
    if any(demo_urls.get(b.name) != b.base_url for b in backends_here):
        return None
    index_of = {gpu.pk: gpu.index for gpu in rows}
    gpus = [DemoGpu(index=g.index, name=g.name, memory_bytes=g.memory_bytes) for g in rows]
    links = GpuLink.objects.filter(a__host=host, kind=GpuLink.Kind.NVLINK).values_list(
        "a_id", "b_id", "nvlink_count"
    )
    for a, b, count in links:
        if a in index_of and b in index_of:
            gpus[index_of[a]].ports += [index_of[b]] * count
            gpus[index_of[b]].ports += [index_of[a]] * count
    by_board: dict[int, list[int]] = {}
    for gpu in rows:
        if gpu.board_id is not None:
            by_board.setdefault(gpu.board_id, []).append(gpu.index)
    demo_backends = []
    for backend in backends_here:
        deployments = list(backend.deployments.all())
        model = deployments[0].model_name if deployments else ""
        demo_backends.append(
            DemoBackend(
                id=backend.pk,
                name=backend.name,
                kind=backend.kind,
                base_url=backend.base_url.rstrip("/"),
                slots=backend.slots,
                gpu_indices=by_board.get(backend.board_id, []),
                memory_estimate_bytes=sum(d.memory_estimate_bytes for d in deployments),
                nominal_tokens_per_second=speeds.get(model, default_speed),
            )
        )
    return DemoNvml(
        host=host.name, gpus=gpus, backends=demo_backends, probe=probe, refresh_s=refresh_s
    )


def idle_probe(backend: DemoBackend) -> BackendLoad:
    """Every backend up, idle, its model loaded (for tests that only need the inventory)."""
    return BackendLoad(reachable=True, busy_slots=0, loaded=True, tokens_per_second=None)
