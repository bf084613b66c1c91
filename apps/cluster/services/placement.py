"""Placement: how much GPU memory a deployment needs, and whether its board can hold it.

The estimate is

    weights  = the tensors' bytes from the GGUF header (each tensor: elements / block size x
               the bytes of one block of its ggml type); the file size when that is unknown
    KV cache = n_layers x cells x n_kv_heads x (head_dim_k + head_dim_v) x bytes per element
    margin   = 512 MiB per GPU of the board + 1 GiB

`cells` is the number of token positions the server allocates KV space for. llama-server's
`--ctx-size` is the total over all its slots (each slot gets context_size / parallel_slots), so
for llama.cpp cells = context_size = context_per_slot x parallel_slots whenever the context
divides evenly; when it does not, we count the whole --ctx-size, which llama.cpp allocates
anyway. Ollama's num_ctx is per request and it keeps one context per parallel request, so for
Ollama cells = context_size x parallel_slots. With head_dim_k = head_dim_v = d this is the
familiar layers x context x KV heads x d x 2 (K and V) x bytes (x slots, for Ollama).

Bytes per element of a quantised cache count the block's scale: q8_0 stores 32 values in
34 bytes, q4_0 in 18 (ggml's block sizes). `n_layers` counts the layers that keep a KV cache
(fewer than the block count in hybrid models); sliding-window layers are counted at the full
context, which over-estimates, never under-.

The margin is what llama.cpp needs besides weights and cache: a CUDA context and cuBLAS
workspace on every GPU it touches (~300-500 MiB each on Volta) and compute buffers for one
micro-batch (a few hundred MiB with flash attention). It is a round figure, not a measurement:
the admin page shows the estimate beside the memory NVML measures, and that comparison is
the way to correct it.

DESIGN.md: models stay resident, so a board must hold all its enabled deployments at once.
A model may not span boards; the schema already pins a backend to one board and a GPU to one
board, so what is left to refuse is a board with no GPUs or with GPUs of another host.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from math import ceil

from django.db import transaction
from django.db.models import Count, Min, QuerySet, Sum

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cluster.models import Backend, Board, Deployment, Gpu, GpuStatus
from lexweb.errors import DomainError

MIB = 1024**2
GIB = 1024**3

KV_BYTES_PER_ELEMENT: dict[str, Fraction] = {
    Deployment.KvCacheType.F32: Fraction(4),
    Deployment.KvCacheType.F16: Fraction(2),
    Deployment.KvCacheType.BF16: Fraction(2),
    Deployment.KvCacheType.Q8_0: Fraction(34, 32),
    Deployment.KvCacheType.Q5_1: Fraction(24, 32),
    Deployment.KvCacheType.Q5_0: Fraction(22, 32),
    Deployment.KvCacheType.Q4_1: Fraction(20, 32),
    Deployment.KvCacheType.Q4_0: Fraction(18, 32),
    Deployment.KvCacheType.IQ4_NL: Fraction(18, 32),
}
# Both llama.cpp and Ollama refuse a quantised V cache without flash attention.
_UNQUANTISED = {Deployment.KvCacheType.F32, Deployment.KvCacheType.F16, Deployment.KvCacheType.BF16}
MARGIN_PER_GPU_BYTES = 512 * MIB
MARGIN_PER_DEPLOYMENT_BYTES = 1 * GIB


class PlacementError(DomainError):
    """The deployment cannot be placed. `field` names the form field the message belongs to
    (None: the deployment as a whole)."""

    code = "placement"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class MemoryEstimate:
    weights_bytes: int
    kv_cache_bytes: int
    margin_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_cache_bytes + self.margin_bytes

    def describe(self) -> str:
        return (
            f"{gib(self.total_bytes)} (weights {gib(self.weights_bytes)} + KV cache "
            f"{gib(self.kv_cache_bytes)} + margin {gib(self.margin_bytes)})"
        )


@dataclass(frozen=True)
class BoardMemory:
    """A board's memory as configured, and as NVML last measured it.

    The measured figures are None unless every GPU of the board has a sample: a partial sum
    would look like free memory that is not there. `measured_at` is the oldest of the samples."""

    gpus: int
    total_bytes: int
    measured_used_bytes: int | None
    measured_total_bytes: int | None
    measured_at: datetime | None


def gib(n: int) -> str:
    return f"{n / GIB:.1f} GiB"


# --- Arithmetic ------------------------------------------------------------------------------


def kv_cells(*, backend_kind: str, context_size: int, parallel_slots: int) -> int:
    """Token positions with KV space: see the module docstring for the two servers' meanings."""
    if backend_kind == Backend.Kind.OLLAMA:
        return context_size * parallel_slots
    return context_size


def kv_cache_bytes(
    *,
    n_layers: int,
    cells: int,
    n_kv_heads: int,
    head_dim_k: int,
    head_dim_v: int,
    kv_cache_type: str,
) -> int:
    per_element = KV_BYTES_PER_ELEMENT[kv_cache_type]
    return ceil(n_layers * cells * n_kv_heads * (head_dim_k + head_dim_v) * per_element)


def deployment_memory_estimate(
    *,
    weights_bytes: int,
    n_layers: int,
    n_kv_heads: int,
    head_dim_k: int,
    head_dim_v: int,
    cells: int,
    kv_cache_type: str,
    n_gpus: int,
) -> MemoryEstimate:
    return MemoryEstimate(
        weights_bytes=weights_bytes,
        kv_cache_bytes=kv_cache_bytes(
            n_layers=n_layers,
            cells=cells,
            n_kv_heads=n_kv_heads,
            head_dim_k=head_dim_k,
            head_dim_v=head_dim_v,
            kv_cache_type=kv_cache_type,
        ),
        margin_bytes=n_gpus * MARGIN_PER_GPU_BYTES + MARGIN_PER_DEPLOYMENT_BYTES,
    )


def deployment_estimate(*, deployment: Deployment, n_gpus: int) -> MemoryEstimate:
    """The estimate from a deployment's facts (saved or not). Weights fall back to the file
    size, which is the weights plus a header of a few MB."""
    return deployment_memory_estimate(
        weights_bytes=deployment.weights_bytes or deployment.file_size_bytes,
        n_layers=deployment.n_layers,
        n_kv_heads=deployment.n_kv_heads,
        head_dim_k=deployment.head_dim_k,
        head_dim_v=deployment.head_dim_v,
        cells=kv_cells(
            backend_kind=deployment.backend.kind,
            context_size=deployment.context_size,
            parallel_slots=deployment.parallel_slots,
        ),
        kv_cache_type=deployment.kv_cache_type,
        n_gpus=n_gpus,
    )


# --- The check -------------------------------------------------------------------------------


def placement_check(*, deployment: Deployment, lock: bool = False) -> MemoryEstimate:
    """Refuse a deployment that cannot run where it is configured; return its estimate.

    The deployment may be unsaved (a form's candidate). `lock=True` (inside a transaction)
    locks the board row, so that two deployments saved at once cannot both take the last
    free memory.

    1. The facts placement needs are there (weights or file size, layers, KV heads, head sizes).
    2. A quantised KV cache comes with flash attention.
    3. The board has GPUs, all on the board's host.
    4. Its estimate plus the other enabled deployments' on the board fit the board's memory
       (a disabled deployment is checked alone: it must at least fit an empty board).
    """
    _check_facts(deployment)
    if deployment.backend_id is None:
        raise PlacementError("Choose the backend that serves this model.", field="backend")
    board_id = Backend.objects.values_list("board_id", flat=True).get(pk=deployment.backend_id)
    boards = Board.objects.select_related("host")
    board = (boards.select_for_update(of=("self",)) if lock else boards).get(pk=board_id)
    gpus = _board_gpus(board)
    estimate = deployment_estimate(deployment=deployment, n_gpus=len(gpus))
    others = _other_deployments(deployment, board, len(gpus)) if deployment.enabled else []
    taken = sum(other_estimate.total_bytes for _, other_estimate in others)
    capacity = sum(gpu.memory_bytes for gpu in gpus)
    if estimate.total_bytes + taken > capacity:
        raise PlacementError(
            _does_not_fit(deployment, board, len(gpus), estimate, capacity, others)
        )
    return estimate


def _check_facts(deployment: Deployment) -> None:
    missing = [
        label
        for label, value in [
            ("weights size (or file size)", deployment.weights_bytes or deployment.file_size_bytes),
            ("layers", deployment.n_layers),
            ("KV heads", deployment.n_kv_heads),
            ("key head size", deployment.head_dim_k),
            ("value head size", deployment.head_dim_v),
        ]
        if value <= 0
    ]
    if missing:
        raise PlacementError(
            "The memory estimate needs the model's GGUF facts; missing: "
            f"{', '.join(missing)}. Give the GGUF path, or copy what "
            "`manage.py gguf_facts MODEL.gguf` prints."
        )
    if deployment.kv_cache_type not in KV_BYTES_PER_ELEMENT:
        raise PlacementError("Unknown KV cache type.", field="kv_cache_type")
    if deployment.kv_cache_type not in _UNQUANTISED and not deployment.flash_attention:
        raise PlacementError(
            f"A {deployment.kv_cache_type} KV cache needs flash attention (llama.cpp and Ollama "
            "refuse a quantised V cache without it): turn flash attention on, or use f16.",
            field="kv_cache_type",
        )


def _board_gpus(board: Board) -> list[Gpu]:
    gpus = list(board.gpus.select_related("host").order_by("host__name", "index"))
    if not gpus:
        raise PlacementError(
            f"Board {board} has no GPUs: assign its GPUs to it before deploying a model on it.",
            field="backend",
        )
    foreign = [gpu for gpu in gpus if gpu.host_id != board.host_id]
    if foreign:
        raise PlacementError(
            f"Board {board} spans hosts: {', '.join(str(gpu) for gpu in foreign)} "
            f"{'is' if len(foreign) == 1 else 'are'} not on {board.host}. A model must stay "
            "inside one board on one host; fix the board's GPUs first.",
            field="backend",
        )
    return gpus


def _other_deployments(
    deployment: Deployment, board: Board, n_gpus: int
) -> list[tuple[Deployment, MemoryEstimate]]:
    """The board's other enabled deployments, estimated from their current facts (the stored
    estimate may predate a change of the margin)."""
    rows = Deployment.objects.filter(backend__board=board, enabled=True).select_related("backend")
    if deployment.pk is not None:
        rows = rows.exclude(pk=deployment.pk)
    return [(row, deployment_estimate(deployment=row, n_gpus=n_gpus)) for row in rows]


def _does_not_fit(
    deployment: Deployment,
    board: Board,
    n_gpus: int,
    estimate: MemoryEstimate,
    capacity: int,
    others: list[tuple[Deployment, MemoryEstimate]],
) -> str:
    message = (
        f"{deployment.model_name or 'This model'} needs {estimate.describe()}; board "
        f"{board.name} on {board.host} ({n_gpus} GPU{'s' if n_gpus != 1 else ''}) has "
        f"{gib(capacity)}"
    )
    if others:
        taken = sum(e.total_bytes for _, e in others)
        listed = ", ".join(f"{row.model_name} {gib(e.total_bytes)}" for row, e in others[:5])
        message += (
            f", of which {gib(taken)} are already taken by the other deployments on that board "
            f"({listed}{', ...' if len(others) > 5 else ''})"
        )
    return (
        message + ". Lower the context size or the slots, use a smaller KV cache type or "
        "quantisation, or choose another board."
    )


# --- Writes ----------------------------------------------------------------------------------


@transaction.atomic
def deployment_save(*, deployment: Deployment, actor: User | None = None) -> Deployment:
    """Check placement under the board's lock, store the estimate and save.

    Raises PlacementError and leaves the database unchanged when the deployment does not fit.
    """
    estimate = placement_check(deployment=deployment, lock=True)
    deployment.memory_estimate_bytes = estimate.total_bytes
    created = deployment.pk is None
    deployment.save()
    account_services.audit_record(
        actor=actor,
        action="cluster.deployment_create" if created else "cluster.deployment_update",
        target=deployment,
        detail={"memory_estimate_bytes": estimate.total_bytes, "enabled": deployment.enabled},
    )
    return deployment


# --- Reads for display -----------------------------------------------------------------------


def board_memory(board: Board) -> BoardMemory:
    """Configured memory of the board's GPUs, beside NVML's latest samples of them."""
    configured = Gpu.objects.filter(board=board).aggregate(
        gpus=Count("pk"), total=Sum("memory_bytes")
    )
    samples = GpuStatus.objects.filter(gpu__board=board).aggregate(
        sampled=Count("pk"),
        used=Sum("memory_used_bytes"),
        total=Sum("memory_total_bytes"),
        oldest=Min("sampled_at"),
    )
    gpus = configured["gpus"] or 0
    complete = gpus > 0 and samples["sampled"] == gpus
    return BoardMemory(
        gpus=gpus,
        total_bytes=configured["total"] or 0,
        measured_used_bytes=samples["used"] if complete else None,
        measured_total_bytes=samples["total"] if complete else None,
        measured_at=samples["oldest"] if complete else None,
    )


def placement_summary(deployment: Deployment | None) -> str:
    """One line for the deployment's admin page: the estimate beside what NVML measures on
    its board. Never raises for missing facts or a broken board; it says so instead."""
    if deployment is None or deployment.pk is None or deployment.backend_id is None:
        return "Shown once the deployment is saved."
    board = deployment.backend.board
    memory = board_memory(board)
    estimate = deployment_estimate(deployment=deployment, n_gpus=memory.gpus)
    line = f"Estimate {estimate.describe()}"
    if estimate.weights_bytes == 0:
        line = "No estimate yet: the GGUF facts are missing"
    line += f" · board {board.name}: {memory.gpus} GPUs, {gib(memory.total_bytes)}"
    if memory.measured_used_bytes is None or memory.measured_total_bytes is None:
        return line + " · NVML: no measurement of every GPU yet"
    return (
        line + f" · NVML measured {gib(memory.measured_used_bytes)} used of "
        f"{gib(memory.measured_total_bytes)}"
    )


# --- Moves that change what a board holds ----------------------------------------------------


class _Undo(Exception):
    """Rolls back a trial change once its checks have passed."""


def backend_move_check(*, backend_id: int, board_id: int) -> None:
    """Refuse moving a backend to another board when one of its enabled deployments would not
    fit there. Tried inside a savepoint that is always rolled back: nothing is changed."""
    _trial(
        lambda: Backend.objects.filter(pk=backend_id).update(board_id=board_id),
        Deployment.objects.filter(backend_id=backend_id, enabled=True),
    )


def gpu_move_check(*, gpu_id: int, board_id: int | None) -> None:
    """Refuse taking a GPU off a board (or putting it on one of another host) when an enabled
    deployment on the old or new board would no longer fit or place. Nothing is changed."""
    old_board = Gpu.objects.filter(pk=gpu_id).values_list("board_id", flat=True).first()
    boards = [b for b in (old_board, board_id) if b is not None]
    _trial(
        lambda: Gpu.objects.filter(pk=gpu_id).update(board_id=board_id),
        Deployment.objects.filter(backend__board_id__in=boards, enabled=True),
    )


def _trial(change: Callable[[], object], affected: QuerySet[Deployment]) -> None:
    try:
        with transaction.atomic():
            change()
            for deployment in affected.select_related("backend"):
                placement_check(deployment=deployment)
            raise _Undo
    except _Undo:
        pass
