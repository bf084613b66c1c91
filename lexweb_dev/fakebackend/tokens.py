"""The fake's tokenizer, chat template and replies.

Token counting rule, shared by llama-server's /tokenize and Ollama's prompt_eval_count so tests
can compute what a fake will report: a chat-template marker (`<|im_start|>`, `<|im_end|>`) is one
token, a newline is one token, and every run of other non-space characters is one token. The
ChatML template wraps each message as `<|im_start|>ROLE\\nCONTENT<|im_end|>\\n` (5 tokens plus the
content's words) and ends with `<|im_start|>assistant\\n` (3 tokens), so
`count_prompt_tokens(messages) == sum(words(content) + 5) + 3`. A last assistant message is
continued, not closed (llama-server's assistant prefill): `<|im_start|>assistant\nCONTENT`, 3
tokens plus its words, and no new turn after it.
"""

import re
import zlib
from collections.abc import Iterable, Mapping

VOCAB_SIZE = 151936
_TOKEN = re.compile(r"<\|[a-z_]+\|>|\n|(?:(?!<\|[a-z_]+\|>)\S)+")
# A reply token keeps its leading whitespace, so joining the pieces gives the reply back.
_REPLY_PIECE = re.compile(r"\s*\S+|\s+$")
_GIBBERISH = (
    "vant", "ump", "uckets", "Sebast", "Flake", "gol", "mult", "collect", "wan", "west",
    "struggle", "handle", "Arrange", "Travel", "obutton", "advising", "zet", "polished",
    "amt", "Herr", "compart", "years", "Clin", "Berk", "send", "quote", "lic", "Cap",
)  # fmt: skip


def text_pieces(text: str) -> list[str]:
    return _TOKEN.findall(text)


def count_text_tokens(text: str) -> int:
    return len(text_pieces(text))


def token_ids(text: str) -> list[int]:
    # crc32, not hash(): ids must not change between processes.
    return [zlib.crc32(piece.encode()) % VOCAB_SIZE for piece in text_pieces(text)]


def apply_template(messages: Iterable[Mapping[str, object]]) -> str:
    listed = list(messages)
    if listed and listed[-1].get("role") == "assistant":
        # Continued, as llama-server's assistant prefill does (and Ollama's templates): the last
        # assistant message is left open and no new turn starts.
        *before, last = listed
        return _turns(before) + f"<|im_start|>assistant\n{last.get('content', '')}"
    return _turns(listed) + "<|im_start|>assistant\n"


def _turns(messages: Iterable[Mapping[str, object]]) -> str:
    return "".join(
        f"<|im_start|>{message.get('role', '')}\n{message.get('content', '')}<|im_end|>\n"
        for message in messages
    )


def count_prompt_tokens(messages: Iterable[Mapping[str, object]]) -> int:
    return count_text_tokens(apply_template(messages))


def reply_pieces(reply: str | None, limit: int) -> tuple[list[str], str]:
    """The tokens to send and the finish reason: "stop" if the reply ended within `limit`
    tokens, "length" if the limit cut it (gibberish always runs to the limit)."""
    limit = max(limit, 0)
    if reply is None:
        words = [
            " " + _GIBBERISH[(n * 7 + n // len(_GIBBERISH)) % len(_GIBBERISH)] for n in range(limit)
        ]
        return words, "length"
    pieces = _REPLY_PIECE.findall(reply)
    if len(pieces) > limit:
        return pieces[:limit], "length"
    return pieces, "stop"
