"""A fake NVML with the reference site's Threadripper host (DESIGN.md): 12 V100-SXM2, boards
{4,5,8,9} and {6,7,10,11} joined by NVLink inside each board, NVLink pairs {0,1} and {2,3}
(one card of that pair has 16 GB), nothing across groups. Same function names as pynvml, and
pynvml's own error classes and constants, so the code under test cannot tell the difference.

PCIe layout (what nvmlDeviceGetTopologyCommonAncestor answers for pairs):

    NUMA node 0  host bridge 0  switch u0 ─┬─ switch s0: GPUs 0, 1
                                           └─ switch s1: GPUs 2, 3
                 host bridge 1  switch s2: GPUs 4, 6      switch s3: GPUs 5, 7
    NUMA node 1  host bridge 2  switch s4: GPUs 8, 10     switch s5: GPUs 9, 11

So, among pairs without NVLink: (0,2) share u0 (pxb), (4,6) one switch (pix), (4,7) the host
bridge (phb), (0,4) NUMA node 0 (node), (0,8) cross the nodes (sys).
"""

from collections.abc import Callable
from dataclasses import dataclass

import pynvml

# The shapes pynvml returns, shared with the demo's fake NVML.
from lexweb_dev.fake_nvml import NvmlMemory as _Memory
from lexweb_dev.fake_nvml import NvmlPci as _Pci
from lexweb_dev.fake_nvml import NvmlProcess as _Process
from lexweb_dev.fake_nvml import NvmlUtilization as _Utilization

GIB = 1024**3
V100_LINKS = 6
GPU_COUNT = 12


@dataclass(frozen=True)
class _Place:
    numa: int
    host_bridge: int
    upper_switch: str | None
    switch: str


PLACES: dict[int, _Place] = {
    0: _Place(0, 0, "u0", "s0"),
    1: _Place(0, 0, "u0", "s0"),
    2: _Place(0, 0, "u0", "s1"),
    3: _Place(0, 0, "u0", "s1"),
    4: _Place(0, 1, None, "s2"),
    6: _Place(0, 1, None, "s2"),
    5: _Place(0, 1, None, "s3"),
    7: _Place(0, 1, None, "s3"),
    8: _Place(1, 2, None, "s4"),
    10: _Place(1, 2, None, "s4"),
    9: _Place(1, 2, None, "s5"),
    11: _Place(1, 2, None, "s5"),
}


def _bus(index: int) -> str:
    return f"00000000:{0x10 + index * 0x10:02X}:00.0"


def _reference_links() -> dict[int, list[int]]:
    """Per GPU, the peer at each of its 6 NVLink ports (hybrid cube mesh inside a board)."""
    links: dict[int, list[int]] = {}
    for board in ([4, 5, 8, 9], [6, 7, 10, 11]):
        for gpu in board:
            peers = [p for p in board if p != gpu]
            links[gpu] = [peers[0], peers[0], peers[1], peers[1], peers[2], peers[2]]
    for a, b in ((0, 1), (2, 3)):
        links[a] = [b] * 4
        links[b] = [a] * 4
    return links


def _common_ancestor(a: _Place, b: _Place) -> int:
    if a.numa != b.numa:
        return int(pynvml.NVML_TOPOLOGY_SYSTEM)
    if a.host_bridge != b.host_bridge:
        return int(pynvml.NVML_TOPOLOGY_NODE)
    if a.switch == b.switch:
        return int(pynvml.NVML_TOPOLOGY_SINGLE)
    if a.upper_switch is not None and a.upper_switch == b.upper_switch:
        return int(pynvml.NVML_TOPOLOGY_MULTIPLE)
    return int(pynvml.NVML_TOPOLOGY_HOSTBRIDGE)


class ReferenceSiteNvml:
    """The reference host, idle at first. Tests change the public attributes to make the GPUs
    busy, make a function unsupported, or make the driver fail."""

    def __init__(self) -> None:
        self.links = _reference_links()
        self.uuids = {i: f"GPU-{i:08d}-0000-0000-0000-000000000000" for i in range(GPU_COUNT)}
        self.utilisation = dict.fromkeys(range(GPU_COUNT), 0)
        self.memory_used = dict.fromkeys(range(GPU_COUNT), 300 * 1024**2)
        self.temperature = dict.fromkeys(range(GPU_COUNT), 35)
        self.power_mw = dict.fromkeys(range(GPU_COUNT), 45_000)
        self.processes: dict[int, list[_Process]] = {i: [] for i in range(GPU_COUNT)}
        self.process_names: dict[int, str] = {}
        # Function names that answer NVMLError_NotSupported, as on cards without that sensor.
        self.unsupported: set[str] = set()
        # Set to an NVML error code to make every call fail with it (driver fell over).
        self.failing_with: int | None = None
        # Called with the number of samples read so far, each time GPU 0's utilisation is read.
        self.on_sample: Callable[[int], None] | None = None
        self.samples_read = 0
        self.shutdowns = 0

    def _enter(self, name: str) -> None:
        if self.failing_with is not None:
            raise pynvml.NVMLError(self.failing_with)
        if name in self.unsupported:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return GPU_COUNT

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._enter("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < GPU_COUNT:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return index

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        self._enter("nvmlDeviceGetName")
        return b"Tesla V100-SXM2-16GB" if handle == 3 else b"Tesla V100-SXM2-32GB"

    def nvmlDeviceGetUUID(self, handle: int) -> str:
        self._enter("nvmlDeviceGetUUID")
        return self.uuids[handle]

    def nvmlDeviceGetPciInfo(self, handle: int) -> _Pci:
        self._enter("nvmlDeviceGetPciInfo")
        return _Pci(_bus(handle).lower())

    def nvmlDeviceGetCudaComputeCapability(self, handle: int) -> tuple[int, int]:
        self._enter("nvmlDeviceGetCudaComputeCapability")
        return (7, 0)

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> _Memory:
        self._enter("nvmlDeviceGetMemoryInfo")
        total = 16 * GIB if handle == 3 else 32 * GIB
        used = self.memory_used[handle]
        return _Memory(total=total, used=used, free=total - used)

    def nvmlDeviceGetNvLinkState(self, handle: int, link: int) -> int:
        self._enter("nvmlDeviceGetNvLinkState")
        if link >= V100_LINKS:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return 1 if link < len(self.links[handle]) else 0

    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: int, link: int) -> _Pci:
        self._enter("nvmlDeviceGetNvLinkRemotePciInfo")
        return _Pci(_bus(self.links[handle][link]))

    def nvmlDeviceGetTopologyCommonAncestor(self, device1: int, device2: int) -> int:
        self._enter("nvmlDeviceGetTopologyCommonAncestor")
        return _common_ancestor(PLACES[device1], PLACES[device2])

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> _Utilization:
        self._enter("nvmlDeviceGetUtilizationRates")
        if handle == 0:
            self.samples_read += 1
            if self.on_sample is not None:
                self.on_sample(self.samples_read)
        return _Utilization(gpu=self.utilisation[handle], memory=self.utilisation[handle] // 2)

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        self._enter("nvmlDeviceGetTemperature")
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return self.temperature[handle]

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:
        self._enter("nvmlDeviceGetPowerUsage")
        return self.power_mw[handle]

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: int) -> int:
        self._enter("nvmlDeviceGetEnforcedPowerLimit")
        return 300_000

    def nvmlDeviceGetClockInfo(self, handle: int, clock_type: int) -> int:
        self._enter("nvmlDeviceGetClockInfo")
        clocks = {pynvml.NVML_CLOCK_SM: 1530, pynvml.NVML_CLOCK_MEM: 877}
        return clocks[clock_type]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[_Process]:
        self._enter("nvmlDeviceGetComputeRunningProcesses")
        return list(self.processes[handle])

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        self._enter("nvmlSystemGetProcessName")
        if pid not in self.process_names:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return self.process_names[pid]
