"""Running fake backends (lexweb_dev.fakebackend) for any cluster test.

Both serve on 127.0.0.1 at 5,000 tokens/s per stream, so tests are fast; change
`fake.settings` in a test to slow one down, queue, load or inject a fault. `llamacpp` is the
session's real llama.cpp server (tests/harness/llamacpp.py).
"""

from collections.abc import AsyncIterator

import pytest_asyncio

from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from tests.harness.llamacpp import llamacpp, tiny_gguf

__all__ = ["fake_llama", "fake_ollama", "llamacpp", "tiny_gguf"]


@pytest_asyncio.fixture
async def fake_llama() -> AsyncIterator[FakeBackend]:
    async with FakeBackend(FakeSettings(kind="llama_cpp", tokens_per_second=5000.0)) as fake:
        yield fake


@pytest_asyncio.fixture
async def fake_ollama() -> AsyncIterator[FakeBackend]:
    async with FakeBackend(FakeSettings(kind="ollama", tokens_per_second=5000.0)) as fake:
        yield fake
