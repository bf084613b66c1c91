"""Evidence context for a stage: the frozen pages that fit its token budget, rendered by the
evidence app's one prompt-rendering function (Bates labels, untrusted material wrapped).

1. Every frozen page of the run's packet, in position order.
2. If all of them fit the budget, all are sent. Otherwise pages are ranked by how many of the
   query's words (the instructions, and the text being worked on) they contain, weighted by the
   rarity of each word across the packet, and the best are taken while they fit; they are then
   sent in packet order.
3. The budget is counted in tokens estimated at one per three characters (conservative for the
   tokenizers of the models in use); the backend's own count is then checked by dispatch before
   the call (a prompt that does not fit is refused there, never cut).
"""

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from apps.evidence.models import FrozenPage
from apps.evidence.prompt import page_label, render_packet_pages

CHARS_PER_TOKEN = 3
# Delimiters and labels around each excerpt.
EXCERPT_OVERHEAD_TOKENS = 40
_WORD = re.compile(r"[a-z0-9]{3,}")


@dataclass(frozen=True)
class Evidence:
    text: str
    labels: list[str]
    pages_total: int


def estimate_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _rank(pages: Sequence[FrozenPage], query: str) -> list[FrozenPage]:
    wanted = _words(query)
    page_words = [_words(page.text) for page in pages]
    frequency = Counter(word for words in page_words for word in words & wanted)
    total = len(pages)

    def score(index: int) -> float:
        return sum(math.log(1 + total / frequency[word]) for word in page_words[index] & wanted)

    order = sorted(range(total), key=lambda index: (-score(index), pages[index].position))
    return [pages[index] for index in order]


def evidence_select(pages: Sequence[FrozenPage], *, query: str, budget_tokens: int) -> Evidence:
    """The pages to send (see the module docstring), rendered."""
    cost = {page.pk: estimate_tokens(page.text) + EXCERPT_OVERHEAD_TOKENS for page in pages}
    if sum(cost.values()) <= budget_tokens:
        chosen = list(pages)
    else:
        chosen, used = [], 0
        for page in _rank(pages, query):
            if used + cost[page.pk] <= budget_tokens:
                chosen.append(page)
                used += cost[page.pk]
        chosen.sort(key=lambda page: page.position)
    if not chosen:
        return Evidence(text="(No evidence fits this model's context.)", labels=[], pages_total=0)
    return Evidence(
        text=render_packet_pages(chosen),
        labels=[page_label(page) for page in chosen],
        pages_total=len(pages),
    )
