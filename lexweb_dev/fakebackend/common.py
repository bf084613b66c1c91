"""Helpers both fake servers use to read request bodies and write JSON like the real ones."""

import json
import secrets
import string
from collections.abc import Mapping

from lexweb_dev.fakebackend.config import FakeSettings
from lexweb_dev.fakebackend.tokens import count_prompt_tokens
from lexweb_dev.fakebackend.writer import demo_reply, prompt_of, smallest


def dumps(value: object) -> str:
    # Both servers write compact JSON with raw UTF-8 (a token such as "徽" is not escaped).
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def random_id(length: int) -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(length))


def prompt_tokens_of(messages: list[object]) -> int:
    return count_prompt_tokens(m for m in messages if isinstance(m, dict))


def as_int(value: object, default: int) -> int:
    """An integer field of a request; a missing, negative or non-integer value gives default."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return default
    return value


def reply_text(settings: FakeSettings, body: Mapping[str, object]) -> str | None:
    """What a generation request is answered: written from its prompt in demo-writer mode,
    else the configured reply; without one, the smallest value valid under the request's JSON
    schema if it has one (a real server's grammar holds even a random model to the schema, and
    the reply ends, "stop", once the value is complete), else None: gibberish to the limit.

    A request whose last message is the assistant's is a continuation (llama-server's and
    Ollama's assistant prefill): where the reply starts with that message, only the rest is
    answered, as a model continuing its own words would; the real servers stream only the new
    tokens too."""
    whole = _whole_reply(settings, body)
    prefill = assistant_prefill(body)
    if whole is not None and prefill and whole.startswith(prefill):
        return whole[len(prefill) :]
    return whole


def _whole_reply(settings: FakeSettings, body: Mapping[str, object]) -> str | None:
    if settings.demo_writer:
        return demo_reply(body, kind=settings.kind)
    if settings.reply is None:
        schema = prompt_of(body, kind=settings.kind).schema
        if schema is not None:
            return dumps(smallest(schema))
    return settings.reply


def assistant_prefill(body: Mapping[str, object]) -> str:
    """The content of a chat request's last message where that message is the assistant's."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return ""
    last = messages[-1]
    content = last.get("content")
    return content if last.get("role") == "assistant" and isinstance(content, str) else ""
