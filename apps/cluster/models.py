"""The firm's hardware and models: hosts, GPUs and the links between them, boards, backends,
model deployments and role routing (configuration, edited in the admin or loaded from a site
file), plus what lexweb observes of them (GPU samples, backend health, per-call telemetry).

Observed state lives in its own tables so that an admin saving a configuration row never
overwrites a measurement, and the agent never overwrites configuration.
"""

from urllib.parse import urlsplit, urlunsplit

from django.db import models
from django.utils import timezone


class Host(models.Model):
    """A machine with GPUs. Its GPU agent reports in; `proposed_boards` is the agent's proposal
    (NVLink-connected groups of GPU indices), which an admin accepts or edits."""

    class AgentStatus(models.TextChoices):
        UNKNOWN = "unknown", "Never reported"
        OK = "ok", "Reading NVML"
        NO_NVML = "no_nvml", "No NVML"
        ERROR = "error", "Error"

    name = models.CharField(max_length=100, unique=True)
    description = models.CharField(max_length=200, blank=True)
    agent_status = models.CharField(
        max_length=16, choices=AgentStatus.choices, default=AgentStatus.UNKNOWN
    )
    agent_message = models.CharField(max_length=300, blank=True)
    agent_seen_at = models.DateTimeField(null=True, blank=True)
    proposed_boards = models.JSONField(default=list, blank=True)
    proposed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Board(models.Model):
    """A set of GPUs on one host that a model may span (joined by NVLink). A model never
    spans two boards."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="boards")
    name = models.CharField(max_length=50)

    class Meta:
        ordering = ["host__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["host", "name"], name="cluster_board_unique_name"),
        ]

    def __str__(self) -> str:
        return f"{self.host.name} / {self.name}"


class Gpu(models.Model):
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveSmallIntegerField()
    uuid = models.CharField(max_length=100, blank=True)
    name = models.CharField(max_length=100)
    memory_bytes = models.BigIntegerField()
    compute_capability = models.CharField(max_length=10, blank=True)
    pci_bus_id = models.CharField(max_length=32, blank=True)
    board = models.ForeignKey(
        Board, null=True, blank=True, on_delete=models.SET_NULL, related_name="gpus"
    )

    class Meta:
        verbose_name = "GPU"
        verbose_name_plural = "GPUs"
        ordering = ["host__name", "index"]
        constraints = [
            models.UniqueConstraint(fields=["host", "index"], name="cluster_gpu_unique_index"),
            models.UniqueConstraint(
                fields=["uuid"], condition=~models.Q(uuid=""), name="cluster_gpu_unique_uuid"
            ),
            models.CheckConstraint(
                condition=models.Q(memory_bytes__gt=0), name="cluster_gpu_memory_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.host.name} GPU {self.index} ({self.name})"


class GpuLink(models.Model):
    """How two GPUs of one host reach each other: NVLink (with its link count) or the PCIe/system
    path NVML calls their common ancestor. Stored once per pair, lower primary key first."""

    class Kind(models.TextChoices):
        NVLINK = "nvlink", "NVLink"
        PIX = "pix", "One PCIe switch"
        PXB = "pxb", "Several PCIe switches"
        PHB = "phb", "PCIe host bridge"
        NODE = "node", "Between host bridges in one NUMA node"
        SYS = "sys", "Across NUMA nodes (SMP interconnect)"

    a = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="links_as_a")
    b = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="links_as_b")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    nvlink_count = models.PositiveSmallIntegerField(default=0)

    class Meta:
        verbose_name = "GPU link"
        constraints = [
            models.UniqueConstraint(fields=["a", "b"], name="cluster_gpulink_unique_pair"),
            models.CheckConstraint(
                condition=models.Q(a__lt=models.F("b")), name="cluster_gpulink_ordered_pair"
            ),
            models.CheckConstraint(
                condition=models.Q(kind="nvlink", nvlink_count__gt=0)
                | (~models.Q(kind="nvlink") & models.Q(nvlink_count=0)),
                name="cluster_gpulink_count_matches_kind",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.a} to {self.b}: {self.get_kind_display()}"


class Backend(models.Model):
    """One inference server process, pinned to one board."""

    class Kind(models.TextChoices):
        LLAMA_CPP = "llama_cpp", "llama.cpp llama-server"
        OLLAMA = "ollama", "Ollama"

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    base_url = models.URLField(max_length=300)
    board = models.ForeignKey(Board, on_delete=models.PROTECT, related_name="backends")
    slots = models.PositiveSmallIntegerField(default=1)
    # Sent as `Authorization: Bearer …`. It has to be sent, so it cannot be hashed; it is never
    # rendered back in the admin, the API, pages or logs (see Backend.__repr__ and the form).
    api_key = models.CharField(max_length=200, blank=True)
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(slots__gte=1, slots__lte=256), name="cluster_backend_slots_range"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<Backend {self.pk} {self.name} {self.kind} {self.address}>"

    @property
    def address(self) -> str:
        """`base_url` as it may be shown (admin list, repr, logs): without a user:password@
        part, a query string or a fragment, any of which may carry a secret."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        try:
            port = parts.port
        except ValueError:  # not a number: shown as nothing rather than as typed
            port = None
        if port is not None:
            netloc += f":{port}"
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class BackendHealth(models.Model):
    """The health registry's row for a backend, written only by the health job and by calls."""

    class State(models.TextChoices):
        UNKNOWN = "unknown", "Not checked yet"
        OK = "ok", "Healthy"
        LOADING = "loading", "Loading model"
        DOWN = "down", "Failing"
        COOLDOWN = "cooldown", "Cooling down"

    backend = models.OneToOneField(
        Backend, on_delete=models.CASCADE, primary_key=True, related_name="health"
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.UNKNOWN)
    message = models.CharField(max_length=300, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    cooldown_until = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_probe_at = models.DateTimeField(null=True, blank=True)
    slots_total = models.PositiveSmallIntegerField(default=0)
    slots_busy = models.PositiveSmallIntegerField(default=0)
    models_loaded = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name = "backend health"
        verbose_name_plural = "backend health"

    def __str__(self) -> str:
        return f"{self.backend_id}: {self.state}"


class Deployment(models.Model):
    """A model served by a backend, with the facts of its GGUF file that placement needs."""

    class KvCacheType(models.TextChoices):
        F32 = "f32", "f32"
        F16 = "f16", "f16"
        BF16 = "bf16", "bf16"
        Q8_0 = "q8_0", "q8_0"
        Q5_1 = "q5_1", "q5_1"
        Q5_0 = "q5_0", "q5_0"
        Q4_1 = "q4_1", "q4_1"
        Q4_0 = "q4_0", "q4_0"
        IQ4_NL = "iq4_nl", "iq4_nl"

    backend = models.ForeignKey(Backend, on_delete=models.PROTECT, related_name="deployments")
    # The name the backend knows: an Ollama tag ("gemma4:26b") or the llama-server alias.
    model_name = models.CharField(max_length=200)
    enabled = models.BooleanField(default=True)
    # GGUF facts (read from the file's header, or typed in).
    architecture = models.CharField(max_length=50, blank=True)
    total_params = models.BigIntegerField(default=0)
    active_params = models.BigIntegerField(default=0)
    quantization = models.CharField(max_length=30, blank=True)
    file_size_bytes = models.BigIntegerField(default=0)
    weights_bytes = models.BigIntegerField(default=0)
    # Layers that keep a KV cache (the block count; fewer in hybrid-attention models).
    n_layers = models.PositiveIntegerField(default=0)
    n_kv_heads = models.PositiveIntegerField(default=0)
    head_dim_k = models.PositiveIntegerField(default=0)
    head_dim_v = models.PositiveIntegerField(default=0)
    # Served settings: the total context (llama-server --ctx-size, divided among slots; Ollama
    # num_ctx per request), the KV cache type, flash attention, parallel slots.
    context_size = models.PositiveIntegerField(default=4096)
    kv_cache_type = models.CharField(
        max_length=8, choices=KvCacheType.choices, default=KvCacheType.F16
    )
    flash_attention = models.BooleanField(default=False)
    parallel_slots = models.PositiveSmallIntegerField(default=1)
    # Sampling the admin enforces on every call (temperature, top_p, top_k, min_p, ...).
    sampling = models.JSONField(default=dict, blank=True)
    memory_estimate_bytes = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["backend__name", "model_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["backend", "model_name"], name="cluster_deployment_unique_model"
            ),
            models.CheckConstraint(
                condition=models.Q(parallel_slots__gte=1), name="cluster_deployment_slots_min"
            ),
            models.CheckConstraint(
                condition=models.Q(context_size__gte=1), name="cluster_deployment_ctx_min"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model_name} on {self.backend.name}"

    @property
    def context_per_slot(self) -> int:
        """llama-server divides --ctx-size among its slots; one request gets one slot."""
        return self.context_size // max(1, self.parallel_slots)


class DeploymentHealth(models.Model):
    """What the health check last saw of a deployment on its backend: the model the server
    serves (compared with `model_name`) and the context one slot really has. Written only by
    the health job; routing, the context guard and the evidence budget read it."""

    class State(models.TextChoices):
        UNKNOWN = "unknown", "Not checked yet"
        OK = "ok", "Serves the configured model"
        MISCONFIGURED = "misconfigured", "Serves another model"

    deployment = models.OneToOneField(
        Deployment, on_delete=models.CASCADE, primary_key=True, related_name="health"
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.UNKNOWN)
    # The names the backend gave for what it serves (llama-server: its model id, alias and
    # file path; Ollama: its pulled models), as it gave them, for the admin and the dashboard.
    served_model = models.CharField(max_length=300, blank=True)
    # Tokens one request gets, as the server reports it (None: it did not say); where it was
    # read ("/props", "/slots", "/v1/models", "/api/show", "/api/ps", "num_ctx").
    served_context = models.PositiveIntegerField(null=True, blank=True)
    context_source = models.CharField(max_length=32, blank=True)
    message = models.CharField(max_length=300, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "deployment health"
        verbose_name_plural = "deployment health"

    def __str__(self) -> str:
        return f"{self.deployment_id}: {self.state}"


class Role(models.TextChoices):
    GATE = "gate", "Gate (are there grounds?)"
    DRAFTER = "drafter", "Drafter"
    REASONER = "reasoner", "Heavy reasoner"
    ADVERSARY = "adversary", "Adversarial reviewer"
    EXTRACTOR = "extractor", "Extractor (finance)"
    SUMMARIZER = "summarizer", "Summarizer"
    # The verifier's second opinion ("does the cited page support this sentence?"); a site with
    # no route for it falls back to the adversary's route (apps.verification.second_opinion).
    VERIFIER = "verifier", "Verifier (second opinion)"


class RoleRoute(models.Model):
    """Role → deployments, tried in `position` order (the first healthy one serves)."""

    role = models.CharField(max_length=16, choices=Role.choices)
    position = models.PositiveSmallIntegerField()
    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="routes")

    class Meta:
        ordering = ["role", "position"]
        constraints = [
            models.UniqueConstraint(fields=["role", "position"], name="cluster_route_unique_pos"),
            models.UniqueConstraint(
                fields=["role", "deployment"], name="cluster_route_unique_deployment"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role} #{self.position}: {self.deployment}"


class GpuStatus(models.Model):
    """The latest NVML sample of a GPU (one row per GPU, overwritten by the agent). A sensor
    the card does not have (NVML: not supported) is None, never a made-up 0."""

    gpu = models.OneToOneField(
        Gpu, on_delete=models.CASCADE, primary_key=True, related_name="status"
    )
    sampled_at = models.DateTimeField()
    utilisation_pct = models.PositiveSmallIntegerField(null=True, blank=True)
    memory_used_bytes = models.BigIntegerField(default=0)
    memory_total_bytes = models.BigIntegerField(default=0)
    temperature_c = models.PositiveSmallIntegerField(null=True, blank=True)
    power_w = models.FloatField(null=True, blank=True)
    power_limit_w = models.FloatField(null=True, blank=True)
    sm_clock_mhz = models.PositiveIntegerField(null=True, blank=True)
    memory_clock_mhz = models.PositiveIntegerField(null=True, blank=True)
    # [{"pid": 123, "name": "llama-server", "used_memory_bytes": ...}]
    processes = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name = "GPU status"
        verbose_name_plural = "GPU statuses"

    def __str__(self) -> str:
        return f"GPU {self.gpu_id} at {self.sampled_at:%Y-%m-%d %H:%M:%S}"


class GpuSample(models.Model):
    """Downsampled history: one row per GPU per bucket (averages and peaks over the bucket)."""

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="samples")
    bucket_start = models.DateTimeField()
    bucket_seconds = models.PositiveIntegerField()
    samples = models.PositiveIntegerField(default=1)
    utilisation_avg = models.FloatField(default=0)
    utilisation_max = models.PositiveSmallIntegerField(default=0)
    memory_used_max_bytes = models.BigIntegerField(default=0)
    temperature_max_c = models.PositiveSmallIntegerField(default=0)
    power_avg_w = models.FloatField(default=0)

    class Meta:
        verbose_name = "GPU sample"
        ordering = ["gpu", "bucket_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["gpu", "bucket_seconds", "bucket_start"], name="cluster_sample_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"GPU {self.gpu_id}, {self.bucket_seconds} s from {self.bucket_start:%Y-%m-%d %H:%M}"


class CallRecord(models.Model):
    """Telemetry of one call to a backend. Labels are copied so that history survives a
    deployment being deleted."""

    class Outcome(models.TextChoices):
        OK = "ok", "Completed"
        ERROR = "error", "Backend error"
        CANCELLED = "cancelled", "Cancelled"
        TRUNCATED = "truncated", "Prompt truncated by the backend"
        REFUSED = "refused", "Refused before dispatch"

    deployment = models.ForeignKey(
        Deployment, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls"
    )
    deployment_label = models.CharField(max_length=300)
    board_label = models.CharField(max_length=200)
    role = models.CharField(max_length=16, blank=True)
    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    error = models.CharField(max_length=500, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    # The local estimate of the prompt (cluster.tokens.estimate_message_tokens), recorded where
    # the backend cannot count before the call (Ollama); with prompt_tokens, what Ollama
    # reported, it calibrates later estimates for the deployment (cluster.tokens, 2).
    prompt_estimate_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(default=0)
    # How the reply ended (llama.cpp finish_reason, Ollama done_reason); blank when none ended.
    finish_reason = models.CharField(max_length=32, blank=True)
    time_to_first_token_ms = models.FloatField(null=True, blank=True)
    duration_ms = models.FloatField(default=0)
    prefill_tokens_per_second = models.FloatField(null=True, blank=True)
    decode_tokens_per_second = models.FloatField(null=True, blank=True)
    # The drafting stage the call was made for, if any (every attempt and fallback of the
    # stage links here). Only the id is ever shown with the record: the stage, its prompt and
    # its case are read through the case's own access rules (drafting selectors).
    stage = models.ForeignKey(
        "drafting.Stage",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="call_records",
    )

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["deployment", "-started_at"])]

    def __str__(self) -> str:
        return f"{self.deployment_label} {self.outcome} at {self.started_at:%Y-%m-%d %H:%M:%S}"
