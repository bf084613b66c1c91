"""Cluster configuration in the Django admin. Forms validate; observed state (GPU samples,
backend health, call telemetry) is shown read-only and written only by the agent and jobs.
A backend's API key is write-only and never listed."""

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.accounts.admin_audit import AuditedAdmin
from apps.accounts.models import User
from apps.cluster import forms, selectors
from apps.cluster.models import (
    Backend,
    BackendHealth,
    Board,
    CallRecord,
    Deployment,
    DeploymentHealth,
    Gpu,
    GpuLink,
    GpuSample,
    GpuStatus,
    Host,
    Role,
    RoleRoute,
)
from apps.cluster.services import gpu as gpu_services
from apps.cluster.services import placement
from lexweb import words
from lexweb.errors import DomainError


def role_label(role: str) -> str:
    """A role (a `Role` value, stored without choices where it is a record's copy) by its
    label; a call made for no role says so."""
    if not role:
        return "no role (a direct call)"
    return dict(Role.choices).get(role, role)


def gpu_groups(groups: object) -> str:
    """Proposed boards (lists of GPU indices) in words: "GPUs 0, 1 · GPU 2"."""
    if not isinstance(groups, list) or not groups:
        return "none"
    said = []
    for group in groups:
        indices = [str(index) for index in group] if isinstance(group, list) else [str(group)]
        said.append(f"GPU{'s' * (len(indices) != 1)} {', '.join(indices)}")
    return " · ".join(said)


# How a model's reply ended (llama.cpp's finish_reason, Ollama's done_reason), in words.
FINISH_REASONS = {
    "stop": "finished (stop)",
    "length": "stopped at the token limit (length)",
    "load": "loaded the model only (load)",
    "unload": "unloaded the model (unload)",
    "unknown": "not said by the backend",
}


class ReadOnlyAdmin(AuditedAdmin):
    """Observed rows: listed and opened, never edited by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class GpuInline(admin.StackedInline):
    # Stacked, not tabular: Django's tabular inline leaves its inputs without labels (axe-core:
    # critical), and a copy of its template would be vendored code.
    model = Gpu
    form = forms.GpuForm
    extra = 0
    fields = ["index", "name", "memory_bytes", "compute_capability", "pci_bus_id", "uuid", "board"]

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        formset = super().get_formset(request, obj, **kwargs)
        # Only the host's own boards may be chosen for its GPUs.
        board_field = formset.form.base_fields["board"]
        board_field.queryset = Board.objects.filter(host=obj) if obj else Board.objects.none()  # type: ignore[attr-defined]  # ModelChoiceField
        return formset


@admin.register(Host)
class HostAdmin(AuditedAdmin):
    list_display = ["name", "description", "agent_status", "agent_seen_at", "proposed"]
    fields = [
        "name",
        "description",
        "agent_status",
        "agent_message",
        "agent_seen_at",
        "proposed_boards",
        "proposed_at",
    ]
    # The proposal stays editable: an admin may regroup GPUs before accepting it.
    readonly_fields = ["agent_status", "agent_message", "agent_seen_at", "proposed_at"]
    inlines = [GpuInline]
    actions = ["accept_proposed_boards"]

    @admin.display(description="proposed boards")
    def proposed(self, host: Host) -> str:
        return gpu_groups(host.proposed_boards)

    @admin.action(description="Accept the proposed boards (NVLink groups from the GPU agent)")
    def accept_proposed_boards(self, request: HttpRequest, queryset: QuerySet[Host]) -> None:
        actor = request.user if isinstance(request.user, User) else None
        for host in queryset:
            try:
                boards = gpu_services.board_proposal_accept(host=host, actor=actor)
            except DomainError as exc:
                self.message_user(request, f"{host.name}: {exc.message}", messages.ERROR)
                continue
            names = ", ".join(board.name for board in boards) or "none proposed"
            self.message_user(request, f"{host.name}: boards {names}.", messages.SUCCESS)


@admin.register(Board)
class BoardAdmin(AuditedAdmin):
    list_display = ["name", "host", "gpu_indices", "memory"]
    list_filter = ["host"]
    fields = ["host", "name"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Board]:
        return super().get_queryset(request).select_related("host").prefetch_related("gpus")

    @admin.display(description="GPUs")
    def gpu_indices(self, board: Board) -> str:
        return ", ".join(str(gpu.index) for gpu in board.gpus.all()) or "none"

    @admin.display(description="memory")
    def memory(self, board: Board) -> str:
        return words.size(sum(gpu.memory_bytes for gpu in board.gpus.all()))


@admin.register(Gpu)
class GpuAdmin(AuditedAdmin):
    form = forms.GpuForm
    list_display = ["host", "index", "name", "memory", "compute_capability", "board"]
    list_filter = ["host", "board"]
    list_select_related = ["host", "board", "board__host"]

    @admin.display(description="memory", ordering="memory_bytes")
    def memory(self, gpu: Gpu) -> str:
        return words.size(gpu.memory_bytes)


@admin.register(GpuLink)
class GpuLinkAdmin(AuditedAdmin):
    list_display = ["a", "b", "kind", "nvlink_count"]
    list_filter = ["kind"]
    list_select_related = ["a__host", "b__host"]


@admin.register(Backend)
class BackendAdmin(AuditedAdmin):
    form = forms.BackendForm
    list_display = ["name", "kind", "address", "board", "slots", "enabled", "health_state"]
    list_filter = ["kind", "enabled"]
    list_select_related = ["board__host", "health"]
    fields = ["name", "kind", "base_url", "board", "slots", "api_key", "clear_api_key", "enabled"]

    @admin.display(description="health")
    def health_state(self, backend: Backend) -> str:
        health = getattr(backend, "health", None)
        return health.get_state_display() if health else "not checked yet"


class RoleRouteInline(admin.StackedInline):
    model = RoleRoute  # stacked for its labels, as GpuInline
    extra = 0
    fields = ["role", "position"]


@admin.register(Deployment)
class DeploymentAdmin(AuditedAdmin):
    form = forms.DeploymentForm
    list_display = [
        "model_name",
        "backend",
        "quantization",
        "context_size",
        "enabled",
        "served",
        "context_used",
    ]
    list_filter = ["enabled", "backend"]
    list_select_related = ["backend", "health"]
    readonly_fields = ["memory_estimate", "placement", "served", "context_used"]
    inlines = [RoleRouteInline]

    @admin.display(description="memory estimate")
    def memory_estimate(self, deployment: Deployment) -> str:
        return words.size(deployment.memory_estimate_bytes) or "not estimated"

    @admin.display(description="placement (estimate beside NVML)")
    def placement(self, deployment: Deployment) -> str:
        return placement.placement_summary(deployment)

    @admin.display(description="served (last health check)")
    def served(self, deployment: Deployment) -> str:
        """Whether the server serves this model; when not, both names."""
        row = selectors.deployment_served(deployment) if deployment.pk else None
        if row is None:
            return "not checked yet"
        if row.state == DeploymentHealth.State.MISCONFIGURED:
            return (
                f"MISCONFIGURED: configured {deployment.model_name}, the server serves "
                f"{row.served_model}. Not routed until they agree."
            )
        return row.get_state_display()

    @admin.display(description="context of a request (tokens)")
    def context_used(self, deployment: Deployment) -> str:
        """The context used (the smaller of configured and served), and both when they differ."""
        if deployment.pk is None:
            return "Shown once the deployment is saved."
        used = selectors.deployment_context_tokens(deployment)
        row = selectors.deployment_served(deployment)
        configured = deployment.context_per_slot
        if row is None or row.served_context is None:
            return f"{used} (configured; the server has not reported its own)"
        if row.served_context == configured:
            return f"{used} (configured and served)"
        return (
            f"{used}: MISMATCH, the server gives {row.served_context} ({row.context_source}), "
            f"{configured} configured; the smaller is used"
        )

    def save_model(self, request: HttpRequest, obj: Deployment, form: Any, change: bool) -> None:
        # The form has checked placement already; the service re-checks under the board's lock,
        # stores the estimate and audits the change.
        actor = request.user if isinstance(request.user, User) else None
        placement.deployment_save(deployment=obj, actor=actor)


@admin.register(RoleRoute)
class RoleRouteAdmin(AuditedAdmin):
    list_display = ["role", "position", "deployment"]
    list_filter = ["role"]
    list_select_related = ["deployment__backend"]
    ordering = ["role", "position"]


@admin.register(BackendHealth)
class BackendHealthAdmin(ReadOnlyAdmin):
    list_display = ["backend", "state", "message", "checked_at", "slots_busy", "slots_total"]
    list_filter = ["state"]
    list_select_related = ["backend"]
    exclude = ["models_loaded"]
    readonly_fields = ["loaded"]

    @admin.display(description="models loaded")
    def loaded(self, health: BackendHealth) -> str:
        names = health.models_loaded if isinstance(health.models_loaded, list) else []
        return ", ".join(str(name) for name in names) or "none reported"


@admin.register(DeploymentHealth)
class DeploymentHealthAdmin(ReadOnlyAdmin):
    list_display = [
        "deployment",
        "state",
        "served_model",
        "served_context",
        "context_source",
        "message",
        "checked_at",
    ]
    list_filter = ["state"]
    list_select_related = ["deployment__backend"]


@admin.register(GpuStatus)
class GpuStatusAdmin(ReadOnlyAdmin):
    list_display = [
        "gpu",
        "sampled_at",
        "utilisation",
        "memory_used",
        "temperature",
        "power",
    ]
    list_select_related = ["gpu__host"]
    # Its page shows the measures in words too (not bytes, not every digit of a float).
    exclude = ["memory_used_bytes", "memory_total_bytes", "power_w", "power_limit_w", "processes"]
    readonly_fields = ["memory_used", "memory_total", "power", "power_limit", "running"]

    @admin.display(description="processes")
    def running(self, status: GpuStatus) -> str:
        """Each process on the GPU: its name, its id and the memory it holds."""
        said = []
        for process in status.processes if isinstance(status.processes, list) else []:
            if not isinstance(process, dict):
                continue
            name = process.get("name") or "a process"
            used = words.size(process.get("used_memory_bytes")) or "memory not known"
            said.append(f"{name} (pid {process.get('pid', '?')}): {used}")
        return "; ".join(said) or "none"

    @admin.display(description="utilisation (%)", ordering="utilisation_pct")
    def utilisation(self, status: GpuStatus) -> str:
        return "n/a" if status.utilisation_pct is None else str(status.utilisation_pct)

    @admin.display(description="temperature (°C)", ordering="temperature_c")
    def temperature(self, status: GpuStatus) -> str:
        return "n/a" if status.temperature_c is None else str(status.temperature_c)

    @admin.display(description="memory used", ordering="memory_used_bytes")
    def memory_used(self, status: GpuStatus) -> str:
        return words.size(status.memory_used_bytes)

    @admin.display(description="memory total")
    def memory_total(self, status: GpuStatus) -> str:
        return words.size(status.memory_total_bytes)

    @admin.display(description="power limit (W)")
    def power_limit(self, status: GpuStatus) -> str:
        return words.decimal(status.power_limit_w, 0)

    @admin.display(description="power (W)", ordering="power_w")
    def power(self, status: GpuStatus) -> str:
        return words.decimal(status.power_w, 0)


@admin.register(GpuSample)
class GpuSampleAdmin(ReadOnlyAdmin):
    list_display = ["gpu", "bucket_start", "bucket", "utilisation", "power"]
    list_filter = ["bucket_seconds"]
    list_select_related = ["gpu__host"]
    exclude = ["bucket_seconds", "utilisation_avg", "memory_used_max_bytes", "power_avg_w"]
    readonly_fields = ["bucket", "utilisation", "memory_used_max", "power"]

    @admin.display(description="memory used (most)")
    def memory_used_max(self, sample: GpuSample) -> str:
        return words.size(sample.memory_used_max_bytes)

    @admin.display(description="bucket", ordering="bucket_seconds")
    def bucket(self, sample: GpuSample) -> str:
        return words.duration(sample.bucket_seconds)

    @admin.display(description="utilisation (%)", ordering="utilisation_avg")
    def utilisation(self, sample: GpuSample) -> str:
        return words.decimal(sample.utilisation_avg, 1)

    @admin.display(description="power (W)", ordering="power_avg_w")
    def power(self, sample: GpuSample) -> str:
        return words.decimal(sample.power_avg_w, 0)


class CallRoleFilter(admin.SimpleListFilter):
    """The roles of the recorded calls by their names, and the calls made for no role (a
    deployment called directly) as such: Django's filter of a field's values showed those as a
    link with no text (axe-core: link-name)."""

    title = "role"
    parameter_name = "role"
    NO_ROLE = "none"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        present = CallRecord.objects.order_by("role").values_list("role", flat=True).distinct()
        return [(role or self.NO_ROLE, role_label(role)) for role in present]

    def queryset(self, request: HttpRequest, queryset: QuerySet[CallRecord]) -> Any:
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(role="" if value == self.NO_ROLE else value)


@admin.register(CallRecord)
class CallRecordAdmin(ReadOnlyAdmin):
    list_display = [
        "started_at",
        "deployment_label",
        "board_label",
        "role_name",
        "outcome",
        "prompt_tokens",
        "completion_tokens",
        "first_token",
        "decode_speed",
        "stage_id",
    ]
    list_filter = ["outcome", CallRoleFilter]
    # The stage (a case's material: its prompt, its run) is never rendered here, only its id;
    # case members read it through the run's pages and API.
    exclude = [
        "stage",
        "role",
        "finish_reason",
        "time_to_first_token_ms",
        "duration_ms",
        "prefill_tokens_per_second",
        "decode_tokens_per_second",
    ]
    readonly_fields = [
        "stage_id",
        "role_name",
        "finish",
        "first_token",
        "duration",
        "prefill_speed",
        "decode_speed",
    ]

    @admin.display(description="role", ordering="role")
    def role_name(self, record: CallRecord) -> str:
        return role_label(record.role)

    @admin.display(description="how the reply ended")
    def finish(self, record: CallRecord) -> str:
        if not record.finish_reason:
            return "—"
        return FINISH_REASONS.get(record.finish_reason, record.finish_reason)

    @admin.display(description="first token", ordering="time_to_first_token_ms")
    def first_token(self, record: CallRecord) -> str:
        return words.duration_ms(record.time_to_first_token_ms) or "—"

    @admin.display(description="decode (tokens/s)", ordering="decode_tokens_per_second")
    def decode_speed(self, record: CallRecord) -> str:
        return words.decimal(record.decode_tokens_per_second, 1) or "—"

    @admin.display(description="duration", ordering="duration_ms")
    def duration(self, record: CallRecord) -> str:
        return words.duration_ms(record.duration_ms)

    @admin.display(description="prefill (tokens/s)")
    def prefill_speed(self, record: CallRecord) -> str:
        return words.decimal(record.prefill_tokens_per_second, 1) or "—"
