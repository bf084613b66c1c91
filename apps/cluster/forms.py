"""Admin forms for the cluster configuration. Validation that needs other rows (placement,
boards) is done by services; the forms turn their errors into form errors."""

import copy
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

from django import forms
from django.db import transaction
from django.forms.models import construct_instance

from apps.cluster.backends.streams import base_url_problem
from apps.cluster.models import Backend, Board, Deployment, Gpu
from apps.cluster.sampling import sampling_check
from apps.cluster.services import placement
from lexweb.errors import DomainError

# What the change form shows in place of a password in the base URL (user:password@host).
PASSWORD_MASK = "********"  # noqa: S105  (a placeholder, not a password)


def _userinfo_split(url: str) -> tuple[SplitResult, str, str]:
    """(the parts of `url`, its user:password as typed or "", host:port as typed)."""
    parts = urlsplit(url)
    userinfo, _, host_port = parts.netloc.rpartition("@")
    return parts, userinfo, host_port


def _password_masked(url: str) -> str:
    """`url` with the password of its user:password@ part, if any, as PASSWORD_MASK."""
    parts, userinfo, host_port = _userinfo_split(url)
    if ":" not in userinfo:
        return url
    user = userinfo.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:{PASSWORD_MASK}@{host_port}"))


def _place(parts: SplitResult) -> tuple[str, str | None, str | None, int | None]:
    """Where a URL's password is sent: scheme, user, host, port (the default one as None)."""
    try:
        port = parts.port
    except ValueError:
        port = -1
    return (parts.scheme, parts.username, parts.hostname, port)


class BackendForm(forms.ModelForm):
    """The API key is write-only: never rendered back; left blank, the stored key is kept.

    A password in the base URL (user:password@host) is shown as PASSWORD_MASK; sent back
    masked, the stored password is kept, but only for the same scheme, user, host and port (so
    that a changed address cannot carry the stored password elsewhere).
    """

    # Backends sit on the firm's LAN, usually without TLS: a bare host:port means http://.
    base_url = forms.URLField(max_length=300, assume_scheme="http", label="Base URL")
    api_key = forms.CharField(
        required=False,
        strip=True,
        max_length=200,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Sent as 'Authorization: Bearer …'. Leave blank to keep the stored key.",
    )
    clear_api_key = forms.BooleanField(required=False, label="Remove the stored API key")

    class Meta:
        model = Backend
        fields = ["name", "kind", "base_url", "board", "slots", "api_key", "enabled"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.initial.get("base_url"):
            self.initial["base_url"] = _password_masked(str(self.initial["base_url"]))

    def clean_base_url(self) -> str:
        url: str = self.cleaned_data["base_url"]
        if not url.startswith(("http://", "https://")):
            raise forms.ValidationError("Use an http:// or https:// address.")
        problem = base_url_problem(url)
        if problem:
            raise forms.ValidationError(problem)
        return self._password_kept(url.rstrip("/"))

    def _password_kept(self, url: str) -> str:
        """`url` with the stored password in place of PASSWORD_MASK."""
        parts, _, host_port = _userinfo_split(url)
        if parts.password != PASSWORD_MASK:
            return url
        stored = ""
        if self.instance.pk:
            stored = Backend.objects.values_list("base_url", flat=True).get(pk=self.instance.pk)
        kept, userinfo, _ = _userinfo_split(stored)
        if kept.password is None or _place(kept) != _place(parts):
            raise forms.ValidationError(
                "Type the password in the base URL again: the stored one is kept only for the "
                "same user, host and port."
            )
        return urlunsplit(parts._replace(netloc=f"{userinfo}@{host_port}"))

    def clean_board(self) -> Board:
        board: Board = self.cleaned_data["board"]
        if self.instance.pk and board.pk != self.instance.board_id:
            try:
                placement.backend_move_check(backend_id=self.instance.pk, board_id=board.pk)
            except DomainError as exc:
                raise forms.ValidationError(exc.message) from None
        return board

    def save(self, commit: bool = True) -> Backend:
        backend: Backend = super().save(commit=False)
        new_key = self.cleaned_data.get("api_key") or ""
        if self.cleaned_data.get("clear_api_key"):
            backend.api_key = ""
        elif not new_key and self.instance.pk:
            backend.api_key = Backend.objects.values_list("api_key", flat=True).get(
                pk=self.instance.pk
            )
        if commit:
            backend.save()
        return backend


# Facts the GGUF header supplies when the admin leaves them at 0 or blank (Deployment names).
HEADER_FIELDS = [
    "architecture",
    "total_params",
    "active_params",
    "quantization",
    "file_size_bytes",
    "weights_bytes",
    "n_layers",
    "n_kv_heads",
    "head_dim_k",
    "head_dim_v",
]


class GpuForm(forms.ModelForm):
    """A GPU's board: one of its own host's, and no move that leaves a deployment unplaced."""

    class Meta:
        model = Gpu
        fields = [
            "index",
            "name",
            "memory_bytes",
            "compute_capability",
            "pci_bus_id",
            "uuid",
            "board",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        host_id = self.instance.host_id if self.instance.pk else None
        board_field = self.fields["board"]
        if host_id is not None and isinstance(board_field, forms.ModelChoiceField):
            board_field.queryset = Board.objects.filter(host_id=host_id)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or self.cleaned_data
        board: Board | None = cleaned.get("board")
        host = cleaned.get("host")
        host_id = host.pk if host is not None else self.instance.host_id
        if board is not None and "board" not in self.errors and board.host_id != host_id:
            self.add_error("board", "Choose a board of this GPU's own host.")
        elif self._board_changes(board):
            try:
                placement.gpu_move_check(
                    gpu_id=self.instance.pk, board_id=board.pk if board else None
                )
            except DomainError as exc:
                self.add_error("board", exc.message)
        return cleaned

    def _board_changes(self, board: Board | None) -> bool:
        if not self.instance.pk or "board" in self.errors:
            return False
        return (board.pk if board else None) != self.instance.board_id


class DeploymentForm(forms.ModelForm):
    """A deployment with its GGUF facts, refused unless it fits its board.

    The facts come from the form, from the header of the file at `gguf_path` (for every fact
    left at 0 or blank), or both. Placement runs on the unsaved result in clean(); its estimate
    is stored on the instance, so saving the form stores it too.
    """

    gguf_path = forms.CharField(
        required=False,
        max_length=1000,
        label="GGUF file",
        help_text="Path of the model file on a disk this server can read (for a split model, "
        "any part). Only its header is read. Facts left at 0 or blank are taken from it.",
    )

    class Meta:
        model = Deployment
        fields = [
            "backend",
            "model_name",
            "enabled",
            "gguf_path",
            *HEADER_FIELDS,
            "context_size",
            "kv_cache_type",
            "flash_attention",
            "parallel_slots",
            "sampling",
        ]
        help_texts = {
            "n_layers": "Layers that keep a KV cache: the block count, fewer in hybrid models "
            "(Qwen3.5 and Qwen3-Next attend in every 4th layer).",
            "n_kv_heads": "KV heads per layer (the largest, if they vary by layer).",
            "weights_bytes": "Bytes of all tensors, from the GGUF header.",
            "context_size": "llama-server --ctx-size: the total, shared by the parallel slots. "
            "Ollama: num_ctx, per request.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Left empty, a fact is read from the header (or stays unknown, which placement refuses).
        for name in HEADER_FIELDS:
            self.fields[name].required = False

    def clean_sampling(self) -> dict[str, float | int]:
        try:
            return sampling_check(self.cleaned_data.get("sampling") or {})
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or self.cleaned_data
        path = (cleaned.get("gguf_path") or "").strip()
        header: dict[str, object] = {}
        if path:
            # Imported here: gguf brings numpy (0.14 s), which every process would pay at start.
            from apps.cluster import gguf

            try:
                header = dict(gguf.read_gguf_facts(path).deployment_values())
            except gguf.GgufError as exc:
                self.add_error("gguf_path", exc.message)
                return cleaned
        for name in HEADER_FIELDS:
            if name not in self.errors and not cleaned.get(name):
                unknown = "" if name in ("architecture", "quantization") else 0
                cleaned[name] = header.get(name, unknown)
                # Also for a field absent from the POST, which construct_instance would skip.
                setattr(self.instance, name, cleaned[name])
        if self.errors:
            return cleaned
        candidate = construct_instance(self, copy.copy(self.instance))
        # The admin validates and saves in one transaction: there, lock the board until the save
        # commits, so two admins cannot both place a model in the same free memory.
        in_transaction = transaction.get_connection().in_atomic_block
        try:
            estimate = placement.placement_check(deployment=candidate, lock=in_transaction)
        except placement.PlacementError as exc:
            self.add_error(exc.field if exc.field in self.fields else None, exc.message)
            return cleaned
        self.instance.memory_estimate_bytes = estimate.total_bytes
        return cleaned
