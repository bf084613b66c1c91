"""What the clients ask of a backend for a stage's budget and chain of custody, against the
fake backends over HTTP and the recorded protocol: llama-server's /tokenize of plain text, and
Ollama's weights digest from /api/show (Ollama has no tokenizer endpoint)."""

import pytest

from apps.cluster.backends import LlamaCppClient, ModelNotFound, OllamaClient
from apps.cluster.backends.ollama import weights_sha256
from lexweb_dev.fakebackend import FakeBackend
from lexweb_dev.fakebackend.ollama import blob_digest
from lexweb_dev.fakebackend.tokens import count_text_tokens
from tests.cluster.test_fake_backend import LLAMA, OLLAMA, raw, recorded, recorded_request

REAL_WEIGHTS = "33a628c4f3cd8ab827b31a69bf1689b1c0969727c58817b174519fe05efa01b3"


@pytest.mark.asyncio
async def test_llama_server_counts_plain_text_as_its_tokenize_does(fake_llama: FakeBackend) -> None:
    client = LlamaCppClient(fake_llama.base_url)
    try:
        text = "<<<EXCERPT ab12 | ACME000014 | trusted>>>\nThe lease began.\n<<<END ab12>>>"
        assert await client.count_text_tokens(text) == count_text_tokens(text)
        assert await client.count_text_tokens("") == 0
        assert await client.model_file_sha256("tiny") is None
    finally:
        await client.aclose()


@pytest.mark.asyncio
async def test_the_fakes_tokenize_answers_the_recorded_exchange(fake_llama: FakeBackend) -> None:
    method, path, body = recorded_request(f"{LLAMA}/24_tokenize.txt")
    real = recorded(f"{LLAMA}/24_tokenize.txt")

    reply = await raw(fake_llama, method, path, body)

    assert (reply.status, reply.names()) == (real.status, real.names())
    fake_ids, real_ids = reply.json(), real.json()
    assert isinstance(fake_ids, dict) and isinstance(real_ids, dict)
    assert len(fake_ids["tokens"]) == len(real_ids["tokens"]) == 2


def test_the_weights_digest_is_read_from_the_recorded_show_not_the_manifest_digest() -> None:
    show = recorded(f"{OLLAMA}/05_show.txt").json()
    tags = recorded(f"{OLLAMA}/03_tags.txt").json()
    assert isinstance(show, dict) and isinstance(tags, dict)

    assert weights_sha256(show) == REAL_WEIGHTS
    assert tags["models"][0]["digest"] != REAL_WEIGHTS
    assert weights_sha256({"modelfile": "FROM tiny:latest\n", "details": {}}) is None
    assert weights_sha256({"modelfile": 3, "details": {"parent_model": "x/sha256-zz"}}) is None


@pytest.mark.asyncio
async def test_ollama_reports_the_weights_digest_and_cannot_count(
    fake_ollama: FakeBackend,
) -> None:
    client = OllamaClient(fake_ollama.base_url)
    try:
        assert await client.model_file_sha256("tiny") == blob_digest("tiny")
        assert await client.count_text_tokens("The lease began.") is None
        with pytest.raises(ModelNotFound):
            await client.model_file_sha256("nope")
    finally:
        await client.aclose()


@pytest.mark.asyncio
async def test_the_fakes_show_names_its_weights_blob_as_the_real_one_does(
    fake_ollama: FakeBackend,
) -> None:
    fake = (await raw(fake_ollama, "POST", "/api/show", b'{"model":"tiny"}')).json()
    real = recorded(f"{OLLAMA}/05_show.txt").json()
    assert isinstance(fake, dict) and isinstance(real, dict)

    def shape(modelfile: str) -> list[str]:
        return [line.split(" ", 1)[0] for line in modelfile.splitlines()]

    assert shape(fake["modelfile"])[:6] == shape(real["modelfile"])[:6]
    assert "/blobs/sha256-" in fake["modelfile"].splitlines()[4]
