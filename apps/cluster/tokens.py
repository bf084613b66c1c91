"""Token counts of prompts and texts, for the context guard (services.dispatch) and evidence
budgets (drafting.pipeline.context): the deployment's own tokenizer where its backend has one,
remembered by text hash; a calibrated local estimate where it has none.

1. llama-server counts with the model's own tokenizer: `count_messages` (POST /apply-template,
   then /tokenize of the templated prompt) and `count_text` (/tokenize). Each answer is kept in
   `COUNTS`, a bounded LRU (COUNT_CACHE_ENTRIES) keyed by the tokenizer (the backend, its
   address and the model: counts differ between tokenizers) and a BLAKE2b hash of the text, so
   the same excerpt counted for every stage of a run, and for later runs on the same packet,
   costs one request. A caller may also keep a count under what its text was made of
   (`remember`/`cached`: an evidence excerpt under its page's label, trust and text, so that a
   cached excerpt is not even rendered). Nothing is cached for a backend that had no tokenizer
   (None), nor for one that is no registry row (an unsaved backend has no identity).
2. Ollama cannot count before a call (no tokenizer endpoint, and a generation to read
   prompt_eval_count would take a slot). Its counts are `estimate_tokens` times the
   deployment's `Calibration`: every Ollama call records the estimate of its prompt beside the
   prompt_eval_count Ollama reported (CallRecord.prompt_estimate_tokens, prompt_tokens); the
   scale is the largest ratio of the two over the deployment's latest CALIBRATION_CALLS
   completed calls, plus CALIBRATION_MARGIN (10%), never below CALIBRATION_FLOOR (0.5: a
   deployment whose recent reports were all small, prompts served from its cache, cannot talk
   the estimate down further) nor above CALIBRATION_CEILING. Until a deployment has such a
   call the plain estimate is used (scale 1, `calibrated` False). A truncated call (Ollama cut
   the prompt to num_ctx) does not count. Dispatch still checks Ollama's own count afterwards:
   a prompt that filled num_ctx is refused, never used cut.
3. `estimate_tokens` is a local rule, conservative for byte-pair vocabularies like Qwen2's
   (which splits digits one by one): a run of lower-case or mixed ASCII letters is a token per
   three letters, a run of capitals a token per two, and every digit, other character, line
   break and run of blank space a token. Over court orders, evidence pages, excerpts, tables
   and Bates lists it is 1.0-1.8 times Qwen2's count (0.75 on average).
"""

import hashlib
import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from apps.cluster.backends.base import BackendClient, Message

COUNT_CACHE_ENTRIES = 50_000
CALIBRATION_CALLS = 20
CALIBRATION_MARGIN = 0.10
CALIBRATION_FLOOR = 0.5
CALIBRATION_CEILING = 8.0
# Per message of the chat template, for estimates (role markers, newlines).
MESSAGE_OVERHEAD_TOKENS = 8

# A tokenizer: (backend id, its address, model name); None for a backend that is no registry
# row (unsaved), whose counts are not cached.
Tokenizer = tuple[int, str, str] | None


# --- 1. Counts by the deployment's tokenizer, cached ---------------------------------------


_Key = tuple[tuple[int, str, str], str, bytes]


def tokenizer_of(backend_id: int | None, base_url: str, model: str) -> Tokenizer:
    """The cache's name for a deployment's tokenizer: counts differ between models, and a
    backend given another address may serve another one."""
    return None if backend_id is None else (backend_id, base_url, model)


class CountCache:
    """Token counts by (tokenizer, kind, text hash): least recently used first out, at most
    `entries` of them. Safe to share between threads and event loops."""

    def __init__(self, entries: int = COUNT_CACHE_ENTRIES) -> None:
        self.entries = entries
        self.hits = 0
        self.misses = 0
        self._counts: OrderedDict[_Key, int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _Key | None) -> int | None:
        if key is None:
            return None
        with self._lock:
            count = self._counts.get(key)
            if count is None:
                self.misses += 1
                return None
            self._counts.move_to_end(key)
            self.hits += 1
            return count

    def put(self, key: _Key | None, count: int) -> None:
        if key is None:
            return
        with self._lock:
            self._counts[key] = count
            self._counts.move_to_end(key)
            while len(self._counts) > self.entries:
                self._counts.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._counts)


COUNTS = CountCache()


def _digest(text: str) -> bytes:
    # Lone surrogates (model text is cleaned, page text may not be) must hash, not raise.
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _text_key(tokenizer: Tokenizer, text: str) -> _Key | None:
    return None if tokenizer is None else (tokenizer, "text", _digest(text))


def _messages_key(tokenizer: Tokenizer, messages: Sequence[Message]) -> _Key | None:
    if tokenizer is None:
        return None
    canonical = json.dumps(
        [[m["role"], m["content"]] for m in messages], ensure_ascii=False, separators=(",", ":")
    )
    return (tokenizer, "chat", _digest(canonical))


def cached(tokenizer: Tokenizer, kind: str, made_of: str) -> int | None:
    """A count the caller kept with `remember` under `kind` and what the counted text was made
    of (an evidence excerpt: its page's label, trust and text, without rendering it)."""
    return COUNTS.get(None if tokenizer is None else (tokenizer, kind, _digest(made_of)))


def remember(tokenizer: Tokenizer, kind: str, made_of: str, count: int) -> None:
    """Keep the tokenizer's `count` of a text under `kind` and what the text was made of."""
    COUNTS.put(None if tokenizer is None else (tokenizer, kind, _digest(made_of)), count)


def cached_text_count(tokenizer: Tokenizer, text: str) -> int | None:
    """The count `count_text` remembers for `text`, if any; asks nothing."""
    return COUNTS.get(_text_key(tokenizer, text))


def cached_messages_count(tokenizer: Tokenizer, messages: Sequence[Message]) -> int | None:
    """The count `count_messages` remembers for `messages`, if any; asks nothing."""
    return COUNTS.get(_messages_key(tokenizer, messages))


async def count_text(client: BackendClient, tokenizer: Tokenizer, text: str) -> int | None:
    """`text` in the tokenizer's tokens (llama-server /tokenize), from the cache when it was
    counted before; None if the backend has no tokenizer. Raises what the client raises."""
    key = _text_key(tokenizer, text)
    cached = COUNTS.get(key)
    if cached is not None:
        return cached
    counted = await client.count_text_tokens(text)
    if counted is not None:
        COUNTS.put(key, counted)
    return counted


async def count_messages(
    client: BackendClient, tokenizer: Tokenizer, messages: Sequence[Message]
) -> int | None:
    """The chat prompt's tokens, its template included (llama-server /apply-template, then
    /tokenize), from the cache when it was counted before; None if the backend cannot count."""
    key = _messages_key(tokenizer, messages)
    cached = COUNTS.get(key)
    if cached is not None:
        return cached
    counted = await client.count_tokens(list(messages))
    if counted is not None:
        COUNTS.put(key, counted)
    return counted


# --- 2. Calibration of the estimate (Ollama) -------------------------------------------------


@dataclass(frozen=True)
class Calibration:
    """How much to scale estimates for one deployment (see the module docstring, 2)."""

    scale: float = 1.0
    calls: int = 0  # the calls it was learnt from; 0: not calibrated, the plain estimate

    @property
    def calibrated(self) -> bool:
        return self.calls > 0

    def tokens(self, estimate: int) -> int:
        return math.ceil(estimate * self.scale)

    def describe(self) -> str:
        if not self.calibrated:
            return "the local estimate (no earlier call to calibrate it from yet)"
        calls = "call" if self.calls == 1 else f"{self.calls} calls"
        return (
            f"the local estimate x{self.scale:.2f}, calibrated from the prompt tokens the "
            f"backend reported for its last {calls} (+{CALIBRATION_MARGIN:.0%})"
        )


def calibration_from(reports: Iterable[tuple[int, int]]) -> Calibration:
    """The calibration for (reported prompt tokens, estimate of that prompt) pairs, latest
    first; pairs with a zero on either side are skipped."""
    ratios = [reported / estimate for reported, estimate in reports if reported and estimate]
    if not ratios:
        return Calibration()
    scale = max(ratios) * (1 + CALIBRATION_MARGIN)
    scale = min(max(scale, CALIBRATION_FLOOR), CALIBRATION_CEILING)
    return Calibration(scale=round(scale, 4), calls=len(ratios))


# --- 3. The local estimate ---------------------------------------------------------------------

_ESTIMATE = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Za-z]+|[^\S\n]{2,}|\S|\n")


def estimate_tokens(text: str) -> int:
    """A conservative token count of `text` (see the module docstring, 3)."""
    total = 1
    for piece in _ESTIMATE.findall(text):
        first = piece[0]
        if "A" <= first <= "Z" and len(piece) > 1 and piece.isupper():
            total += (len(piece) + 1) // 2
        elif first.isascii() and first.isalpha():
            total += (len(piece) + 2) // 3
        else:
            total += 1
    return total


def estimate_message_tokens(messages: Sequence[Message]) -> int:
    return sum(estimate_tokens(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in messages) + 4
