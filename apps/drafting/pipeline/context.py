"""Evidence context for a stage: the frozen pages that fit its token budget, rendered by the
evidence app's one prompt-rendering function (Bates labels, untrusted material wrapped).

1. The budget is what the smallest context among the role's deployments leaves after the reply
   (max_tokens), the prompt without evidence, and a margin (PROMPT_MARGIN_TOKENS in execute).
   `evidence_select` keeps a further safety margin of MARGIN_FRACTION (at least
   MARGIN_MIN_TOKENS) for the differences between counting excerpts one by one and counting them
   together (each render draws a new nonce) and between the tokenizers of fallback models.
2. Tokens are counted by the tokenizer of the role's first routable deployment (`TokenCounter`),
   on the rendered excerpts, never on raw page text:
   - llama-server: POST /tokenize of the text (and /apply-template + /tokenize for the prompt
     without evidence);
   - Ollama has no tokenizer endpoint (its /api/show leaves the vocabulary out, and a generation
     just to read prompt_eval_count would take a slot and could reload the model with another
     num_ctx), so its counts are `estimate_tokens`, scaled up (never down) by what earlier stages
     on the same deployment showed (`estimate_scale`: the largest ratio of the tokens Ollama
     reported to the estimate, plus 10%). Dispatch still checks Ollama's own count afterwards
     (a prompt that filled num_ctx is refused, never used cut).
   - When counting fails (the tokenizer times out, errs, or is absent) every later count is the
     estimate and the reason is kept (`Evidence.budget["fallback_reason"]`, stored on the stage).
   `estimate_tokens` is conservative for the tokenizers in use: a run of ASCII letters is a token
   per three letters, and every digit, symbol, newline and non-ASCII character a token.
3. If the whole packet, rendered, fits, it is sent whole. Otherwise the pages are taken in the
   order of `ranking.frozen_pages_ranked` (PostgreSQL full text search against the instructions
   and the section being worked on), then the pages that match nothing in packet order,
   greedily: each page whose rendered excerpt still fits is taken. The chosen pages are sent in
   packet order, and the whole rendered evidence is counted once more; if it is over the budget
   the lowest-ranked pages are dropped until it fits.
"""

import asyncio
import json
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from apps.cluster import labels
from apps.cluster.backends import BackendClient, BackendError, Message, Timeouts, client_for
from apps.cluster.models import Backend, Deployment
from apps.drafting.models import Stage
from apps.evidence.models import FrozenPage
from apps.evidence.prompt import page_label, render_packet_pages

MARGIN_FRACTION = 0.05
MARGIN_MIN_TOKENS = 32
# Seconds for one count; a tokenizer slower than this is treated as failed.
COUNT_SECONDS = 10.0
# Excerpts counted at once, and at most this many pages counted for one stage.
COUNT_BATCH = 8
MAX_COUNTED_PAGES = 1000
# No tokenizer gets more characters than this into one token on average: a page longer than
# this many characters per token left cannot fit, and is not counted.
MAX_CHARS_PER_TOKEN = 12
MIN_EXCERPT_TOKENS = 16
# Per message of the chat template, for estimates (role markers, newlines).
MESSAGE_OVERHEAD_TOKENS = 8
CALIBRATION_STAGES = 20
CALIBRATION_MARGIN = 1.1
NOTHING_FITS = "(No evidence fits this model's context.)"

_ESTIMATE = re.compile(r"[A-Za-z]+|\S|\n")


def estimate_tokens(text: str) -> int:
    """A conservative token count of `text` (see the module docstring, 2)."""
    total = 1
    for piece in _ESTIMATE.findall(text):
        total += (len(piece) + 2) // 3 if piece[0].isascii() and piece[0].isalpha() else 1
    return total


def estimate_message_tokens(messages: Sequence[Message]) -> int:
    return sum(estimate_tokens(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in messages) + 4


def estimate_scale(*, deployment_id: int) -> float:
    """How much to scale estimates up for this deployment: the largest ratio, over its latest
    stages, of the prompt tokens the backend reported to the estimate of that prompt, plus a
    margin; never below 1 (a backend's report is only ever allowed to make estimates larger:
    Ollama may report only the tokens it did not have cached)."""
    rows = (
        Stage.objects.filter(deployment_id=deployment_id, prompt_tokens__gt=0)
        .exclude(prompt_text="")
        .order_by("-finished_at", "-pk")
        .values_list("prompt_text", "prompt_tokens")[:CALIBRATION_STAGES]
    )
    scale = 1.0
    for prompt_text, reported in rows:
        try:
            messages = json.loads(prompt_text)
            estimate = estimate_message_tokens(
                [{"role": m["role"], "content": str(m["content"])} for m in messages]
            )
        except (ValueError, TypeError, KeyError):
            continue
        scale = max(scale, reported / estimate * CALIBRATION_MARGIN)
    return min(scale, 8.0)


class TokenCounter:
    """Counts tokens with a deployment's backend tokenizer, or estimates them (see the module
    docstring, 2). After the first failure every count is an estimate; `fallback_reason` says
    why. Close it with `aclose()`."""

    def __init__(
        self, deployment: Deployment | None, *, scale: float = 1.0, role: str = ""
    ) -> None:
        self.deployment = deployment
        self.role = role
        self.scale = scale
        self.counted = 0  # counts the tokenizer answered
        self.estimated = 0
        self.fallback_reason = ""
        self._client: BackendClient | None = None
        self._broken = False
        if deployment is None:
            self.fallback_reason = "No deployment of the role is routable: estimated."
        elif deployment.backend.kind == Backend.Kind.OLLAMA:
            self.fallback_reason = (
                "Ollama has no tokenizer endpoint: estimated, scaled by what it reported for "
                f"earlier prompts (x{scale:.2f})."
            )
        else:
            limit = Timeouts(connect=5.0, between_tokens=COUNT_SECONDS, probe=COUNT_SECONDS)
            self._client = client_for(deployment.backend, timeouts=limit)

    @property
    def tokenizer(self) -> str:
        if self.deployment is None:
            return ""
        return f"{self.deployment.backend.get_kind_display()} tokenizer of {self.deployment}"

    def _estimate(self, tokens: int) -> int:
        self.estimated += 1
        return math.ceil(tokens * self.scale)

    def _public(self, error: BackendError) -> str:
        """The client's message names the backend by its URL; the stage's budget, shown to
        lawyers, names the deployment (cluster.labels)."""
        if self.deployment is None:
            return labels.scrub_addresses(str(error))
        return labels.deployment_message(str(error), deployment=self.deployment, role=self.role)

    def _failed(self, reason: str) -> None:
        if not self._broken:
            self.fallback_reason = f"{reason} Estimated from then on."[:500]
        self._broken = True

    async def text(self, text: str) -> int:
        return await self._count(
            lambda client: client.count_text_tokens(text),
            seconds=COUNT_SECONDS,
            missing="The backend has no /tokenize endpoint.",
            estimate=lambda: estimate_tokens(text),
        )

    async def messages(self, messages: list[Message]) -> int:
        """The chat prompt's tokens, its template included."""
        return await self._count(
            lambda client: client.count_tokens(messages),
            seconds=COUNT_SECONDS * 2,
            missing="The backend has no /apply-template or /tokenize endpoint.",
            estimate=lambda: estimate_message_tokens(messages),
        )

    async def _count(
        self,
        ask: Callable[[BackendClient], Awaitable[int | None]],
        *,
        seconds: float,
        missing: str,
        estimate: Callable[[], int],
    ) -> int:
        """The backend tokenizer's count, or (once it failed, timed out or has no endpoint,
        which is recorded) the estimate."""
        if self._client is not None and not self._broken:
            try:
                async with asyncio.timeout(seconds):
                    counted = await ask(self._client)
            except TimeoutError:
                self._failed(f"The tokenizer did not answer within {seconds:.0f} s.")
            except BackendError as exc:
                self._failed(f"The tokenizer failed: {self._public(exc)}")
            else:
                if counted is not None:
                    self.counted += 1
                    return counted
                self._failed(missing)
        return self._estimate(estimate())

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


@dataclass(frozen=True)
class Evidence:
    text: str
    labels: list[str]
    pages_total: int
    # How it was chosen and counted, stored on the stage (Stage.evidence_budget).
    budget: dict[str, object] = field(default_factory=dict)


def _excerpt(page: FrozenPage) -> str:
    """The page's excerpt as render_packet_pages writes it (without the preamble)."""
    rendered = render_packet_pages([page])
    # Page text cannot hold "<<<" (neutralised), so the last one opens this page's excerpt.
    return rendered[rendered.rfind("\n\n<<<EXCERPT ") + 2 :]


async def evidence_select(
    pages: Sequence[FrozenPage],
    *,
    ranked: Sequence[int],
    budget_tokens: int,
    counter: TokenCounter,
) -> Evidence:
    """The pages to send (see the module docstring, 3), rendered. `pages` in packet order with
    their documents; `ranked` the ids of the pages that match the query, best first."""
    margin = max(MARGIN_MIN_TOKENS, math.ceil(budget_tokens * MARGIN_FRACTION))
    usable = budget_tokens - margin
    facts: dict[str, object] = {
        "budget_tokens": budget_tokens,
        "margin_tokens": margin,
        "pages_total": len(pages),
        "pages_matched": len(ranked),
    }
    chosen, used, selection = await _choose(pages, ranked, usable, counter)
    facts |= {
        "selection": selection,
        "used_tokens": used,
        "pages_sent": len(chosen),
        "counted_by": "tokenizer" if counter.counted and not counter.estimated else "estimate",
        "tokenizer": counter.tokenizer,
        "tokenizer_counts": counter.counted,
        "estimates": counter.estimated,
        "fallback_reason": counter.fallback_reason,
    }
    if counter.counted and counter.estimated:
        facts["counted_by"] = "tokenizer, then estimate"
    if not chosen:
        return Evidence(text=NOTHING_FITS, labels=[], pages_total=len(pages), budget=facts)
    return Evidence(
        text=render_packet_pages(chosen),
        labels=[page_label(page) for page in chosen],
        pages_total=len(pages),
        budget=facts,
    )


async def _choose(
    pages: Sequence[FrozenPage], ranked: Sequence[int], usable: int, counter: TokenCounter
) -> tuple[list[FrozenPage], int, str]:
    """(pages in packet order, their rendered tokens, how they were chosen)."""
    if usable <= MIN_EXCERPT_TOKENS or not pages:
        return [], 0, "nothing fits" if pages else "empty packet"
    if sum(len(page.text) for page in pages) <= usable * MAX_CHARS_PER_TOKEN:
        whole = await counter.text(render_packet_pages(pages))
        if whole <= usable:
            return list(pages), whole, "whole packet"
    by_id = {page.pk: page for page in pages}
    order = [by_id[pk] for pk in dict.fromkeys(ranked) if pk in by_id]
    matched = {page.pk for page in order}
    order += [page for page in pages if page.pk not in matched]
    used = await counter.text(render_packet_pages([]))
    chosen: list[tuple[FrozenPage, int]] = []
    counted = 0
    queue = iter(order)
    while counted < MAX_COUNTED_PAGES and usable - used >= MIN_EXCERPT_TOKENS:
        batch = []
        for page in queue:
            if len(page.text) <= (usable - used) * MAX_CHARS_PER_TOKEN:
                batch.append(page)
            if len(batch) == COUNT_BATCH:
                break
        if not batch:
            break
        costs = await asyncio.gather(*(counter.text(_excerpt(page)) for page in batch))
        counted += len(batch)
        for page, cost in zip(batch, costs, strict=True):
            # Joined to the others by a blank line (two newlines, one token or two).
            if used + cost + 2 <= usable:
                chosen.append((page, cost + 2))
                used += cost + 2
    while chosen:
        in_order = sorted((page for page, _ in chosen), key=lambda page: page.position)
        total = await counter.text(render_packet_pages(in_order))
        if total <= usable:
            return in_order, total, "ranked by full text search"
        # Over by some tokens: drop the lowest-ranked pages worth at least that many.
        excess = total - usable
        while chosen and excess > 0:
            excess -= chosen.pop()[1]
    return [], 0, "nothing fits"
