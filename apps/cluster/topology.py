"""GPU topology from NVML: which GPUs are joined by NVLink, how the others reach each other, and
the boards that follow.

A model must stay on one board: a hop between boards crosses PCIe/NUMA. Boards are proposed as
the NVLink-connected groups of GPUs (an admin accepts or edits the proposal). GPUs without any
active NVLink stand alone. For every pair without NVLink we also record NVML's common ancestor
(one PCIe switch, several, the host bridge, the NUMA node, or across NUMA nodes), which the
admin sees next to the proposal. This module reads NVML only through `apps.cluster.nvml.Nvml`,
so the same code runs against pynvml on a GPU host and against a recorded fake in tests.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from itertools import combinations
from typing import Any, Literal

import pynvml

from apps.cluster.nvml import Nvml, optional, text

# NVML_NVLINK_MAX_LINKS in the NVML version we pin; asking past a GPU's last link answers
# NotSupported or InvalidArgument, which we skip.
NVLINK_MAX_LINKS: int = pynvml.NVML_NVLINK_MAX_LINKS

PathKind = Literal["pix", "pxb", "phb", "node", "sys"]

# NVML's common-ancestor levels, named as GpuLink.Kind (and nvidia-smi topo -m) names them.
# INTERNAL means both GPUs sit on one card (a dual-GPU board): as close as one PCIe switch.
PATH_KINDS: dict[int, PathKind] = {
    pynvml.NVML_TOPOLOGY_INTERNAL: "pix",
    pynvml.NVML_TOPOLOGY_SINGLE: "pix",
    pynvml.NVML_TOPOLOGY_MULTIPLE: "pxb",
    pynvml.NVML_TOPOLOGY_HOSTBRIDGE: "phb",
    pynvml.NVML_TOPOLOGY_NODE: "node",
    pynvml.NVML_TOPOLOGY_SYSTEM: "sys",
}


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: str
    name: str
    bus_id: str
    memory_bytes: int
    compute_capability: str = ""  # "7.0"; empty where NVML does not report it


@dataclass
class Topology:
    gpus: list[Gpu]
    # Active NVLink count between two GPU indices (lower index first).
    nvlinks: dict[tuple[int, int], int] = field(default_factory=dict)
    # For pairs without NVLink: their closest common ancestor. A pair missing from both dicts
    # is one NVML could not place (NotSupported, e.g. in some VMs).
    paths: dict[tuple[int, int], PathKind] = field(default_factory=dict)

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


def path_kind(level: int) -> PathKind:
    """GpuLink kind for an NVML topology level. A level this NVML version does not name is
    taken as the farthest ("sys"): assuming a slow path is the safe mistake for placement."""
    return PATH_KINDS.get(level, "sys")


def _bus(pci: Any) -> str:
    # NVML reports e.g. "00000000:1A:00.0"; normalise case for matching peers.
    return text(pci.busId).upper()


def _capability(nvml: Nvml, handle: Any) -> str:
    found = optional(lambda: nvml.nvmlDeviceGetCudaComputeCapability(handle))
    return "" if found is None else f"{found[0]}.{found[1]}"


def discover(nvml: Nvml) -> Topology:
    """Read every GPU, every active NVLink, and the common ancestor of every other pair.

    Links to non-GPU devices (NVSwitch, CPU) are ignored; a link reported from both ends is
    counted once per end and halved. NVML errors other than "not supported" are raised.
    """
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
    gpus = [
        Gpu(
            index=i,
            uuid=text(nvml.nvmlDeviceGetUUID(h)),
            name=text(nvml.nvmlDeviceGetName(h)),
            bus_id=_bus(nvml.nvmlDeviceGetPciInfo(h)),
            memory_bytes=int(nvml.nvmlDeviceGetMemoryInfo(h).total),
            compute_capability=_capability(nvml, h),
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
    nvlinks = {k: max(1, v // 2) for k, v in ends.items()}
    return Topology(gpus=gpus, nvlinks=nvlinks, paths=_paths(nvml, handles, nvlinks))


def _paths(
    nvml: Nvml, handles: list[Any], nvlinks: dict[tuple[int, int], int]
) -> dict[tuple[int, int], PathKind]:
    paths: dict[tuple[int, int], PathKind] = {}
    for a, b in combinations(range(len(handles)), 2):
        if (a, b) in nvlinks:
            continue
        level = optional(partial(nvml.nvmlDeviceGetTopologyCommonAncestor, handles[a], handles[b]))
        if level is not None:
            paths[(a, b)] = path_kind(int(level))
    return paths


def _active_peers(nvml: Nvml, handle: Any, by_bus: dict[str, int]) -> Iterable[int]:
    for link in range(NVLINK_MAX_LINKS):
        try:
            if not nvml.nvmlDeviceGetNvLinkState(handle, link):
                continue
            remote = _bus(nvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link))
        except (pynvml.NVMLError_NotSupported, pynvml.NVMLError_InvalidArgument):
            # Past this GPU's last link, or a GPU without NVLink at all.
            continue
        if remote in by_bus:
            yield by_bus[remote]
