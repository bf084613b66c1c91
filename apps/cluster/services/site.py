"""Loading a whole site description (hosts, GPUs, links, boards, backends, deployments, roles)
from YAML, all or nothing.

1. Parse the YAML safely and within limits (size, no aliases bombs: `yaml.safe_load` on a
   bounded text).
2. Check its shape (pydantic, unknown keys refused) and its references (GPU indices unique per
   host, boards and links name GPUs that exist, a GPU sits on one board only, backends name a
   board of their host, deployments a backend, roles deployments).
3. Write everything in one transaction, matching rows by natural key; any error rolls back, so
   the configuration is never half-loaded.
"""

import dataclasses
from dataclasses import dataclass
from typing import Annotated, Literal

import yaml
from django.db import transaction
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)

from apps.accounts.models import User
from apps.accounts.services import audit_record
from apps.cluster.backends.streams import base_url_problem
from apps.cluster.models import (
    Backend,
    BackendHealth,
    Board,
    Deployment,
    Gpu,
    GpuLink,
    Host,
    RoleRoute,
)
from apps.cluster.models import Role as RoleChoice
from apps.cluster.sampling import sampling_check
from apps.cluster.services import placement
from lexweb.errors import DomainError
from lexweb.text import one_line

MAX_SITE_FILE_BYTES = 1_000_000
MAX_GPUS_PER_HOST = 64

# Printable text only: control characters (NUL above all) never reach the database.
Text = r"^[^\x00-\x1f\x7f]*$"
Name = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100, pattern=Text)
]
ShortName = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=50, pattern=r"^[\w.-]+$")
]


def _base_url_checked(url: str) -> str:
    problem = base_url_problem(url)
    if problem:
        raise ValueError(problem)
    return url


Url = Annotated[
    str,
    StringConstraints(strip_whitespace=True, max_length=300, pattern=r"^https?://[^\s/?#]+"),
    AfterValidator(_base_url_checked),
]


class SiteError(DomainError):
    """The site description is wrong; nothing was changed."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GpuIn(_Strict):
    index: int = Field(ge=0, lt=MAX_GPUS_PER_HOST)
    name: Name
    memory_bytes: int = Field(gt=0, le=2**50)
    uuid: str = Field(default="", max_length=100, pattern=Text)
    compute_capability: str = Field(default="", max_length=10, pattern=r"^(\d+\.\d+)?$")
    pci_bus_id: str = Field(default="", max_length=32, pattern=Text)


class LinkIn(_Strict):
    gpus: tuple[int, int]
    kind: Literal["nvlink", "pix", "pxb", "phb", "node", "sys"]
    count: int = Field(default=0, ge=0, le=64)


class BoardIn(_Strict):
    name: ShortName
    gpus: list[int] = Field(min_length=1, max_length=MAX_GPUS_PER_HOST)


class HostIn(_Strict):
    name: ShortName
    description: str = Field(default="", max_length=200, pattern=Text)
    gpus: list[GpuIn] = Field(default_factory=list, max_length=MAX_GPUS_PER_HOST)
    links: list[LinkIn] = Field(default_factory=list, max_length=MAX_GPUS_PER_HOST**2)
    boards: list[BoardIn] = Field(default_factory=list, max_length=MAX_GPUS_PER_HOST)


class BackendIn(_Strict):
    name: Name
    kind: Literal["llama_cpp", "ollama"]
    url: Url
    host: ShortName
    board: ShortName
    slots: int = Field(default=1, ge=1, le=256)
    api_key: str = Field(default="", max_length=200, pattern=Text)
    enabled: bool = True


class DeploymentIn(_Strict):
    backend: Name
    model: Name
    enabled: bool = True
    architecture: str = Field(default="", max_length=50, pattern=Text)
    total_params: int = Field(default=0, ge=0, le=10**14)
    active_params: int = Field(default=0, ge=0, le=10**14)
    quantization: str = Field(default="", max_length=30, pattern=Text)
    file_size_bytes: int = Field(default=0, ge=0, le=2**50)
    weights_bytes: int = Field(default=0, ge=0, le=2**50)
    n_layers: int = Field(default=0, ge=0, le=10_000)
    n_kv_heads: int = Field(default=0, ge=0, le=10_000)
    head_dim_k: int = Field(default=0, ge=0, le=100_000)
    head_dim_v: int = Field(default=0, ge=0, le=100_000)
    context_size: int = Field(default=4096, ge=1, le=100_000_000)
    kv_cache_type: Literal["f32", "f16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl"]
    flash_attention: bool = False
    parallel_slots: int = Field(default=1, ge=1, le=256)
    sampling: dict[str, object] = Field(default_factory=dict)

    @field_validator("sampling")
    @classmethod
    def _sampling(cls, value: dict[str, object]) -> dict[str, float | int]:
        try:
            return sampling_check(value)
        except DomainError as exc:
            raise ValueError(exc.message) from None


class SiteIn(_Strict):
    hosts: list[HostIn] = Field(default_factory=list, max_length=100)
    backends: list[BackendIn] = Field(default_factory=list, max_length=1000)
    deployments: list[DeploymentIn] = Field(default_factory=list, max_length=1000)
    roles: dict[RoleChoice, list[Name]] = Field(default_factory=dict)


@dataclass(frozen=True)
class SiteLoaded:
    hosts: int
    gpus: int
    boards: int
    backends: int
    deployments: int
    routes: int


def site_parse(text: str) -> SiteIn:
    """Parse and check a site description; raise SiteError naming the first problems."""
    if len(text.encode()) > MAX_SITE_FILE_BYTES:
        raise SiteError(f"The site file is over {MAX_SITE_FILE_BYTES:,} bytes.")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SiteError(f"The site file is not valid YAML: {one_line(str(exc), 300)}") from None
    except RecursionError:
        raise SiteError("The site file is not valid YAML: it is nested too deeply.") from None
    if not isinstance(raw, dict):
        raise SiteError("The site file must be a mapping with hosts, backends, deployments, roles.")
    try:
        site = SiteIn.model_validate(raw)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}"
            for err in exc.errors()[:5]
        ]
        raise SiteError("The site file is wrong: " + "; ".join(problems)) from None
    _check_references(site)
    return site


def _duplicates(values: list[object]) -> list[object]:
    seen: set[object] = set()
    return sorted({v for v in values if v in seen or seen.add(v)}, key=str)  # type: ignore[func-returns-value]  # set.add returns None


def _check_references(site: SiteIn) -> None:
    errors: list[str] = []
    for dup in _duplicates([h.name for h in site.hosts]):
        errors.append(f"host {dup!r} is listed twice")
    boards: dict[tuple[str, str], BoardIn] = {}
    for host in site.hosts:
        errors += _host_problems(host)
        for board in host.boards:
            boards[(host.name, board.name)] = board
    for dup in _duplicates([b.name for b in site.backends]):
        errors.append(f"backend {dup!r} is listed twice")
    for backend in site.backends:
        if (backend.host, backend.board) not in boards:
            errors.append(
                f"backend {backend.name!r}: host {backend.host!r} has no board {backend.board!r}"
            )
    backends = {b.name for b in site.backends}
    keys = [f"{d.backend}/{d.model}" for d in site.deployments]
    for dup in _duplicates(list(keys)):
        errors.append(f"deployment {dup!r} is listed twice")
    for deployment in site.deployments:
        if deployment.backend not in backends:
            errors.append(f"deployment {deployment.model!r}: no backend {deployment.backend!r}")
    for role, names in site.roles.items():
        for name in names:
            if name not in keys:
                errors.append(f"role {role.value}: no deployment {name!r} (write backend/model)")
        for dup in _duplicates(list(names)):
            errors.append(f"role {role.value}: {dup!r} is listed twice")
    if errors:
        raise SiteError("The site file is wrong: " + "; ".join(errors[:10]) + ".")


def _host_problems(host: HostIn) -> list[str]:
    errors = [
        f"host {host.name!r}: GPU index {dup} is listed twice"
        for dup in _duplicates([g.index for g in host.gpus])
    ]
    errors += [
        f"host {host.name!r}: GPU uuid {dup!r} is listed twice"
        for dup in _duplicates([g.uuid for g in host.gpus if g.uuid])
    ]
    indices = {g.index for g in host.gpus}
    on_board: dict[int, str] = {}
    for dup in _duplicates([b.name for b in host.boards]):
        errors.append(f"host {host.name!r}: board {dup!r} is listed twice")
    for board in host.boards:
        for index in board.gpus:
            if index not in indices:
                errors.append(f"host {host.name!r} board {board.name!r}: no GPU {index}")
            elif index in on_board and on_board[index] != board.name:
                errors.append(
                    f"host {host.name!r}: GPU {index} is on boards {on_board[index]!r} "
                    f"and {board.name!r}"
                )
            on_board[index] = board.name
    for link in host.links:
        a, b = link.gpus
        if a not in indices or b not in indices or a == b:
            errors.append(f"host {host.name!r}: link {list(link.gpus)} names an unknown GPU")
        if (link.kind == "nvlink") != (link.count > 0):
            errors.append(
                f"host {host.name!r}: link {list(link.gpus)}: an NVLink needs a count "
                "and only an NVLink has one"
            )
    return errors


def site_load(*, text: str, actor: User | None = None) -> SiteLoaded:
    """Check the whole description, then write it in one transaction (see module docstring).
    Idempotent: loading the same file twice changes nothing the second time."""
    return site_write(site=site_parse(text), actor=actor, label="manage.py load_site")


@transaction.atomic
def site_write(*, site: SiteIn, actor: User | None, label: str) -> SiteLoaded:
    """Write a parsed (checked) description in one transaction; `label` names the edge in the
    audit row when there is no actor. Idempotent, like `site_load`."""
    board_rows: dict[tuple[str, str], Board] = {}
    gpu_count = 0
    for host_in in site.hosts:
        host, _ = Host.objects.update_or_create(
            name=host_in.name, defaults={"description": host_in.description}
        )
        gpus = _gpus_write(host, host_in)
        gpu_count += len(gpus)
        _links_write(gpus, host_in.links)
        for board_in in host_in.boards:
            board, _ = Board.objects.get_or_create(host=host, name=board_in.name)
            Gpu.objects.filter(host=host, board=board).exclude(index__in=board_in.gpus).update(
                board=None
            )
            Gpu.objects.filter(host=host, index__in=board_in.gpus).update(board=board)
            board_rows[(host.name, board.name)] = board
    backend_rows = {b.name: _backend_write(b, board_rows) for b in site.backends}
    deployment_rows = {
        f"{d.backend}/{d.model}": _deployment_write(d, backend_rows) for d in site.deployments
    }
    _placement_check_all(deployment_rows, hosts=[host.name for host in site.hosts])
    routes = 0
    for role, names in site.roles.items():
        RoleRoute.objects.filter(role=role.value).delete()
        for position, name in enumerate(names, start=1):
            RoleRoute.objects.create(
                role=role.value, position=position, deployment=deployment_rows[name]
            )
            routes += 1
    loaded = SiteLoaded(
        hosts=len(site.hosts),
        gpus=gpu_count,
        boards=len(board_rows),
        backends=len(backend_rows),
        deployments=len(deployment_rows),
        routes=routes,
    )
    audit_record(
        actor=actor,
        action="cluster.site_load",
        actor_label="" if actor else label,
        detail=dataclasses.asdict(loaded),
    )
    return loaded


def _gpus_write(host: Host, host_in: HostIn) -> dict[int, Gpu]:
    rows: dict[int, Gpu] = {}
    for gpu_in in host_in.gpus:
        defaults: dict[str, object] = {
            "name": gpu_in.name,
            "memory_bytes": gpu_in.memory_bytes,
            "compute_capability": gpu_in.compute_capability,
        }
        # The agent fills these in from NVML; a file without them keeps what it found.
        if gpu_in.uuid:
            defaults["uuid"] = gpu_in.uuid
        if gpu_in.pci_bus_id:
            defaults["pci_bus_id"] = gpu_in.pci_bus_id
        rows[gpu_in.index], _ = Gpu.objects.update_or_create(
            host=host, index=gpu_in.index, defaults=defaults
        )
    return rows


def _links_write(gpus: dict[int, Gpu], links: list[LinkIn]) -> None:
    for link in links:
        # A pair is stored once, lower primary key first (GpuLink's check constraint).
        a, b = sorted((gpus[link.gpus[0]], gpus[link.gpus[1]]), key=lambda gpu: gpu.pk)
        GpuLink.objects.update_or_create(
            a=a, b=b, defaults={"kind": link.kind, "nvlink_count": link.count}
        )


def _backend_write(backend_in: BackendIn, boards: dict[tuple[str, str], Board]) -> Backend:
    defaults: dict[str, object] = {
        "kind": backend_in.kind,
        "base_url": backend_in.url.rstrip("/"),
        "board": boards[(backend_in.host, backend_in.board)],
        "slots": backend_in.slots,
        "enabled": backend_in.enabled,
    }
    if backend_in.api_key:
        defaults["api_key"] = backend_in.api_key
    backend, _ = Backend.objects.update_or_create(name=backend_in.name, defaults=defaults)
    BackendHealth.objects.get_or_create(backend=backend)
    return backend


def _placement_check_all(deployments: dict[str, Deployment], *, hosts: list[str]) -> None:
    """Every deployment of the file, and every enabled one already on a board of a host the
    file describes (the file may have moved GPUs off its board), must fit its board together
    with the others there. Checked on the written rows, so each sees the whole file; the first
    misfit undoes the load."""
    existing = (
        Deployment.objects.filter(enabled=True, backend__board__host__name__in=hosts)
        .exclude(pk__in=[deployment.pk for deployment in deployments.values()])
        .select_related("backend")
    )
    deployments = {
        **deployments,
        **{f"{d.backend.name}/{d.model_name}": d for d in existing},
    }
    for key, deployment in deployments.items():
        try:
            estimate = placement.placement_check(deployment=deployment)
        except placement.PlacementError as exc:
            raise SiteError(f"The site file is wrong: deployment {key!r}: {exc.message}") from None
        deployment.memory_estimate_bytes = estimate.total_bytes
        deployment.save(update_fields=["memory_estimate_bytes"])


def _deployment_write(deployment_in: DeploymentIn, backends: dict[str, Backend]) -> Deployment:
    facts = deployment_in.model_dump(exclude={"backend", "model"})
    deployment, _ = Deployment.objects.update_or_create(
        backend=backends[deployment_in.backend],
        model_name=deployment_in.model,
        defaults=facts,
    )
    return deployment
