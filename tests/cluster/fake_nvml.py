"""A fake NVML with the reference site's Threadripper host (DESIGN.md): 12 V100-SXM2, boards
{4,5,8,9} and {6,7,10,11} joined by NVLink inside each board, NVLink pairs {0,1} and {2,3}
(one card of that pair has 16 GB), nothing across groups. Same function names as pynvml."""

from dataclasses import dataclass

GIB = 1024**3
V100_LINKS = 6


class NVMLError_NotSupported(Exception):
    pass


@dataclass
class _Pci:
    busId: str


@dataclass
class _Memory:
    total: int


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


class ReferenceSiteNvml:
    def __init__(self) -> None:
        self.links = _reference_links()

    def nvmlDeviceGetCount(self) -> int:
        return 12

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        if not 0 <= index < 12:
            raise NVMLError_NotSupported(index)
        return index

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        return b"Tesla V100-SXM2-16GB" if handle == 3 else b"Tesla V100-SXM2-32GB"

    def nvmlDeviceGetUUID(self, handle: int) -> str:
        return f"GPU-{handle:08d}-0000-0000-0000-000000000000"

    def nvmlDeviceGetPciInfo(self, handle: int) -> _Pci:
        return _Pci(_bus(handle).lower())

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> _Memory:
        return _Memory(16 * GIB if handle == 3 else 32 * GIB)

    def nvmlDeviceGetNvLinkState(self, handle: int, link: int) -> int:
        if link >= V100_LINKS:
            raise NVMLError_NotSupported(link)
        return 1 if link < len(self.links[handle]) else 0

    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: int, link: int) -> _Pci:
        return _Pci(_bus(self.links[handle][link]))
