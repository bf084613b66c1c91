"""Evidence context for a stage: the frozen pages that fit its token budget, rendered by the
evidence app's one prompt-rendering function (Bates labels, untrusted material wrapped).

1. The budget is what the smallest context among the role's deployments leaves after the reply
   (max_tokens), the prompt without evidence, and a margin (PROMPT_MARGIN_TOKENS in execute).
   `evidence_select` keeps a further safety margin of MARGIN_FRACTION (at least
   MARGIN_MIN_TOKENS) for the differences between counting excerpts one by one and counting them
   together and between the tokenizers of fallback models.
2. Tokens are counted by the tokenizer of the role's first routable deployment (`TokenCounter`),
   on the rendered excerpts, never on raw page text, through cluster.tokens:
   - llama-server: POST /tokenize of the text (and /apply-template + /tokenize for the prompt
     without evidence), each text once: counts are cached by text hash for the tokenizer, so
     the excerpts counted for one stage cost nothing to the next stages and runs on the packet.
     Excerpts are counted as rendered with COUNTING_NONCE instead of the render's random nonce
     (a fresh one for every render would make every text new): 32 characters alternating digit
     and letter, which a byte-level tokenizer splits into 32 tokens, the most a 32-character
     hexadecimal nonce can take, so the count is an upper bound for any nonce;
   - Ollama has no tokenizer endpoint (its /api/show leaves the vocabulary out, and a generation
     just to read prompt_eval_count would take a slot and could reload the model with another
     num_ctx), so its counts are `estimate_tokens` times the deployment's calibration, learnt
     from the prompt tokens it reported for its earlier calls against their estimates, plus
     10% (cluster.tokens, 2; `token_counter`). Dispatch still checks Ollama's own count
     afterwards (a prompt that filled num_ctx is refused, never used cut).
   - When counting fails (the tokenizer times out, errs, or is absent) every later count is the
     estimate and the reason is kept (`Evidence.budget["fallback_reason"]`, stored on the stage).
   `estimate_tokens` (cluster.tokens, 3) is conservative for the tokenizers in use: a run of
   ASCII letters is a token per three letters (capitals per two), and every digit, symbol,
   newline, run of blank space and non-ASCII character a token.
3. If the whole packet, rendered, fits, it is sent whole. Otherwise the pages are taken in the
   order of `ranking.frozen_pages_ranked` (PostgreSQL full text search against the instructions
   and the section being worked on), then the pages that match nothing in packet order,
   greedily: each page whose rendered excerpt still fits is taken. The chosen pages are sent in
   packet order, and the whole rendered evidence is counted once more; if it is over the budget
   the lowest-ranked pages are dropped until it fits.
"""

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from asgiref.sync import sync_to_async

from apps.cluster import labels, selectors, tokens
from apps.cluster.backends import BackendClient, BackendError, Message, Timeouts, client_for
from apps.cluster.models import Backend, Deployment
from apps.cluster.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    Calibration,
    estimate_message_tokens,
    estimate_tokens,
)
from apps.evidence.models import FrozenPage
from apps.evidence.prompt import page_label, render_packet_pages

__all__ = [
    "MESSAGE_OVERHEAD_TOKENS",
    "Evidence",
    "TokenCounter",
    "estimate_message_tokens",
    "estimate_tokens",
    "evidence_select",
    "token_counter",
]

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
NOTHING_FITS = "(No evidence fits this model's context.)"
# What excerpts are counted with in place of the render's nonce (module docstring, 2).
COUNTING_NONCE = "0a" * 16


async def token_counter(deployment: Deployment | None, *, role: str = "") -> "TokenCounter":
    """The counter for `deployment` (None: nothing routable, every count estimated), with the
    deployment's calibration where its backend has no tokenizer (Ollama)."""
    calibration = None
    if deployment is not None and deployment.backend.kind == Backend.Kind.OLLAMA:
        calibration = await sync_to_async(selectors.deployment_token_calibration)(
            deployment_id=deployment.pk
        )
    return TokenCounter(deployment, role=role, calibration=calibration)


class TokenCounter:
    """Counts tokens with a deployment's backend tokenizer (cached: cluster.tokens), or
    estimates them (see the module docstring, 2). After the first failure every count is an
    estimate; `fallback_reason` says why. Close it with `aclose()`. `calibration` scales the
    estimates (Ollama's: `token_counter` reads it)."""

    def __init__(
        self,
        deployment: Deployment | None,
        *,
        role: str = "",
        calibration: Calibration | None = None,
    ) -> None:
        self.deployment = deployment
        self.role = role
        self.calibration = calibration or Calibration()
        self.counted = 0  # counts the tokenizer answered
        self.cached = 0  # of which the cache had
        self.estimated = 0
        self.fallback_reason = ""
        self._client: BackendClient | None = None
        self._broken = False
        # Counts differ between tokenizers: the cache keeps them by backend and model.
        self._tokenizer: tokens.Tokenizer = None
        if deployment is not None:
            backend = deployment.backend
            self._tokenizer = tokens.tokenizer_of(
                backend.pk, backend.base_url, deployment.model_name
            )
        if deployment is None:
            self.fallback_reason = "No deployment of the role is routable: estimated."
        elif deployment.backend.kind == Backend.Kind.OLLAMA:
            self.fallback_reason = (
                f"Ollama has no tokenizer endpoint: counted by {self.calibration.describe()}."
            )
        else:
            limit = Timeouts(connect=5.0, between_tokens=COUNT_SECONDS, probe=COUNT_SECONDS)
            self._client = client_for(deployment.backend, timeouts=limit)

    @property
    def scale(self) -> float:
        return self.calibration.scale

    @property
    def tokenizer(self) -> str:
        if self.deployment is None:
            return ""
        return f"{self.deployment.backend.get_kind_display()} tokenizer of {self.deployment}"

    def _estimate(self, tokens: int) -> int:
        self.estimated += 1
        return self.calibration.tokens(tokens)

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
        return (await self._text(text))[0]

    async def _text(self, text: str) -> tuple[int, bool]:
        return await self._count(
            lambda client: tokens.count_text(client, self._tokenizer, text),
            seconds=COUNT_SECONDS,
            missing="The backend has no /tokenize endpoint.",
            estimate=lambda: estimate_tokens(text),
            cached=lambda: tokens.cached_text_count(self._tokenizer, text),
        )

    async def messages(self, messages: list[Message]) -> int:
        """The chat prompt's tokens, its template included."""
        counted, _by_tokenizer = await self._count(
            lambda client: tokens.count_messages(client, self._tokenizer, messages),
            seconds=COUNT_SECONDS * 2,
            missing="The backend has no /apply-template or /tokenize endpoint.",
            estimate=lambda: estimate_message_tokens(messages),
            cached=lambda: tokens.cached_messages_count(self._tokenizer, messages),
        )
        return counted

    async def excerpts(self, pages: Sequence[FrozenPage]) -> list[int]:
        """Each page's excerpt as counted (`_excerpt`), in tokens. The tokenizer's counts are
        kept under what an excerpt is made of (its label, trust and text) too, so a page
        counted before is not even rendered again (rendering is most of a cached count)."""
        known = [self._remembered(page) for page in pages]
        missing = [n for n, count in enumerate(known) if count is None]
        answers = await asyncio.gather(*(self._text(_excerpt(pages[n])) for n in missing))
        for n, (count, by_tokenizer) in zip(missing, answers, strict=True):
            known[n] = count
            if by_tokenizer:
                tokens.remember(self._tokenizer, "excerpt", _made_of(pages[n]), count)
        return [count or 0 for count in known]

    def _remembered(self, page: FrozenPage) -> int | None:
        if self._client is None or self._broken:
            return None
        count = tokens.cached(self._tokenizer, "excerpt", _made_of(page))
        if count is not None:
            self.counted += 1
            self.cached += 1
        return count

    async def _count(
        self,
        ask: Callable[[BackendClient], Awaitable[int | None]],
        *,
        seconds: float,
        missing: str,
        estimate: Callable[[], int],
        cached: Callable[[], int | None],
    ) -> tuple[int, bool]:
        """(the backend tokenizer's count, True) (the cache's when it counted the text
        before), or (once it failed, timed out or has no endpoint, which is recorded) (the
        estimate, False)."""
        if self._client is not None and not self._broken:
            remembered = cached()
            if remembered is not None:
                self.counted += 1
                self.cached += 1
                return remembered, True
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
                    return counted, True
                self._failed(missing)
        return self._estimate(estimate()), False

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


def _counted_by(counter: TokenCounter) -> str:
    if counter.counted:
        return "tokenizer, then estimate" if counter.estimated else "tokenizer"
    return "calibrated estimate" if counter.calibration.calibrated else "estimate"


def _counted(pages: Sequence[FrozenPage]) -> str:
    """`pages` rendered as counted: with COUNTING_NONCE (module docstring, 2)."""
    return render_packet_pages(pages, nonce=COUNTING_NONCE)


def _made_of(page: FrozenPage) -> str:
    """What a page's excerpt is rendered from (with COUNTING_NONCE): its label, its trust and
    its text."""
    return "\x1f".join((page_label(page), str(page.untrusted), page.origin, page.text))


def _excerpt(page: FrozenPage) -> str:
    """The page's excerpt as render_packet_pages writes it (without the preamble), as
    counted."""
    rendered = _counted([page])
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
        "counted_by": _counted_by(counter),
        "tokenizer": counter.tokenizer,
        "tokenizer_counts": counter.counted,
        "cached_counts": counter.cached,
        "estimates": counter.estimated,
        "fallback_reason": counter.fallback_reason,
    }
    if counter.calibration.calibrated:
        facts["calibration"] = {
            "scale": counter.calibration.scale,
            "calls": counter.calibration.calls,
            "margin": tokens.CALIBRATION_MARGIN,
        }
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
        whole = await counter.text(_counted(pages))
        if whole <= usable:
            return list(pages), whole, "whole packet"
    by_id = {page.pk: page for page in pages}
    order = [by_id[pk] for pk in dict.fromkeys(ranked) if pk in by_id]
    matched = {page.pk for page in order}
    order += [page for page in pages if page.pk not in matched]
    used = await counter.text(_counted([]))
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
        costs = await counter.excerpts(batch)
        counted += len(batch)
        for page, cost in zip(batch, costs, strict=True):
            # Joined to the others by a blank line (two newlines, one token or two).
            if used + cost + 2 <= usable:
                chosen.append((page, cost + 2))
                used += cost + 2
    while chosen:
        in_order = sorted((page for page, _ in chosen), key=lambda page: page.position)
        total = await counter.text(_counted(in_order))
        if total <= usable:
            return in_order, total, "ranked by full text search"
        # Over by some tokens: drop the lowest-ranked pages worth at least that many.
        excess = total - usable
        while chosen and excess > 0:
            excess -= chosen.pop()[1]
    return [], 0, "nothing fits"
