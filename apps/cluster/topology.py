"""GPU topology from NVML: which GPUs are joined by NVLink, and the boards that follows.

A model must stay on one board: a hop between boards crosses PCIe/NUMA. Boards are proposed as
the NVLink-connected groups of GPUs (an admin accepts or edits the proposal). GPUs without any
active NVLink stand alone. This module only reads NVML through the few functions below, so the
same code runs against `pynvml` on a GPU host and against a recorded fake in tests.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

NVLINK_MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS; V100 has 6, newer boards up to 18


class Nvml(Protocol):
    """The part of pynvml we use (same names and argument order)."""

    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...
    def nvmlDeviceGetName(self, handle: Any) -> str: ...
    def nvmlDeviceGetUUID(self, handle: Any) -> str: ...
    def nvmlDeviceGetPciInfo(self, handle: Any) -> Any: ...
    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any: ...
    def nvmlDeviceGetNvLinkState(self, handle: Any, link: int) -> int: ...
    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: Any, link: int) -> Any: ...


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: str
    name: str
    bus_id: str
    memory_bytes: int


@dataclass
class Topology:
    gpus: list[Gpu]
    # Active NVLink count between two GPU indices (lower index first).
    nvlinks: dict[tuple[int, int], int] = field(default_factory=dict)

    def proposed_boards(self) -> list[list[int]]:
        """NVLink-connected groups, each sorted, ordered by their lowest index."""
        parent = {gpu.index: gpu.index for gpu in self.gpus}

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for a, b in self.nvlinks:
            parent[root(a)] = root(b)
        groups: dict[int, list[int]] = {}
        for gpu in self.gpus:
            groups.setdefault(root(gpu.index), []).append(gpu.index)
        return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _bus(pci: Any) -> str:
    # NVML reports e.g. "00000000:1A:00.0"; normalise case for matching peers.
    return _text(pci.busId).upper()


def discover(nvml: Nvml) -> Topology:
    """Read every GPU and every active NVLink. Links to non-GPU devices (NVSwitch, CPU) are
    ignored; a link reported from both ends is counted once per end and halved."""
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
    gpus = [
        Gpu(
            index=i,
            uuid=_text(nvml.nvmlDeviceGetUUID(h)),
            name=_text(nvml.nvmlDeviceGetName(h)),
            bus_id=_bus(nvml.nvmlDeviceGetPciInfo(h)),
            memory_bytes=int(nvml.nvmlDeviceGetMemoryInfo(h).total),
        )
        for i, h in enumerate(handles)
    ]
    by_bus = {gpu.bus_id: gpu.index for gpu in gpus}
    ends: dict[tuple[int, int], int] = {}
    for gpu, handle in zip(gpus, handles, strict=True):
        for peer in _active_peers(nvml, handle, by_bus):
            if peer != gpu.index:
                key = (min(gpu.index, peer), max(gpu.index, peer))
                ends[key] = ends.get(key, 0) + 1
    return Topology(gpus=gpus, nvlinks={k: max(1, v // 2) for k, v in ends.items()})


def _active_peers(nvml: Nvml, handle: Any, by_bus: dict[str, int]) -> Iterable[int]:
    for link in range(NVLINK_MAX_LINKS):
        try:
            if not nvml.nvmlDeviceGetNvLinkState(handle, link):
                continue
            remote = _bus(nvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link))
        except (
            Exception
        ) as exc:  # NVML raises NVMLError_NotSupported / InvalidArgument past the last link
            if type(exc).__name__.startswith("NVMLError"):
                continue
            raise
        if remote in by_bus:
            yield by_bus[remote]
