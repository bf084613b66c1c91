"""Admin forms for the cluster configuration. Validation that needs other rows (placement,
boards) is done by services; the forms turn their errors into form errors."""

from typing import Any

from django import forms

from apps.cluster.models import Backend, Deployment


class BackendForm(forms.ModelForm):
    """The API key is write-only: never rendered back; left blank, the stored key is kept."""

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

    def clean_base_url(self) -> str:
        url: str = self.cleaned_data["base_url"]
        if not url.startswith(("http://", "https://")):
            raise forms.ValidationError("Use an http:// or https:// address.")
        return url.rstrip("/")

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


class DeploymentForm(forms.ModelForm):
    class Meta:
        model = Deployment
        fields = [
            "backend",
            "model_name",
            "enabled",
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
            "context_size",
            "kv_cache_type",
            "flash_attention",
            "parallel_slots",
            "sampling",
        ]

    def clean_sampling(self) -> dict[str, Any]:
        value = self.cleaned_data.get("sampling") or {}
        if not isinstance(value, dict):
            raise forms.ValidationError(
                'Sampling presets are a JSON object, e.g. {"temperature": 0.2}.'
            )
        return value
