"""Issue 29, requirement 5: the fake's tokenizer splits like a byte-pair vocabulary (digits one
by one, words into pieces), within 15% of the real tokenizer's counts on every prompt and text
recorded under ../shared/protocols (llama-server's `/tokenize`, `usage.prompt_tokens`,
`tokens_evaluated` and `n_prompt_tokens`; Ollama's `prompt_eval_count`), and the fake uses the
same function for /tokenize, the prompt tokens it reports and the pieces it streams."""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from lexweb_dev.fakebackend.tokens import (
    apply_template,
    count_prompt_tokens,
    count_text_tokens,
    reply_pieces,
    text_pieces,
    token_ids,
)

PROTOCOLS = Path(__file__).resolve().parents[2].parent / "shared" / "protocols"
TOLERANCE = 0.15
# The reported prompt size, in the order a response may carry them.
_COUNTS = (
    r'"prompt_tokens":(\d+)',
    r'"tokens_evaluated":(\d+)',
    r'"prompt_eval_count":(\d+)',
    r'"n_prompt_tokens":(\d+)',
)


@dataclass(frozen=True)
class Recorded:
    recording: str
    text: str  # what the server tokenized: the templated chat, or the raw prompt
    real: int


def _exchanges(path: Path) -> Iterator[tuple[str, dict[str, object], str]]:
    """(route, request body, response text) of each exchange of a recording."""
    text = path.read_text(errors="replace")
    for part in re.split(r"^#{3,4} REQUEST: ", text, flags=re.M)[1:]:
        route = part.split(maxsplit=2)[1]
        body = re.search(r"REQUEST BODY[^\n]*\n(.*?)\n#{3,4} ", part, flags=re.S)
        if body is None:
            continue
        try:
            request = json.loads(body.group(1))
        except ValueError:
            continue
        if isinstance(request, dict):
            yield route, request, part[body.end() :]


def _reported(response: str) -> int | None:
    for pattern in _COUNTS:
        found = re.search(pattern, response)
        if found:
            return int(found.group(1))
    return None


def _truncated(request: dict[str, object], real: int) -> bool:
    """Ollama's count of a prompt it cut at num_ctx (silently, 10_): not the prompt's size."""
    options = request.get("options")
    return isinstance(options, dict) and options.get("num_ctx") == real


def recorded_counts() -> list[Recorded]:
    found: list[Recorded] = []
    for path in sorted(PROTOCOLS.rglob("*.txt")):
        name = str(path.relative_to(PROTOCOLS))
        for route, request, response in _exchanges(path):
            if route == "/tokenize":
                ids = json.loads(response[response.index('{"tokens"') :].split("\n")[0])
                found.append(Recorded(name, str(request["content"]), len(ids["tokens"])))
                continue
            real = _reported(response)
            if real is None or _truncated(request, real):
                continue
            messages, prompt = request.get("messages"), request.get("prompt")
            if isinstance(messages, list) and messages:
                found.append(Recorded(name, apply_template(messages), real))
            elif isinstance(prompt, str) and route == "/api/generate":
                # Ollama puts a generate prompt into its template as a user message.
                templated = apply_template([{"role": "user", "content": prompt}])
                found.append(Recorded(name, templated, real))
            elif isinstance(prompt, str):
                found.append(Recorded(name, prompt, real))
    return found


RECORDED = recorded_counts()


def test_the_recordings_hold_counts_of_both_servers_digits_and_punctuation() -> None:
    """The walk finds what it should (a parser that found nothing would pass every check)."""
    names = {r.recording for r in RECORDED}
    assert len(RECORDED) >= 35
    assert any(n.startswith("llama-server/") for n in names)
    assert any(n.startswith("ollama/") for n in names)
    assert any(re.search(r"\d", r.text.replace("<|", "")) for r in RECORDED)
    assert any(r.real > 500 for r in RECORDED)


@pytest.mark.parametrize("case", RECORDED, ids=lambda r: f"{r.recording}:{r.real}")
def test_fake_counts_within_15_percent_of_the_real_tokenizer(case: Recorded) -> None:
    fake = count_text_tokens(case.text)

    assert abs(fake - case.real) <= TOLERANCE * case.real, (fake, case.real, case.text[:200])


def test_digits_are_one_token_each_and_punctuation_stands_apart() -> None:
    # Ollama counted 698 tokens for these 200 words (10e_): the vocabulary splits the digits.
    words = " ".join(f"word{n}" for n in range(200))
    assert count_prompt_tokens([{"role": "user", "content": words}]) == 698
    assert text_pieces("ADY0000123") == ["ADY", "0", "0", "0", "0", "1", "2", "3"]
    assert text_pieces("Hello there, how are you?") == [
        "Hello", " there", ",", " how", " are", " you", "?",
    ]  # fmt: skip
    assert text_pieces("json:") == ["json", ":"]


def test_words_break_into_pieces_of_bounded_length() -> None:
    assert text_pieces(" plaintiff") == [" plaintiff"]
    assert text_pieces(" indistinguishability") == [" indistingu", "ishability"]
    assert text_pieces(" PROMISSORY") == [" PRO", "MIS", "SOR", "Y"]
    assert text_pieces("Subject") == ["Subjec", "t"]
    assert text_pieces("McDonald") == ["Mc", "Donald"]
    assert count_text_tokens("<|im_start|>user\n") == 3


@pytest.mark.parametrize(
    "text",
    [
        "",
        "The lease began on 5 May 2022.\n\n  Exhibit A-12 (ADY0000017)",
        "合同约定 Договор naïve café 😀 §§ 1983 “quoted” — ¶ 12\t\r\n",
        "lone \ud800 surrogate \x00 NUL \u202e bidi \ufffe",
        "_" * 100 + "\n" * 9 + " " * 300 + "." * 40,
        "<|im_start|>system\n<|im_end|><|not_a_marker",
    ],
)
def test_pieces_join_back_into_the_text(text: str) -> None:
    pieces = text_pieces(text)

    assert "".join(pieces) == text
    assert all(pieces)
    assert len(token_ids(text)) == len(pieces)


@pytest.mark.slow
def test_a_long_text_is_counted_line_by_line() -> None:
    # 2 MB of prose and numbers; each line break joins the full stop before it (").\n").
    line = "The defendant paid $1,234.56 on 2022-05-02 (ADY0000123)."
    assert count_text_tokens(line) == 34

    assert count_text_tokens("\n".join([line] * 35_000)) == 35_000 * 34


@pytest.mark.asyncio
async def test_tokenize_usage_and_streamed_pieces_use_the_same_tokenizer() -> None:
    reply = "The note (ADY0000001) was signed on May 2, 2022; $45,000.00 is due."
    messages = [{"role": "user", "content": "When was the note signed, 2 May 2022?"}]
    settings = FakeSettings(kind="llama_cpp", tokens_per_second=5000.0, reply=reply)
    async with FakeBackend(settings) as fake, httpx.AsyncClient(base_url=fake.base_url) as http:
        tokens = (await http.post("/tokenize", json={"content": reply})).json()["tokens"]
        answer = await http.post("/v1/chat/completions", json={"messages": messages})

    usage = answer.json()["usage"]
    assert len(tokens) == count_text_tokens(reply) == usage["completion_tokens"]
    assert usage["prompt_tokens"] == count_prompt_tokens(messages)
    assert reply_pieces(reply, 1000) == (text_pieces(reply), "stop")
    assert answer.json()["choices"][0]["message"]["content"] == reply


@pytest.mark.asyncio
async def test_ollama_reports_the_same_prompt_count() -> None:
    messages = [{"role": "user", "content": "Summarise ADY0000001-ADY0000040, please."}]
    settings = FakeSettings(kind="ollama", tokens_per_second=5000.0, reply="Done.")
    async with FakeBackend(settings) as fake, httpx.AsyncClient(base_url=fake.base_url) as http:
        body = {"model": "tiny", "messages": messages, "stream": False}
        answer = (await http.post("/api/chat", json=body)).json()

    assert answer["prompt_eval_count"] == count_prompt_tokens(messages)
    assert answer["eval_count"] == count_text_tokens("Done.") == 2
