"""Reads for the cluster app. Cluster state is not client material: any signed-in user may read
it, but never a backend's API key."""

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Avg, Count
from django.utils import timezone

from apps.cluster.models import CallRecord

# DESIGN.md: on this hardware >= 40 tokens/s decoding is "usable".
USABLE_DECODE_TOKENS_PER_SECOND = 40.0
# The rolling speed is the mean over a deployment's latest successful calls in this window.
SPEED_WINDOW_CALLS = 20
SPEED_WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class DeploymentSpeed:
    deployment_id: int
    decode_tokens_per_second: float | None
    calls: int

    @property
    def usable(self) -> bool:
        speed = self.decode_tokens_per_second
        return speed is not None and speed >= USABLE_DECODE_TOKENS_PER_SECOND


def deployment_speed_get(*, deployment_id: int) -> DeploymentSpeed:
    """Rolling decode speed: mean tokens/s of the latest SPEED_WINDOW_CALLS successful calls
    of the last SPEED_WINDOW that reported a decode speed."""
    recent = (
        CallRecord.objects.filter(
            deployment_id=deployment_id,
            outcome=CallRecord.Outcome.OK,
            decode_tokens_per_second__isnull=False,
            started_at__gte=timezone.now() - SPEED_WINDOW,
        )
        .order_by("-started_at")
        .values_list("pk", flat=True)[:SPEED_WINDOW_CALLS]
    )
    figures = CallRecord.objects.filter(pk__in=list(recent)).aggregate(
        speed=Avg("decode_tokens_per_second"), calls=Count("pk")
    )
    return DeploymentSpeed(
        deployment_id=deployment_id,
        decode_tokens_per_second=figures["speed"],
        calls=figures["calls"],
    )
