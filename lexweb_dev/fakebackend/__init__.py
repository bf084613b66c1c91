"""A local fake of both LLM backends (llama.cpp `llama-server` and Ollama) for tests, the
benchmark and the demo. It replays the recorded protocols in ../shared/protocols over real HTTP on
127.0.0.1, at a configurable speed, with loading, queueing and injected faults.

    async with FakeBackend(FakeSettings(kind="llama_cpp", tokens_per_second=500)) as fake:
        client = LlamaCppClient(fake.base_url)

Token counting rule (what /tokenize and prompt_eval_count report): see `tokens`.
"""

from lexweb_dev.fakebackend.config import FakeSettings, Kind
from lexweb_dev.fakebackend.server import FakeBackend, Stats
from lexweb_dev.fakebackend.tokens import (
    apply_template,
    count_prompt_tokens,
    count_text_tokens,
    reply_pieces,
)

__all__ = [
    "FakeBackend",
    "FakeSettings",
    "Kind",
    "Stats",
    "apply_template",
    "count_prompt_tokens",
    "count_text_tokens",
    "reply_pieces",
]
