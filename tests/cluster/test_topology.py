"""Issue 4, requirement 2 (topology part): boards are the NVLink-connected groups."""

import pynvml
import pytest

from apps.cluster import topology
from apps.cluster.models import GpuLink
from tests.cluster.fake_nvml import GIB, ReferenceSiteNvml


def test_reference_site_gives_exactly_its_two_boards_and_two_pairs() -> None:
    found = topology.discover(ReferenceSiteNvml())

    assert found.proposed_boards() == [[0, 1], [2, 3], [4, 5, 8, 9], [6, 7, 10, 11]]


def test_gpus_are_read_with_their_memory_and_the_16_gb_card_is_seen() -> None:
    found = topology.discover(ReferenceSiteNvml())

    assert [g.index for g in found.gpus] == list(range(12))
    assert {g.index: g.memory_bytes for g in found.gpus}[3] == 16 * GIB
    assert found.gpus[3].name == "Tesla V100-SXM2-16GB"
    assert all(g.bus_id == g.bus_id.upper() for g in found.gpus)


def test_link_counts_are_per_pair_and_never_cross_boards() -> None:
    found = topology.discover(ReferenceSiteNvml())

    assert found.nvlinks[(4, 5)] == 2 and found.nvlinks[(0, 1)] == 4
    boards = found.proposed_boards()
    board_of = {gpu: n for n, board in enumerate(boards) for gpu in board}
    assert all(board_of[a] == board_of[b] for a, b in found.nvlinks)


def test_a_gpu_without_nvlink_stands_alone() -> None:
    nvml = ReferenceSiteNvml()
    for peer in (2, 3):
        nvml.links[peer] = []  # the 16 GB pair loses its bridge

    boards = topology.discover(nvml).proposed_boards()

    assert [2] in boards and [3] in boards


def test_boards_are_exactly_the_reference_sets_with_the_16_gb_card_in_its_pair() -> None:
    found = topology.discover(ReferenceSiteNvml())

    boards = {frozenset(board) for board in found.proposed_boards()}
    assert boards == {
        frozenset({4, 5, 8, 9}),
        frozenset({6, 7, 10, 11}),
        frozenset({0, 1}),
        frozenset({2, 3}),
    }
    small = [g.index for g in found.gpus if g.memory_bytes == 16 * GIB]
    assert small == [3] and {2, 3} in [set(b) for b in found.proposed_boards()]


def test_every_gpu_reports_compute_capability_7_0() -> None:
    found = topology.discover(ReferenceSiteNvml())

    assert {g.compute_capability for g in found.gpus} == {"7.0"}


def test_pairs_without_nvlink_get_their_pcie_or_numa_path() -> None:
    found = topology.discover(ReferenceSiteNvml())

    assert found.paths[(0, 2)] == "pxb"  # two switches under one upper switch
    assert found.paths[(4, 6)] == "pix"  # one switch, different boards
    assert found.paths[(4, 7)] == "phb"  # the same host bridge
    assert found.paths[(0, 4)] == "node"  # host bridges of one NUMA node
    assert found.paths[(0, 8)] == "sys"  # across NUMA nodes
    assert found.paths[(6, 9)] == "sys"


def test_every_pair_is_either_nvlink_or_has_a_path_never_both() -> None:
    found = topology.discover(ReferenceSiteNvml())

    pairs = {(a, b) for a in range(12) for b in range(a + 1, 12)}
    assert set(found.nvlinks) | set(found.paths) == pairs
    assert not set(found.nvlinks) & set(found.paths)


def test_nvml_levels_map_to_link_kinds_with_pynvml_values() -> None:
    assert topology.path_kind(pynvml.NVML_TOPOLOGY_INTERNAL) == "pix"
    assert topology.path_kind(pynvml.NVML_TOPOLOGY_SINGLE) == "pix"
    assert topology.path_kind(pynvml.NVML_TOPOLOGY_MULTIPLE) == "pxb"
    assert topology.path_kind(pynvml.NVML_TOPOLOGY_HOSTBRIDGE) == "phb"
    assert topology.path_kind(pynvml.NVML_TOPOLOGY_NODE) == "node"
    assert topology.path_kind(pynvml.NVML_TOPOLOGY_SYSTEM) == "sys"
    # A level a future driver adds is taken as the slowest path, never as a close one.
    assert topology.path_kind(45) == "sys"


def test_link_kinds_are_the_models_choices() -> None:
    assert set(topology.PATH_KINDS.values()) | {"nvlink"} == set(GpuLink.Kind.values)


def test_unsupported_common_ancestor_and_capability_leave_them_unknown() -> None:
    nvml = ReferenceSiteNvml()
    nvml.unsupported |= {
        "nvmlDeviceGetTopologyCommonAncestor",
        "nvmlDeviceGetCudaComputeCapability",
    }

    found = topology.discover(nvml)

    assert found.paths == {}
    assert {g.compute_capability for g in found.gpus} == {""}
    assert len(found.proposed_boards()) == 4


def test_a_gpu_without_nvlink_support_is_alone_and_other_errors_are_raised() -> None:
    nvml = ReferenceSiteNvml()
    nvml.unsupported.add("nvmlDeviceGetNvLinkState")

    assert topology.discover(nvml).proposed_boards() == [[i] for i in range(12)]

    nvml = ReferenceSiteNvml()
    nvml.failing_with = pynvml.NVML_ERROR_GPU_IS_LOST
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        topology.discover(nvml)
