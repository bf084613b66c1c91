"""Running fake backends (lexweb_dev.fakebackend) for any cluster test.

Both serve on 127.0.0.1 at 5,000 tokens/s per stream, so tests are fast; change
`fake.settings` in a test to slow one down, queue, load or inject a fault.
"""

from collections.abc import AsyncIterator

import pytest_asyncio

from lexweb_dev.fakebackend import FakeBackend, FakeSettings


@pytest_asyncio.fixture
async def fake_llama() -> AsyncIterator[FakeBackend]:
    async with FakeBackend(FakeSettings(kind="llama_cpp", tokens_per_second=5000.0)) as fake:
        yield fake


@pytest_asyncio.fixture
async def fake_ollama() -> AsyncIterator[FakeBackend]:
    async with FakeBackend(FakeSettings(kind="ollama", tokens_per_second=5000.0)) as fake:
        yield fake
