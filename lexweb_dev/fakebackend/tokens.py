"""The fake's tokenizer, chat template and replies.

The tokenizer splits text the way a byte-pair vocabulary of about 150,000 tokens does (the
recordings under ../shared/protocols were made with Qwen2's), without a vocabulary. One
function, `text_pieces`, is used everywhere in the fake: llama-server's /tokenize, the prompt
tokens both servers report (`usage.prompt_tokens`, `prompt_eval_count`), the context checks,
and the pieces a reply is streamed in (so a reply's completion tokens are what /tokenize gives
for its text). Joining the pieces gives the text back.

1. Pre-tokenize as Qwen2 does (GPT-4's pattern): a chat-template marker (`<|im_start|>`) is one
   token; an English contraction (`'s`); a run of letters with at most one non-letter before
   it (a space, or a bracket or dash); each digit on its own (`2022` is 4 tokens, a Bates
   number `ADY0000123` is 3 + 7); a run of punctuation with an optional space before it and
   the line breaks after it; a run of whitespace.
2. Letters become pieces of bounded length, as a vocabulary learnt from text has them: a
   lower-case word after a space is one token up to 10 letters (` plaintiff`), a capitalised
   one up to 7 (` District`); a word that starts a line or follows punctuation has fewer
   merges (up to 6, the punctuation counted), and so has a Latin word with an accent; capitals
   in a row break every 3 letters (` PROMISSORY` is 4); a word breaks where its case changes
   (`McDonald`); the name after an `@` every 3 letters; a role name after a template marker
   is a word after a space. Lengths are in UTF-8 bytes; a script
   without case (Chinese) is a token a character. Other languages than English are rougher.
3. Punctuation: up to 3 characters a token (`").` is one), a run of one character repeated up to
   16 (`_____` signature lines); line breaks after it join its last token (`.\\n`).
4. Whitespace: a run of spaces is one token, however long; line breaks a token per two lines,
   the spaces between them included (` \\n \\n`); blank lines alone (`\\n\\n\\n`) one token.

On the legal texts lexweb sends (court orders, evidence pages, rendered excerpts with their
nonces, drafts, prompts, bank tables, Bates lists) this counts within about 10% of Qwen2's
own tokenizer (checked against llama.cpp's, 117 texts, 58,538 tokens: 0.99x in total), and it
is within 15% of Qwen2's count for every prompt and text recorded under ../shared/protocols
(tests/cluster/test_fake_tokenizer.py). The old rule (a token per run
of non-space characters) counted 2.3 times too few.

The ChatML template wraps each message as `<|im_start|>ROLE\\nCONTENT<|im_end|>\\n` (5 tokens
plus the content's) and ends with `<|im_start|>assistant\\n` (3 tokens), so
`count_prompt_tokens(messages) == sum(count_text_tokens(content) + 5) + 3` for contents that
do not start or end with whitespace or punctuation. A last assistant message is continued, not
closed (llama-server's assistant prefill): `<|im_start|>assistant\\nCONTENT`, and no new turn
after it.
"""

import zlib
from collections.abc import Iterable, Mapping

import regex

VOCAB_SIZE = 151936
# Chat-template markers (`<|im_start|>`), one token each.
_MARKER_SPLIT = regex.compile(r"(<\|[a-z_]+\|>)")
# Qwen2's pre-tokenizer (llama.cpp `LLAMA_VOCAB_PRE_TYPE_QWEN2`).
_PRE = regex.compile(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_CONTRACTION = regex.compile(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)")
# A word's parts where its case changes: "McDonald" is Mc + Donald, "USCourts" US + Courts.
_CASE_PARTS = regex.compile(r"\p{Lu}+(?=\p{Lu}\p{Ll})|\p{Lu}?\p{Ll}+|\p{Lu}+|[^\p{Lu}\p{Ll}]+")
# Blank space: spaces up to two line breaks (and the spaces between them), or spaces alone.
_SPACE_PIECE = regex.compile(r"[^\S\n]*\n+(?:[^\S\n]+\n+)?|[^\S\n]+")
# Longest piece, in UTF-8 bytes, of a word part (see the module docstring, 2).
LOWER_BYTES = 10
CAPITALISED_BYTES = 7
CAPITALS_BYTES = 3
BARE_BYTES = 6
UNCASED_BYTES = 4
HANDLE_BYTES = 3
PUNCTUATION_CHARS = 3
REPEATED_CHARS = 16

_GIBBERISH = (
    "vant", "ump", "uckets", "Sebast", "Flake", "gol", "mult", "collect", "wan", "west",
    "struggle", "handle", "Arrange", "Travel", "obutton", "advising", "zet", "polished",
    "amt", "Herr", "compart", "years", "Clin", "Berk", "send", "quote", "lic", "Cap",
)  # fmt: skip


def text_pieces(text: str) -> list[str]:
    """The tokens of `text`, as strings that join back into it."""
    pieces: list[str] = []
    # Markers first, as llama.cpp parses special tokens before it pre-tokenizes the text
    # between them (a full stop before `<|im_end|>` stays apart from it).
    for n, fragment in enumerate(_MARKER_SPLIT.split(text)):
        if n % 2:
            pieces.append(fragment)
        elif fragment:
            pieces += _fragment_pieces(fragment, after_marker=n > 0)
    return pieces


def _fragment_pieces(text: str, *, after_marker: bool) -> list[str]:
    pieces: list[str] = []
    for n, piece in enumerate(_PRE.findall(text)):
        if len(piece) == 1 or _CONTRACTION.fullmatch(piece):
            pieces.append(piece)
        elif piece[-1].isalpha():
            # A role name after a template marker is a whole word, as after a space.
            pieces += _word(piece, after_marker=after_marker and n == 0)
        elif piece.isspace():
            pieces += _SPACE_PIECE.findall(piece)
        else:
            pieces += _punctuation(piece)
    return pieces


def _word(piece: str, *, after_marker: bool = False) -> list[str]:
    """A run of letters, with the one space or other character the pre-tokenizer put before
    it (see the module docstring, 2)."""
    lead = "" if piece[0].isalpha() else piece[0]
    body = piece[len(lead) :]
    pieces: list[str] = []
    for n, part in enumerate(_CASE_PARTS.findall(body)):
        after_space = lead == " " or n > 0 or after_marker
        if n == 0 and lead not in ("", " "):
            # A bracket or dash before a word shares its first piece ("(a", "-based").
            part = lead + part
        pieces += _by_bytes(part, _bound(part, after_space=after_space))
    if lead == " ":
        pieces[0] = " " + pieces[0]
    return pieces


def _bound(part: str, *, after_space: bool) -> int:
    if part.startswith("@"):
        # A user or domain name of an e-mail address: no vocabulary word.
        return HANDLE_BYTES
    letters = [c for c in part if c.isalpha()]
    if letters and not any(c.isupper() or c.islower() for c in letters):
        return UNCASED_BYTES
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return CAPITALS_BYTES
    accented = not part.isascii() and any(c.isascii() for c in part)
    if not after_space or not part[0].isalpha() or accented:
        # Fewer merges: a word that starts a line or follows punctuation, or a Latin word with
        # an accent (the vocabulary's merges are mostly English).
        return BARE_BYTES
    return LOWER_BYTES if part.islower() else CAPITALISED_BYTES


def _by_bytes(text: str, size: int) -> list[str]:
    """`text` cut into pieces of at most `size` UTF-8 bytes (a longer character alone)."""
    pieces: list[str] = []
    current, used = "", 0
    for char in text:
        width = len(char.encode("utf-8", "surrogatepass"))
        if current and used + width > size:
            pieces.append(current)
            current, used = "", 0
        current += char
        used += width
    return [*pieces, current] if current else pieces


def _punctuation(piece: str) -> list[str]:
    """A run of punctuation, with its space before and its line breaks after (module
    docstring, 3)."""
    core = piece.rstrip("\r\n")
    breaks = piece[len(core) :]
    lead = " " if core.startswith(" ") else ""
    body = core[len(lead) :]
    size = REPEATED_CHARS if len(set(body)) == 1 else PUNCTUATION_CHARS
    pieces = [body[n : n + size] for n in range(0, len(body), size)] or [""]
    pieces[0] = lead + pieces[0]
    pieces[-1] += breaks
    return pieces


def count_text_tokens(text: str) -> int:
    return len(text_pieces(text))


def token_ids(text: str) -> list[int]:
    # crc32, not hash(): ids must not change between processes.
    return [
        zlib.crc32(piece.encode("utf-8", "surrogatepass")) % VOCAB_SIZE
        for piece in text_pieces(text)
    ]


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
    """The tokens to send (the tokenizer's pieces of the reply) and the finish reason: "stop"
    if the reply ended within `limit` tokens, "length" if the limit cut it (gibberish always
    runs to the limit; each of its words is one token)."""
    limit = max(limit, 0)
    if reply is None:
        words = [
            " " + _GIBBERISH[(n * 7 + n // len(_GIBBERISH)) % len(_GIBBERISH)] for n in range(limit)
        ]
        return words, "length"
    pieces = text_pieces(reply)
    if len(pieces) > limit:
        return pieces[:limit], "length"
    return pieces, "stop"
