"""Issue 4, requirement 2 (topology part): boards are the NVLink-connected groups."""

from apps.cluster import topology
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
