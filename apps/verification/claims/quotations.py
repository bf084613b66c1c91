"""Direct quotations: block quotes, straight and curly marks, single marks; defined terms."""

from __future__ import annotations

import re
from dataclasses import dataclass

from apps.verification.claims.base import Spans


@dataclass(frozen=True)
class Quote:
    start: int  # the words inside the marks (block quotes: the text after the first '>')
    end: int
    quote: str
    block: bool


_BLOCK_LINE = re.compile(r"^[ \t]*>[ \t]?(.*)$", re.MULTILINE)
_OPENERS = {'"': '"”', "“": '”"', "„": '“”"'}
_DEFINED_BEFORE = re.compile(
    r"(?:\(\s*(?:(?:the|a|an|collectively|together|jointly|individually|each|hereinafter|herein"
    r"|referred\s+to\s+as|or|and)[,\s]+)*"
    r"|\b(?:hereinafter|referred\s+to\s+as|defined\s+as|the\s+term|called)[,\s]+)$",
    re.IGNORECASE,
)
_DEFINED_AFTER_PAREN = re.compile(r"^\s*(?:\)|,|;|\s(?:and|or)\s)")


def _block_quotes(text: str) -> list[Quote]:
    quotes: list[Quote] = []
    lines = list(_BLOCK_LINE.finditer(text))
    i = 0
    while i < len(lines):
        group = [lines[i]]
        while i + 1 < len(lines) and lines[i + 1].start() == group[-1].end() + 1:
            i += 1
            group.append(lines[i])
        i += 1
        parts = [m.group(1).strip() for m in group]
        words = " ".join(p for p in parts if p)
        if not words:
            continue
        start = group[0].start(1)
        end = group[-1].end(1)
        while end > start and text[end - 1].isspace():
            end -= 1
        while start < end and text[start].isspace():
            start += 1
        # A block quote wrapped in its own quotation marks: the words are inside them.
        if text[start] in '"“' and text[end - 1] in '"”' and end - start > 2:
            start += 1
            end -= 1
            words = words[1:-1]
        quotes.append(Quote(start, end, words.strip(), True))
    return quotes


def _inline_quotes(text: str, skip: Spans) -> list[Quote]:
    quotes: list[Quote] = []
    # Paragraphs: a quotation never runs over a blank line.
    for para in re.finditer(r"(?:[^\n]|\n(?![ \t]*\n))+", text):
        p_start, p_end = para.span()
        if skip.covers(p_start, p_end):
            continue
        opener: str | None = None
        open_at = 0
        for m in re.finditer(r"[\"\u201c\u201d\u201e\u2018\u2019]", para.group()):
            pos = p_start + m.start()
            char = m.group()
            if skip.contains(pos):
                continue
            if char in "\u2018\u2019":
                # Single marks: a quotation only outside a double one, opened after a space or
                # bracket and closed before a non-letter (apostrophes are everywhere).
                if (
                    opener is None
                    and char == "\u2018"
                    and (pos == 0 or not text[pos - 1].isalnum())
                ):
                    opener, open_at = char, pos
                elif (
                    opener == "\u2018"
                    and char == "\u2019"
                    and (pos + 1 >= len(text) or not text[pos + 1].isalpha())
                ):
                    quotes.append(_make_quote(text, open_at, pos))
                    opener = None
                continue
            if opener is None or opener == "\u2018":
                if char != "”" and not _only_closes(text, pos):
                    opener, open_at = char, pos
            elif char in _OPENERS[opener] and not _only_opens(text, pos):
                quotes.append(_make_quote(text, open_at, pos))
                opener = None
            else:  # a second opening mark: the first was stray
                opener, open_at = char, pos
    return [q for q in quotes if q.end > q.start]


def _only_closes(text: str, pos: int) -> bool:
    """A straight mark written against the word before it and followed by a space or the end
    ('emails" wi') can close a quotation but never open one: with none open, it is stray."""
    if text[pos] != '"' or pos == 0:
        return False
    if text[pos - 1].isspace() or text[pos - 1] in "([{\u2014\u2013":
        return False
    return pos + 1 >= len(text) or text[pos + 1].isspace()


def _only_opens(text: str, pos: int) -> bool:
    """A straight mark after a space and against the word after it (' "the tenant') can open a
    quotation but never close one: with one open, the first mark was stray."""
    if text[pos] != '"' or (pos > 0 and not text[pos - 1].isspace()):
        return False
    return pos + 1 < len(text) and (text[pos + 1].isalnum() or text[pos + 1] in "$§'\u2018")


def _make_quote(text: str, open_at: int, close_at: int) -> Quote:
    start, end = open_at + 1, close_at
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Quote(start, end, text[start:end], False)


_TERM_CONNECTORS = frozenset(["of", "the", "and", "for", "a", "an", "in", "on", "to", "&"])


def _looks_like_a_term(words: str) -> bool:
    """A name a document gives something: a few words, capitalised, no sentence."""
    parts = words.split()
    if not parts or len(parts) > 6 or re.search(r"[.!?;:]$", words.strip()):
        return False
    return len(parts) == 1 or all(p[0].isupper() or p in _TERM_CONNECTORS for p in parts)


def is_defined_term(text: str, quote: Quote) -> bool:
    if not _looks_like_a_term(quote.quote):
        return False
    before = text[max(0, quote.start - 61) : quote.start - 1]
    match = _DEFINED_BEFORE.search(before)
    if match is None:
        return False
    if match.group().lstrip().startswith("("):
        return bool(_DEFINED_AFTER_PAREN.match(text[quote.end + 1 : quote.end + 10]))
    return True


def find_quotes(text: str) -> list[Quote]:
    blocks = _block_quotes(text)
    found = blocks + _inline_quotes(text, Spans([(q.start, q.end) for q in blocks]))
    found.sort(key=lambda q: q.start)
    return found
