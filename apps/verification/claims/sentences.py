"""Sentences: never split inside a quotation, after "v." or an abbreviation, or across a
paragraph, list item, heading or block-quote line."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from dataclasses import replace

from apps.verification.claims.base import ODD_SPACES, Claim, Spans
from apps.verification.claims.quotations import Quote, find_quotes

_ABBREVIATION_WORDS = """v vs no nos ex exs exh co mr mrs ms dr st id ibid
    cf e g i
    jan feb mar apr jun jul aug sep sept oct nov dec app supp cir ct dist fed civ crim
    proc evid stat ann rev para paras pp p art sec secs ch cl dkt ecf compl decl dep aff tr
    am ans mot opp br resp jr sr prof hon gen est approx dept univ assn natl intl ave blvd
    u s f al etc cal tex fla ill mass mich minn ohio or pa va wash wis colo conn del ga md
    mo nev ariz ark ind iowa kan ky la me miss mont neb okla tenn utah vt wyo"""
_ABBREVIATIONS = frozenset(_ABBREVIATION_WORDS.split())
# (a stop inside emphasis ends the sentence too: a run-in heading, "**5. The marks are
# similar.** Applicant chose ...", is no part of the sentence after it)
_SENTENCE_END = re.compile(
    r"[.!?](?:[\"\u201d\u2019')\]]|\*{1,3}|_{1,2})*(?=\s+[\"\u201c\u2018]?[A-Z0-9])"
)
# The word before a stop, read over at most this many characters: the longest abbreviation is
# shorter, and a longer word is none.
_WORD_CHARS = 12
_WORD_BEFORE = re.compile(r"(?<![\w'\u2019])([A-Za-z]+)\.?$")
# (the head's first character has nothing before it that counts: a head starts the block or
# after a space)
_INITIAL = re.compile(r"(?<!\S)[A-Z]$")
_PARAGRAPH_NUMBER = re.compile(r"\s*[*_]{0,3}(?:\d{1,3}|[A-Za-z]|[ivxlc]{1,5})")
_HARD_BREAK = re.compile(r"\n[ \t]*(?=\n)|\n(?=[ \t]*(?:[-*+•>#]|\d{1,3}[.)])[ \t])")


def _blocks(text: str) -> list[tuple[int, int]]:
    """Paragraphs, list items, headings and block-quote lines: sentences never cross them."""
    cuts = [0]
    for m in _HARD_BREAK.finditer(text):
        cuts.append(m.end())
    for m in re.finditer(r"^[ \t]*#{1,6}[ \t][^\n]*\n", text, re.MULTILINE):
        cuts.append(m.end())
    cuts.append(len(text))
    cuts = sorted(set(cuts))
    return [(a, b) for a, b in itertools.pairwise(cuts) if text[a:b].strip()]


def sentence_spans(text: str, quotes: Sequence[Quote]) -> list[tuple[int, int]]:
    inside = Spans([(q.start, q.end) for q in quotes if not q.block])
    found: list[tuple[int, int]] = []
    for b_start, b_end in _blocks(text):
        block = text[b_start:b_end]
        start = 0
        for m in _SENTENCE_END.finditer(block):
            pos = b_start + m.start()
            if inside.contains(pos):
                continue
            # (each read in place, over the head's last few characters: a hostile "sentence" of
            # thousands of abbreviations, "(Dkt. 4 at 2.) (Dkt. 5 at 3.) ...", costs no more
            # at its end than at its start)
            # (a possessive's "s" is no abbreviation: "Emberly's." ends a sentence)
            word = _WORD_BEFORE.search(block, max(start, m.start() - _WORD_CHARS), m.start())
            if block[m.start()] == "." and word and word.group(1).lower() in _ABBREVIATIONS:
                continue
            if block[m.start()] == "." and (
                _PARAGRAPH_NUMBER.fullmatch(block, start, m.start())
                or _INITIAL.search(block, max(start, m.start() - 2), m.start())
            ):
                continue  # "1." of a numbered paragraph; an initial "J. Smith"
            found.append(trim(text, b_start + start, b_start + m.end()))
            start = m.end()
        found.append(trim(text, b_start + start, b_end))
    return [s for s in found if s[1] > s[0]]


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def sentences(text: str) -> list[tuple[int, int]]:
    """Offsets of the sentences of `text` (never split inside a quotation or after "v.")."""
    plain = ODD_SPACES.sub(" ", text)
    return sentence_spans(plain, find_quotes(plain))


def shared_sentences(claims: list[Claim]) -> list[Claim]:
    """Claims whose sentences overlap (a block quote and its cite line, a citation sentence and
    the sentence it supports) get one sentence, the union, so that they are read together."""
    merged: dict[tuple[int, int], tuple[int, int]] = {}
    group: list[tuple[int, int]] = []
    end = -1
    for span in sorted({c.sentence for c in claims}):
        if group and span[0] >= end:
            union = (group[0][0], end)
            merged.update(dict.fromkeys(group, union))
            group = []
        group.append(span)
        end = max(end, span[1]) if len(group) > 1 else span[1]
    if group:
        merged.update(dict.fromkeys(group, (group[0][0], end)))
    return [
        c if merged[c.sentence] == c.sentence else replace(c, sentence=merged[c.sentence])
        for c in claims
    ]


def block_sentence(
    text: str, bounds: list[tuple[int, int]], starts: list[int], quote: Quote
) -> tuple[int, int]:
    """A block quote's sentence: the quote, the line introducing it and the cite that follows."""
    start, end = quote.start, quote.end
    i = bisect.bisect_right(starts, start) - 1
    if i >= 1 and text[bounds[i - 1][0] : bounds[i - 1][1]].rstrip().endswith(":"):
        start = bounds[i - 1][0]
    after = [s for s in bounds if s[0] >= quote.end]
    if after and re.match(r"[(\[]|Id\.|See\b", text[after[0][0] : after[0][1]]):
        end = after[0][1]
    return (start, end)
