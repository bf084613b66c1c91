"""Issue 29, requirement 5, for evidence budgets (apps/drafting/pipeline/context.py): excerpts
are counted by the deployment's tokenizer once (cluster.tokens caches them by text, and they
are counted with a fixed nonce, an upper bound for any render's), so the next stages of a run
ask the tokenizer for nothing new; an Ollama deployment's budget is the estimate calibrated
from its earlier calls, and the stage's budget says so."""

import re
import secrets
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from apps.cluster.models import CallRecord, Deployment
from apps.cluster.tokens import CALIBRATION_MARGIN
from apps.drafting.pipeline import context
from apps.evidence.models import FrozenPage
from apps.evidence.prompt import render_packet_pages
from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from lexweb_dev.fakebackend.tokens import count_text_tokens
from tests.cluster.dispatch_fixtures import backend_make, deployment_make

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = (
    "On 2 May 2022 the lender (ADY0000001) wired $45,000.00; the borrower's first payment of "
    "$869.98 was due June 1, 2022, and FOR VALUE RECEIVED the note was signed. "
)


def _pages(count: int) -> list[FrozenPage]:
    return [
        FrozenPage(
            pk=n, position=n, page_number=n, bates=[f"ADY{n:07d}"], text=f"{PAGE * 3} Page {n}."
        )
        for n in range(1, count + 1)
    ]


def _counting(fake: FakeBackend) -> int:
    return sum(1 for _m, path, _b in fake.requests if path in ("/tokenize", "/apply-template"))


async def _deployment(fake: FakeBackend) -> Deployment:
    backend = await sync_to_async(backend_make)(base_url=fake.base_url, kind=fake.settings.kind)
    deployment: Deployment = await sync_to_async(deployment_make)(backend)
    return deployment


async def _select(deployment: Deployment, pages: list[FrozenPage], budget: int) -> context.Evidence:
    counter = await context.token_counter(deployment, role="drafter")
    try:
        return await context.evidence_select(
            pages, ranked=[p.pk for p in reversed(pages)], budget_tokens=budget, counter=counter
        )
    finally:
        await counter.aclose()


@pytest.mark.asyncio
async def test_the_next_stage_counts_the_same_excerpts_from_the_cache() -> None:
    pages = _pages(40)
    async with FakeBackend(FakeSettings(kind="llama_cpp")) as fake:
        deployment = await _deployment(fake)
        first = await _select(deployment, pages, 3000)
        asked = _counting(fake)
        second = await _select(deployment, pages, 3000)

    assert asked > 0 and _counting(fake) == asked  # nothing new for the tokenizer
    assert first.labels == second.labels and first.labels
    assert first.budget["used_tokens"] == second.budget["used_tokens"]
    assert first.budget["cached_counts"] == 0
    assert second.budget["cached_counts"] == second.budget["tokenizer_counts"]
    assert second.budget["cached_counts"] != 0
    assert second.budget["counted_by"] == "tokenizer"


@pytest.mark.slow
def test_counting_with_the_fixed_nonce_never_counts_less_than_a_real_render() -> None:
    pages = _pages(3)
    counted = count_text_tokens(render_packet_pages(pages, nonce=context.COUNTING_NONCE))

    renders = [render_packet_pages(pages, nonce=secrets.token_hex(16)) for _ in range(300)]

    assert max(count_text_tokens(text) for text in renders) <= counted
    assert all(re.search(r"\b[0-9a-f]{32}\b", text) for text in renders)


def _calls(deployment: Deployment, *, reported: int, estimate: int) -> None:
    CallRecord.objects.create(
        deployment=deployment,
        deployment_label=str(deployment),
        board_label="board",
        started_at=timezone.now() - timedelta(minutes=1),
        outcome=CallRecord.Outcome.OK,
        prompt_tokens=reported,
        prompt_estimate_tokens=estimate,
    )


@pytest.mark.asyncio
async def test_an_ollama_budget_is_the_calibrated_estimate_and_the_stage_is_told() -> None:
    pages = _pages(30)
    async with FakeBackend(FakeSettings(kind="ollama")) as fake:
        deployment = await _deployment(fake)
        plain = await _select(deployment, pages, 4000)
        # Its calls reported 1.5 times the estimate of their prompts.
        await sync_to_async(_calls)(deployment, reported=300, estimate=200)
        calibrated = await _select(deployment, pages, 4000)

    assert plain.budget["counted_by"] == "estimate"
    assert "no earlier call to calibrate it from yet" in str(plain.budget["fallback_reason"])
    assert "calibration" not in plain.budget
    scale = round(1.5 * (1 + CALIBRATION_MARGIN), 4)
    assert calibrated.budget["counted_by"] == "calibrated estimate"
    assert calibrated.budget["calibration"] == {
        "scale": scale,
        "calls": 1,
        "margin": CALIBRATION_MARGIN,
    }
    assert f"x{scale:.2f}, calibrated from the prompt tokens" in str(
        calibrated.budget["fallback_reason"]
    )
    assert len(calibrated.labels) < len(plain.labels)
    assert _counting(fake) == 0  # Ollama has no tokenizer to ask
