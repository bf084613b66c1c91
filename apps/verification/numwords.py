"""English cardinal numbers written in words, read by the rules of the language (issue 28 req 4).

The grammar (pure, no Django):

- below a hundred: a unit ("one" .. "nine"), a teen ("ten" .. "nineteen"), a tens word
  ("twenty" .. "ninety"), or a tens word and a unit joined by a hyphen or a space
  ("eighty-four", "eighty four"); "zero" only stands alone;
- a group: a number below a hundred, or one (or "a") to ninety-nine followed by "hundred" and,
  optionally after "and", a number below a hundred ("one hundred and five", "twelve hundred",
  "twenty-five hundred");
- a number: groups each followed by a scale word ("thousand", "million", "billion",
  "trillion"), the scales strictly decreasing and each term smaller than the scale before it,
  then optionally a last group, optionally after "and" ("one thousand and five"); "a" stands
  for one before "hundred" or a scale ("a million");
- a decimal: a group, "point" and one or more digit words ("four point one", "two point
  five oh"), then optionally one scale word that ends the number ("four point one million").

Anything else is no number: "hundred hundred", "a trillion trillion", "twenty zero",
"million thousand". A number word inside another word ("someone", "often") is no number word.
In a transcript, the number of the next line between two words of a number is no part of it.
Budgets: a run of more than MAX_WORDS words, or a value of MAX_VALUE or more, is no number;
the scan is one pass of a regular expression with possessive repetition (linear time).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal

UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9,
}  # fmt: skip
TEENS = {
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
SCALES = {"thousand": 3, "million": 6, "billion": 9, "trillion": 12}
_DIGIT_WORDS = {**UNITS, "oh": 0}  # after "point" only

MAX_WORDS = 30  # a longer run of number words is no number (budget)
MAX_DECIMALS = 6
MAX_VALUE = 10**15  # a quadrillion or more is no amount anyone files

_VOCAB = sorted([*UNITS, *TEENS, *TENS, *SCALES, "hundred"], key=len, reverse=True)
_WORD = r"(?:" + "|".join(_VOCAB) + r")\b"
_AFTER_POINT = r"(?:" + "|".join(sorted(_DIGIT_WORDS, key=len, reverse=True)) + r")\b"
# A run: an optional "a" before hundred or a scale, number words joined by a hyphen, spaces or
# "and", and "point" with digit words. Possessive: a run is taken whole or not at all, never
# retried shorter (linear time). Case-insensitive where used.
# Between words: spaces, or a line break and the next line's number where a transcript numbers
# its lines ("four point one\n 5  million dollars").
GAP = r"(?:[ \t]*\n[ \t]*\d{1,2}[ \t]+|\s+)"
# A hyphen ending a line joins the words around it, over the next line's number too
# ("seventy-\n 8  eight cents").
LINE_BREAK = r"[ \t]*\n[ \t]*(?:\d{1,2}[ \t]+)?"
RUN = (
    r"(?<![\w-])(?:a\s+(?=(?:hundred|thousand|million|billion|trillion)\b))?"
    + _WORD
    + rf"(?:(?:\s*-(?:{LINE_BREAK}|\s*)|{GAP}(?:and{GAP})?)"
    + _WORD
    + rf"|{GAP}point(?:{GAP}"
    + _AFTER_POINT
    + r")++)*+"
)
_RUN = re.compile(RUN + r"(?![\w-])", re.IGNORECASE)
_TOKEN = re.compile(r"[a-z]+")


def words_of(run: str) -> list[str]:
    """The lowercased words of a run of number words (hyphens and spaces dropped)."""
    return _TOKEN.findall(run.lower())


def parse_words(words: list[str]) -> Decimal | None:
    """The number that the whole list of words is, or None (see the module's grammar)."""
    if not words or len(words) > MAX_WORDS:
        return None
    if words == ["zero"]:
        return Decimal(0)
    total = Decimal(0)
    last_scale: int | None = None
    i, n = 0, len(words)
    while i < n:
        found = _group(words, i)
        if found is None:
            return None
        value, i = found
        decimal = False
        if i < n and words[i] == "point":
            digits: list[str] = []
            i += 1
            while i < n and words[i] in _DIGIT_WORDS and len(digits) < MAX_DECIMALS + 1:
                digits.append(str(_DIGIT_WORDS[words[i]]))
                i += 1
            if not digits or len(digits) > MAX_DECIMALS:
                return None
            value = value + Decimal("0." + "".join(digits))
            decimal = True
        if i < n and words[i] in SCALES:
            scale = SCALES[words[i]]
            i += 1
            if last_scale is not None and scale >= last_scale:
                return None  # "a trillion trillion", "million thousand"
            term = value.scaleb(scale)
            if last_scale is not None and term >= Decimal(10) ** last_scale:
                return None  # "two million twelve hundred thousand"
            total += term
            last_scale = scale
            if decimal and i < n:
                return None  # "one point five million two hundred": the decimal ends it
            if i < n and words[i] == "and":
                i += 1
                if i == n:
                    return None
            continue
        if last_scale is not None and value >= Decimal(10) ** last_scale:
            return None
        total += value
        if i != n:
            return None  # "hundred hundred", "five six"
    if total >= MAX_VALUE:
        return None
    return total


def _below_hundred(words: list[str], i: int) -> tuple[int, int] | None:
    word = words[i] if i < len(words) else ""
    if word in TENS:
        value = TENS[word]
        if i + 1 < len(words) and UNITS.get(words[i + 1], 0) > 0:
            return value + UNITS[words[i + 1]], i + 2
        return value, i + 1
    if word in TEENS:
        return TEENS[word], i + 1
    if word in UNITS and word != "zero":
        return UNITS[word], i + 1
    return None


def _group(words: list[str], i: int) -> tuple[Decimal, int] | None:
    """A number below ten thousand written as one group ("twelve hundred", "one hundred and
    five", "a hundred", "eighty-four"), or "a" before a scale word (one)."""
    n = len(words)
    if words[i] == "zero" and i + 1 < n and words[i + 1] == "point":
        return Decimal(0), i + 1  # "zero point five million"
    if words[i] == "a":
        if i + 1 < n and words[i + 1] in SCALES:
            return Decimal(1), i + 1
        if i + 1 < n and words[i + 1] == "hundred":
            head: tuple[int, int] | None = (1, i + 1)
        else:
            return None
    else:
        head = _below_hundred(words, i)
    if head is None:
        return None
    value, i = head
    if i < n and words[i] == "hundred":
        value *= 100
        i += 1
        j = i + 1 if i < n and words[i] == "and" else i
        tail = _below_hundred(words, j)
        if tail is not None:
            value += tail[0]
            i = tail[1]
    return Decimal(value), i


def number_values(text: str) -> list[tuple[int, int, Decimal]]:
    """Every number written in words in `text` as (start, end, value), in order. A run that is
    no number as a whole is read as the numbers its parts between "and" are, when each is one
    ("between ten and twenty"); otherwise it gives nothing."""
    found: list[tuple[int, int, Decimal]] = []
    for match in _RUN.finditer(text):
        found.extend(_run_values(match.group(), match.start()))
    return found


def runs(text: str, start: int = 0, end: int | None = None) -> Iterator[re.Match[str]]:
    """The runs of number words in `text` (from `start`, up to `end`), each taken whole once
    (linear time); read one with `run_values`."""
    return _RUN.finditer(text, start, len(text) if end is None else end)


def run_values(match: re.Match[str]) -> list[tuple[int, int, Decimal]]:
    """The numbers of one run (`runs`), as `number_values` gives them."""
    return _run_values(match.group(), match.start())


def _run_values(run: str, offset: int) -> list[tuple[int, int, Decimal]]:
    words = words_of(run)
    if len(words) > MAX_WORDS:
        return []
    value = parse_words(words)
    if value is not None:
        return [(offset, offset + len(run), value)]
    out = []
    start = 0
    for part in re.finditer(rf"{GAP}and{GAP}|$", run, re.IGNORECASE):
        piece = run[start : part.start()]
        piece_value = parse_words(words_of(piece))
        if piece_value is None:
            return []
        out.append((offset + start, offset + part.start(), piece_value))
        start = part.end()
        if part.group() == "":
            break
    return out if len(out) > 1 else []


def to_words(number: int) -> str:
    """A whole number from 0 to below MAX_VALUE in words, US style ("one hundred five"), for
    tests and for the evaluation generator."""
    if not 0 <= number < MAX_VALUE:
        raise ValueError(f"{number} is out of range")
    if number == 0:
        return "zero"
    parts = []
    for word, scale in sorted(SCALES.items(), key=lambda s: -s[1]):
        chunk, number = divmod(number, 10**scale)
        if chunk:
            parts.append(f"{_group_words(chunk)} {word}")
    if number:
        parts.append(_group_words(number))
    return " ".join(parts)


def _group_words(number: int) -> str:
    hundreds, rest = divmod(number, 100)
    out = []
    if hundreds:
        out.append(f"{_name(hundreds)} hundred")
    if rest:
        out.append(_name(rest))
    return " ".join(out)


def _name(number: int) -> str:
    names = {v: k for k, v in {**UNITS, **TEENS, **TENS}.items()}
    if number in names:
        return names[number]
    tens, unit = divmod(number, 10)
    return f"{names[tens * 10]}-{names[unit]}"
