"""What the GPU agent records, and accepting its board proposal.

- `host_register`: the agent's host row, by name.
- `gpu_inventory_record`: GPUs and the links between them as NVML sees them, plus the proposed
  boards (NVLink-connected groups). Never changes boards: an admin accepts the proposal with
  `board_proposal_accept`.
- `gpu_samples_record`: the latest sample per GPU (GpuStatus) and the downsampled history
  (GpuSample): 60 s buckets kept 2 days, 1 h buckets kept 90 days. At 12 GPUs that is at most
  ~35,000 + ~26,000 rows, each bucket updated in place by one upsert per sample.
- `host_agent_status_set`: the agent's own state (ok, no NVML, error) and when it last reported.

Callers read NVML before calling these: no transaction here is held open across an NVML call.
"""

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import reduce

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from apps.accounts.models import User
from apps.accounts.services import audit_record
from apps.cluster.events import AgentStatusEvent, GpuSampleEvent, publish_cluster
from apps.cluster.models import Board, Gpu, GpuLink, GpuSample, GpuStatus, Host
from apps.cluster.nvml import GpuReading
from apps.cluster.topology import Topology
from lexweb.errors import DomainError
from lexweb.text import one_line

# (bucket seconds, how long buckets of that size are kept)
HISTORY: tuple[tuple[int, timedelta], ...] = (
    (60, timedelta(days=2)),
    (3600, timedelta(days=90)),
)
_NAME_MAX = Host._meta.get_field("name").max_length or 100
_MESSAGE_MAX = Host._meta.get_field("agent_message").max_length or 300
_BOARD_NAME_MAX = Board._meta.get_field("name").max_length or 50


# --- Host ---------------------------------------------------------------------------------


def host_register(*, name: str) -> Host:
    """The host called `name`, created on first use. An admin may have created it already
    (from a site file or by hand); the agent then reports into that row."""
    if not name or not name.strip():
        raise DomainError("The host name must not be empty.")
    if len(name) > _NAME_MAX:
        raise DomainError(f"The host name is longer than {_NAME_MAX} characters.")
    if not name.isprintable() or name != name.strip():
        raise DomainError("The host name may not contain control characters or surrounding spaces.")
    host, _ = Host.objects.get_or_create(name=name)
    return host


def host_agent_status_set(*, host: Host, status: Host.AgentStatus, message: str) -> bool:
    """Record that the agent reported `status` now. The dashboard hears of it (after commit)
    only when status or message differ from what was stored; returns whether they did."""
    if status not in Host.AgentStatus.values:
        raise DomainError(f"Unknown agent status {status!r}.")
    message = one_line(message, _MESSAGE_MAX)
    now = timezone.now()
    with transaction.atomic():
        stored = Host.objects.select_for_update().only("agent_status", "agent_message")
        current = stored.get(pk=host.pk)
        changed = (current.agent_status, current.agent_message) != (status, message)
        Host.objects.filter(pk=host.pk).update(
            agent_status=status, agent_message=message, agent_seen_at=now
        )
        if changed:
            publish_cluster(
                AgentStatusEvent(
                    type="cluster.agent_status",
                    host_id=host.pk,
                    host=host.name,
                    status=str(status),
                    message=message,
                    at=now.isoformat(),
                )
            )
    host.agent_status, host.agent_message, host.agent_seen_at = status, message, now
    return changed


# --- Inventory ------------------------------------------------------------------------------


@transaction.atomic
def gpu_inventory_record(*, host: Host, topology: Topology) -> dict[int, Gpu]:
    """Make the host's GPU and link rows say what NVML found; returns the rows by index.

    1. A UUID now seen at another index (or host) is taken off its old row, so the card's
       identity follows the card.
    2. One Gpu row per index is created or updated (uuid, name, memory, capability, bus id).
       Boards are left as they are; rows for indices NVML no longer reports are kept (a
       backend may still name their board).
    3. One GpuLink per pair NVML placed (NVLink with its count, or the common ancestor); a
       stored link between these GPUs that NVML no longer reports is removed.
    4. The proposal (NVLink-connected groups) is stored with the time it was made.
    """
    indices = _indices(topology)
    if len(set(indices)) != len(indices):
        # NVML numbers GPUs 0..n-1; anything else is a broken driver or reader, not a site.
        raise DomainError(f"NVML on {host.name} reported a GPU index twice: {sorted(indices)}.")
    moved = [Q(uuid=gpu.uuid) & ~Q(host=host, index=gpu.index) for gpu in topology.gpus if gpu.uuid]
    if moved:
        Gpu.objects.filter(reduce(operator.or_, moved)).update(uuid="")
    Gpu.objects.bulk_create(
        [
            Gpu(
                host=host,
                index=gpu.index,
                uuid=gpu.uuid,
                name=gpu.name,
                memory_bytes=gpu.memory_bytes,
                compute_capability=gpu.compute_capability,
                pci_bus_id=gpu.bus_id,
            )
            for gpu in topology.gpus
        ],
        update_conflicts=True,
        unique_fields=["host", "index"],
        update_fields=["uuid", "name", "memory_bytes", "compute_capability", "pci_bus_id"],
    )
    rows = {g.index: g for g in Gpu.objects.filter(host=host, index__in=_indices(topology))}
    _links_record(rows, topology)
    host.proposed_boards = topology.proposed_boards()
    host.proposed_at = timezone.now()
    host.save(update_fields=["proposed_boards", "proposed_at"])
    return rows


def _indices(topology: Topology) -> list[int]:
    return [gpu.index for gpu in topology.gpus]


def _links_record(rows: dict[int, Gpu], topology: Topology) -> None:
    found: dict[tuple[int, int], tuple[str, int]] = {
        pair: (GpuLink.Kind.NVLINK, count) for pair, count in topology.nvlinks.items()
    }
    found.update({pair: (kind, 0) for pair, kind in topology.paths.items()})
    links: list[GpuLink] = []
    for (x, y), (kind, count) in found.items():
        # The table orders each pair by primary key (its check constraint), not by index.
        a, b = sorted((rows[x], rows[y]), key=lambda gpu: gpu.pk)
        links.append(GpuLink(a=a, b=b, kind=kind, nvlink_count=count))
    GpuLink.objects.bulk_create(
        links,
        update_conflicts=True,
        unique_fields=["a", "b"],
        update_fields=["kind", "nvlink_count"],
    )
    kept = {(link.a.pk, link.b.pk) for link in links}
    ids = [gpu.pk for gpu in rows.values()]
    stale = [
        pk
        for pk, a, b in GpuLink.objects.filter(a__in=ids, b__in=ids).values_list("pk", "a", "b")
        if (a, b) not in kept
    ]
    GpuLink.objects.filter(pk__in=stale).delete()


# --- Boards ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Step:
    group: list[int]
    board: Board | None  # the board that already is exactly this group, if any


@transaction.atomic
def board_proposal_accept(*, host: Host, actor: User | None) -> list[Board]:
    """Make each group of `host.proposed_boards` one board; returns them in proposal order.

    1. Lock the host row (two admins accepting at once take turns) and re-read the proposal,
       which an admin may have edited: it must be lists of this host's GPU indices, each GPU
       in one group at most.
    2. A group that already is exactly the GPUs of one board keeps that board and its name.
    3. Any other group is refused if a board it would take GPUs from (or the board its name
       would reuse) serves a backend: move the backend first. Nothing is changed then.
    4. Each remaining group becomes a board named after its GPUs ("GPUs 4,5,8,9"); boards left
       without GPUs and backends are deleted. One audit event if anything changed.
    Idempotent: accepting the same proposal again changes nothing and records nothing.
    """
    host = Host.objects.select_for_update().get(pk=host.pk)
    groups = _proposal_checked(host)
    gpus = {gpu.index: gpu for gpu in Gpu.objects.filter(host=host).select_related("board")}
    steps = [_Step(group, _board_exactly(gpus, group)) for group in groups]
    for step in steps:
        if step.board is None:
            _refuse_if_in_use(host, gpus, step.group)
    result: list[Board] = []
    touched: set[int] = set()
    for step in steps:
        if step.board is not None:
            result.append(step.board)
            continue
        touched.update(b for i in step.group if (b := gpus[i].board_id) is not None)
        board, _ = Board.objects.get_or_create(host=host, name=board_name(step.group))
        Gpu.objects.filter(board=board).exclude(index__in=step.group).update(board=None)
        Gpu.objects.filter(host=host, index__in=step.group).update(board=board)
        result.append(board)
    if touched:
        Board.objects.filter(pk__in=touched, gpus=None, backends=None).delete()
    if any(step.board is None for step in steps):
        audit_record(
            actor=actor,
            action="cluster.board_proposal_accept",
            target=host,
            detail={"boards": " | ".join(",".join(map(str, g)) for g in groups)},
        )
    return result


def board_name(group: list[int]) -> str:
    """A board's name from its GPUs, "GPUs 4,5,8,9", with runs of three or more shortened
    ("GPUs 0-7"). Groups are disjoint, so the name is unique on its host; one longer than the
    column allows becomes "<n> GPUs from <lowest>"."""
    parts: list[str] = []
    ordered = sorted(group)
    start = 0
    for end in range(1, len(ordered) + 1):
        if end == len(ordered) or ordered[end] != ordered[end - 1] + 1:
            run = ordered[start:end]
            parts.append(f"{run[0]}-{run[-1]}" if len(run) >= 3 else ",".join(map(str, run)))
            start = end
    name = "GPUs " + ",".join(parts)
    return name if len(name) <= _BOARD_NAME_MAX else f"{len(ordered)} GPUs from {ordered[0]}"


def _proposal_checked(host: Host) -> list[list[int]]:
    proposal = host.proposed_boards
    if not proposal:
        raise DomainError(f"{host.name} has no board proposal yet; its GPU agent makes one.")
    if not isinstance(proposal, list) or not all(
        isinstance(group, list)
        and group
        and all(isinstance(i, int) and not isinstance(i, bool) for i in group)
        for group in proposal
    ):
        raise DomainError(
            f"The proposal for {host.name} must be a list of GPU index lists, "
            "like [[0, 1], [2, 3]]."
        )
    known = set(Gpu.objects.filter(host=host).values_list("index", flat=True))
    seen: set[int] = set()
    for group in proposal:
        for index in group:
            if index not in known:
                raise DomainError(f"{host.name} has no GPU {index}.")
            if index in seen:
                raise DomainError(f"GPU {index} is in two proposed boards.")
            seen.add(index)
    return [sorted(group) for group in proposal]


def _board_exactly(gpus: dict[int, Gpu], group: list[int]) -> Board | None:
    boards = {gpus[i].board_id for i in group}
    if len(boards) != 1 or None in boards:
        return None
    board = gpus[group[0]].board
    on_board = sorted(i for i, gpu in gpus.items() if gpu.board_id == board.pk) if board else []
    return board if on_board == group else None


def _refuse_if_in_use(host: Host, gpus: dict[int, Gpu], group: list[int]) -> None:
    involved = Board.objects.filter(
        Q(pk__in=[gpus[i].board_id for i in group if gpus[i].board_id is not None])
        | Q(host=host, name=board_name(group))
    )
    for board in involved.exclude(backends=None).prefetch_related("backends"):
        backend = board.backends.all()[0]
        raise DomainError(
            f"Board {board.name!r} of {host.name} serves backend {backend.name!r}; GPUs "
            f"{','.join(map(str, group))} cannot become one board until the backend is moved."
        )


# --- Samples --------------------------------------------------------------------------------


@transaction.atomic
def gpu_samples_record(*, host: Host, readings: Sequence[GpuReading], at: datetime) -> int:
    """Record one sample per GPU taken at `at`; returns how many GPUs were recorded.

    1. Readings are matched to this host's GPU rows by index; one for an index without a row
       is skipped (the agent records the inventory before sampling).
    2. Each GPU's GpuStatus is overwritten. A sensor the GPU does not have is stored as None
       (in the buckets' averages and maxima it counts as 0). A second reading for one index
       in the same batch is ignored.
    3. The sample is folded into its 60 s and 1 h buckets (running averages and maxima, one
       upsert), and buckets older than their retention (HISTORY) are deleted.
    4. One GpuSampleEvent per GPU is published once the transaction commits.
    """
    if timezone.is_naive(at):
        raise ValueError("`at` must be an aware datetime.")
    gpus = {
        g.index: g for g in Gpu.objects.filter(host=host, index__in=[r.index for r in readings])
    }
    pairs: list[tuple[Gpu, GpuReading]] = []
    for reading in readings:
        if reading.index in gpus:
            pairs.append((gpus.pop(reading.index), reading))  # popped: the first reading only
    if not pairs:
        return 0
    GpuStatus.objects.bulk_create(
        [_status(gpu, reading, at) for gpu, reading in pairs],
        update_conflicts=True,
        unique_fields=["gpu"],
        update_fields=[f.name for f in GpuStatus._meta.concrete_fields if not f.primary_key],
    )
    _buckets_fold(pairs, at)
    ids = [gpu.pk for gpu, _ in pairs]
    for seconds, keep in HISTORY:
        GpuSample.objects.filter(
            gpu__in=ids, bucket_seconds=seconds, bucket_start__lt=at - keep
        ).delete()
    for gpu, reading in pairs:
        publish_cluster(_event(host, gpu, reading, at))
    return len(pairs)


def _status(gpu: Gpu, reading: GpuReading, at: datetime) -> GpuStatus:
    return GpuStatus(
        gpu=gpu,
        sampled_at=at,
        utilisation_pct=reading.utilisation_pct,
        memory_used_bytes=reading.memory_used_bytes or 0,
        memory_total_bytes=reading.memory_total_bytes or gpu.memory_bytes,
        temperature_c=reading.temperature_c,
        power_w=reading.power_w,
        power_limit_w=reading.power_limit_w,
        sm_clock_mhz=reading.sm_clock_mhz,
        memory_clock_mhz=reading.memory_clock_mhz,
        processes=reading.processes,
    )


def bucket_start(at: datetime, seconds: int) -> datetime:
    """The start of the `seconds`-long bucket holding `at` (buckets are aligned to the epoch)."""
    epoch = int(at.timestamp())
    return datetime.fromtimestamp(epoch - epoch % seconds, tz=UTC)


# Running average and maximum in one statement: the row is locked by the upsert itself, so two
# writers for one GPU (a misconfigured second agent) cannot lose each other's samples.
_FOLD_SQL = """
INSERT INTO {table} AS s (gpu_id, bucket_start, bucket_seconds, samples, utilisation_avg,
    utilisation_max, memory_used_max_bytes, temperature_max_c, power_avg_w)
VALUES {values}
ON CONFLICT (gpu_id, bucket_seconds, bucket_start) DO UPDATE SET
    samples = s.samples + 1,
    utilisation_avg = (s.utilisation_avg * s.samples + EXCLUDED.utilisation_avg)
        / (s.samples + 1),
    utilisation_max = GREATEST(s.utilisation_max, EXCLUDED.utilisation_max),
    memory_used_max_bytes = GREATEST(s.memory_used_max_bytes, EXCLUDED.memory_used_max_bytes),
    temperature_max_c = GREATEST(s.temperature_max_c, EXCLUDED.temperature_max_c),
    power_avg_w = (s.power_avg_w * s.samples + EXCLUDED.power_avg_w) / (s.samples + 1)
"""


def _buckets_fold(pairs: list[tuple[Gpu, GpuReading]], at: datetime) -> None:
    params: list[int | float | datetime] = []
    for gpu, reading in pairs:
        utilisation = reading.utilisation_pct or 0
        for seconds, _ in HISTORY:
            params += [
                gpu.pk,
                bucket_start(at, seconds),
                seconds,
                1,
                float(utilisation),
                utilisation,
                reading.memory_used_bytes or 0,
                reading.temperature_c or 0,
                reading.power_w or 0.0,
            ]
    rows = len(pairs) * len(HISTORY)
    values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s)"] * rows)
    sql = _FOLD_SQL.format(table=GpuSample._meta.db_table, values=values)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def _event(host: Host, gpu: Gpu, reading: GpuReading, at: datetime) -> GpuSampleEvent:
    return GpuSampleEvent(
        type="cluster.gpu_sample",
        gpu_id=gpu.pk,
        host=host.name,
        index=gpu.index,
        sampled_at=at.isoformat(),
        utilisation_pct=reading.utilisation_pct,
        memory_used_bytes=reading.memory_used_bytes or 0,
        memory_total_bytes=reading.memory_total_bytes or gpu.memory_bytes,
        temperature_c=reading.temperature_c,
        power_w=reading.power_w,
    )
