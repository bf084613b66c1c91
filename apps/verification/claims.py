"""Claims in a draft: record cites, case citations, dates, amounts and quotations, with offsets.

Pure functions, no Django. `extract_claims(text, bates_prefixes=...)` returns every checkable
claim of a draft with its character offsets (`text[claim.start:claim.end] == claim.text`) and
the offsets of its sentence. The order of work follows what can go wrong:

1. quotations first (their words are checked as a quotation, so nothing inside the marks is
   read as a record cite, date or amount of its own);
2. record cites (Bates numbers and ranges of the case's prefixes or of any PREFIX+digits label,
   "Ex. 3 at ACME000022", "Compl. ¶ 4", "Dkt. 12 at 3", "1 App. 24"), then whatever sits where a
   record cite belongs and is none ("RTX3060", "GPU 0001", "Draft v2", "the earlier summary");
3. case citations with eyecite, on the text with record cites and quotations blanked out (so
   "1 App. 24" is never a case), guarded (empty text, exceptions) and time-limited (the text goes
   to eyecite in bounded chunks while time remains; what is left after the limit is read by a
   plain reporter pattern and its citations are never resolved). eyecite is a candidate finder:
   an `Id.` whose nearest preceding cite is a record cite is not bound to a case unless the
   case is named again in between, and an unresolved short form, `Id.` or supra stays
   `resolved=False`;
4. dates and amounts outside all of the above.

A quotation of four or more words is a claim; a shorter quoted term only where a cite is given
for it (a record cite in its sentence, or an authority cited for it), and a defined term
(`("Northline")`, `(the "Agreement")`) never. Statutes that eyecite finds are not claims (the
claim kinds have none yet). `timeout_s` counts from the call: the work before eyecite is linear
in the text and eyecite gets what remains.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from apps.verification.amounts import amount_values
from apps.verification.dates import date_values

logger = logging.getLogger(__name__)

Kind = Literal["record_cite", "not_a_record_cite", "case_citation", "date", "amount", "quote"]


@dataclass(frozen=True)
class BatesRef:
    """One Bates label or a range of them: `prefix` + `first`..`last`, written with `digits`."""

    prefix: str
    first: int
    last: int
    digits: int

    def labels(self) -> list[str]:
        return [f"{self.prefix}{n:0{self.digits}d}" for n in range(self.first, self.last + 1)]


@dataclass(frozen=True)
class CaseCite:
    """A case citation; short forms, Id. and supra carry their full citation's fields.

    `resolved` is False for a short form, Id. or supra that could not be bound to a full
    citation in the draft (it never passes as verified).
    """

    volume: str
    reporter: str
    page: str
    pin: str | None
    name: str | None
    year: int | None
    court: str | None
    short: bool
    resolved: bool


@dataclass(frozen=True)
class Claim:
    kind: Kind
    start: int
    end: int
    text: str
    sentence: tuple[int, int]
    bates: tuple[BatesRef, ...] = ()
    pins: tuple[str, ...] = ()
    value: str | None = None
    quote: str | None = None
    citation: CaseCite | None = None


# Unicode spaces that eyecite and the patterns below should read as a plain space. Each is one
# character, so replacing them keeps every offset.
_ODD_SPACES = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)?")


class _Spans:
    """Disjoint character spans, sorted, with overlap and containment queries in O(log n)."""

    def __init__(self, spans: Sequence[tuple[int, int]] = ()) -> None:
        merged: list[list[int]] = []
        for a, b in sorted(s for s in spans if s[1] > s[0]):
            if merged and a < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self._starts = [a for a, _ in merged]
        self._ends = [b for _, b in merged]

    def _before(self, pos: int) -> int:
        """Index of the last span starting before `pos`, or -1."""
        return bisect.bisect_left(self._starts, pos) - 1

    def overlaps(self, start: int, end: int) -> bool:
        i = self._before(end)
        return i >= 0 and self._ends[i] > start

    def covers(self, start: int, end: int) -> bool:
        i = self._before(start + 1)
        return i >= 0 and self._starts[i] <= start and end <= self._ends[i]

    def contains(self, pos: int) -> bool:
        return self.covers(pos, pos + 1)

    def add(self, start: int, end: int) -> None:
        """Add a span that overlaps none already held."""
        i = bisect.bisect_left(self._starts, start)
        self._starts.insert(i, start)
        self._ends.insert(i, end)


# ---------------------------------------------------------------------------------------------
# Quotations


@dataclass(frozen=True)
class _Quote:
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


def _block_quotes(text: str) -> list[_Quote]:
    quotes: list[_Quote] = []
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
        quotes.append(_Quote(start, end, words.strip(), True))
    return quotes


def _inline_quotes(text: str, skip: _Spans) -> list[_Quote]:
    quotes: list[_Quote] = []
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
                if char != "”":
                    opener, open_at = char, pos
            elif char in _OPENERS[opener]:
                quotes.append(_make_quote(text, open_at, pos))
                opener = None
            else:  # a second opening mark: the first was stray
                opener, open_at = char, pos
    return [q for q in quotes if q.end > q.start]


def _make_quote(text: str, open_at: int, close_at: int) -> _Quote:
    start, end = open_at + 1, close_at
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return _Quote(start, end, text[start:end], False)


_TERM_CONNECTORS = frozenset(["of", "the", "and", "for", "a", "an", "in", "on", "to", "&"])


def _looks_like_a_term(words: str) -> bool:
    """A name a document gives something: a few words, capitalised, no sentence."""
    parts = words.split()
    if not parts or len(parts) > 6 or re.search(r"[.!?;:]$", words.strip()):
        return False
    return len(parts) == 1 or all(p[0].isupper() or p in _TERM_CONNECTORS for p in parts)


def _is_defined_term(text: str, quote: _Quote) -> bool:
    if not _looks_like_a_term(quote.quote):
        return False
    before = text[max(0, quote.start - 61) : quote.start - 1]
    match = _DEFINED_BEFORE.search(before)
    if match is None:
        return False
    if match.group().lstrip().startswith("("):
        return bool(_DEFINED_AFTER_PAREN.match(text[quote.end + 1 : quote.end + 10]))
    return True


def _quotes(text: str) -> list[_Quote]:
    blocks = _block_quotes(text)
    found = blocks + _inline_quotes(text, _Spans([(q.start, q.end) for q in blocks]))
    found.sort(key=lambda q: q.start)
    return found


# ---------------------------------------------------------------------------------------------
# Sentences

_ABBREVIATION_WORDS = """v vs no nos ex exs exh co mr mrs ms dr st id ibid
    cf e g i
    jan feb mar apr jun jul aug sep sept oct nov dec app supp cir ct dist fed civ crim
    proc evid stat ann rev para paras pp p art sec secs ch cl dkt ecf compl decl dep aff tr
    am ans mot opp br resp jr sr prof hon gen est approx dept univ assn natl intl ave blvd
    u s f al etc cal tex fla ill mass mich minn ohio or pa va wash wis colo conn del ga md
    mo nev ariz ark ind iowa kan ky la me miss mont neb okla tenn utah vt wyo"""
_ABBREVIATIONS = frozenset(_ABBREVIATION_WORDS.split())
_SENTENCE_END = re.compile(r"[.!?][\"\u201d\u2019')\]]*(?=\s+[\"\u201c\u2018]?[A-Z0-9])")
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


def _sentences(text: str, quotes: Sequence[_Quote]) -> list[tuple[int, int]]:
    inside = _Spans([(q.start, q.end) for q in quotes if not q.block])
    found: list[tuple[int, int]] = []
    for b_start, b_end in _blocks(text):
        block = text[b_start:b_end]
        start = 0
        for m in _SENTENCE_END.finditer(block):
            pos = b_start + m.start()
            if inside.contains(pos):
                continue
            head = block[start : m.start()]
            word = re.search(r"([A-Za-z]+)\.?$", head)
            if block[m.start()] == "." and word and word.group(1).lower() in _ABBREVIATIONS:
                continue
            if block[m.start()] == "." and (
                re.fullmatch(r"\s*(?:\d{1,3}|[A-Za-z]|[ivxlc]{1,5})", head)
                or re.search(r"(?:^|\s)[A-Z]$", head)
            ):
                continue  # "1." of a numbered paragraph; an initial "J. Smith"
            found.append(_trim(text, b_start + start, b_start + m.end()))
            start = m.end()
        found.append(_trim(text, b_start + start, b_end))
    return [s for s in found if s[1] > s[0]]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def sentences(text: str) -> list[tuple[int, int]]:
    """Offsets of the sentences of `text` (never split inside a quotation or after "v.")."""
    plain = _ODD_SPACES.sub(" ", text)
    return _sentences(plain, _quotes(plain))


# ---------------------------------------------------------------------------------------------
# Record cites

_PIN = re.compile(
    r"(?:,?\s*(?:at\s+)?(?P<para>¶¶?|paras?\.|paragraphs?)\s*(?P<pn>\d+(?:\s*[-\u2013]\s*\d+)?)"
    r"|\s+at\s+(?P<at>\d+(?::\d+)?(?:\s*[-\u2013]\s*\d+(?::\d+)?)?)(?!\s*[ap]\.?m\b|[\d:])"
    r"|:(?P<line>\d+(?:\s*[-\u2013]\s*\d+)?)"
    r"|,?\s+(?:at\s+)?(?P<pp>pp?\.)\s*(?P<pg>\d+(?:\s*[-\u2013]\s*\d+)?)"
    r"|\s+(?P<tr>\d+:\d+(?:\s*[-\u2013]\s*\d+(?::\d+)?)?))"
)
_EXHIBIT_BEFORE = re.compile(
    r"(?:\bEx(?:h(?:ibit)?)?s?\.?|\bExhibit|\bTab)\s+[A-Z0-9]{1,4}(?:-\d+)?,?\s+(?:at\s+)?$"
)
_GENERIC = re.compile(
    r"(?<![\w.-])(?P<prefix>[A-Z]{2,10}(?:[-_.][A-Z]{1,10})?[-_.]?)(?P<num>\d{3,12})(?![\w])"
)
# A lone label-like token used as a cite: "RTX 3060", "GPU-0001", "A100", "RTX3060Ti".
_JUNK = re.compile(r"[A-Z]{1,10}[\s_-]?\d{3,12}[A-Za-z]{0,3}")
_DOCKET = re.compile(
    r"(?<![\w])(?:Dkt|ECF|D\.E)\.?\s*(?:No\.?\s*)?\d+(?:\s*[-\u2013]\s*\d+)?(?![\w])"
)
_PLEADING = re.compile(
    r"(?<![\w])(?:[A-Z][a-z]+\s+)?(?:Am\.\s+)?(?:Complaint|Compl|Countercl|Answer|Ans|Petition|Pet|Mem|Mot|Opp['\u2019]?n|Reply|Decl|Aff"
    r"|Dep|Tr|Hr['\u2019]g\s+Tr|Resp|Br|Stip|Interrog)\.?(?=\s*(?:¶|at\s+\d|\d+:\d))"
)
_APPENDIX_BODY = (
    r"(?:App|J\.\s?A|E\.\s?R|S\.\s?A|C\.\s?A|R|Supp\.\s?App)\.\s*\d{1,5}"
    r"(?:\s*[-\u2013]\s*\d+)?(?![\w])"
)
_APPENDIX = re.compile(r"^(?:\d{1,2}\s+)?" + _APPENDIX_BODY)
# "1 App. 24" anywhere a cite can start (not "301 Or. App. 512": a reporter's "App." follows a
# word; the volume of an appendix cite follows a space, a bracket or a signal).
_APPENDIX_ANYWHERE = re.compile(
    r"(?:(?<=^)|(?<=[(\[;])|(?<=[(\[;,:]\s)|(?<=\b[Ss]ee\s)|(?<=\balso\s)|(?<=\b[Cc]f\.\s)"
    r"|(?<=\.\s))\d{1,2}\s+" + _APPENDIX_BODY,
    re.MULTILINE,
)
_EXHIBIT = re.compile(
    r"^(?:Ex(?:h(?:ibit)?)?s?\.|Exhibit)\s+(?:[A-Z]{1,2}|\d{1,3})(?:-\d+)?(?![\w])"
)
_CITE_POSITION = re.compile(
    # A parenthetical, or what follows a signal, within a paragraph (soft line breaks allowed).
    r"\((?P<paren>(?:[^()\n]|\n(?![ \t]*\n)){1,200})\)"
    r"|(?:(?<=\W)|^)(?:[Ss]ee(?:,?\s+also)?|[Cc]f\.|[Cc]iting|[Pp]er)[,:]?\s+"
    r"(?P<see>(?:[^.;:()\n]|\n(?![ \t]*\n)){1,120})"
)
_GENERATED = [
    re.compile(
        r"\b(?:lexweb|ChatGPT|GPT-?\d\w*|LLMs?|chatbot|assistant|(?:auto|machine|system|AI)"
        r"[- ]generated|auto-?summary)\b",
        re.IGNORECASE,
    ),
    re.compile(r"\bAI\b"),
    re.compile(r"\bv\.?\s?\d+(?:\.\d+)*\b|\bversion\s+\d+", re.IGNORECASE),
    re.compile(
        r"\b(?:earlier|prior|previous|preceding|last|initial|first|our|generated|model|model['\u2019]s"
        r"|system|system['\u2019]s|internal)\s+"
        r"(?:[\w.]+\s+){0,2}(?:draft|summary|brief|declaration|decl\.|memo(?:randum)?|version"
        r"|analysis|outline|chronology|timeline|output|report)s?\b",
        re.IGNORECASE,
    ),
    re.compile(r"\bdrafts?\b", re.IGNORECASE),
    re.compile(r"\bsummar(?:y|ies)\b(?!\s+judgment)", re.IGNORECASE),
]
_FISCAL_YEAR = re.compile(r"(?:FY|CY)[-_. ]?(?:19|20)\d\d")
_YEAR_END = re.compile(r"\b(?:1[6-9]|20)\d\d\s*$")


@dataclass
class _Cite:
    kind: Kind
    start: int
    end: int
    bates: tuple[BatesRef, ...] = ()
    pins: tuple[str, ...] = ()


def _pin_text(match: re.Match[str]) -> str:
    def bare(group: str) -> str:
        return re.sub(r"\s+", "", match.group(group))

    if match.group("para"):
        marks = "¶¶" if match.group("para") in ("¶¶", "paras.", "paragraphs") else "¶"
        return f"{marks} {bare('pn')}"
    if match.group("at"):
        return f"at {bare('at')}"
    if match.group("pp"):
        return f"{match.group('pp')} {bare('pg')}"
    if match.group("tr"):
        return bare("tr")
    return f":{bare('line')}"


def _pins_after(text: str, end: int) -> tuple[int, list[str]]:
    pins: list[str] = []
    while True:
        match = _PIN.match(text, end)
        if match is None:
            return end, pins
        pins.append(_pin_text(match))
        end = match.end()


_SEPARATORS = "-_. \u00a0"


def _bates_pattern(prefixes: Sequence[str]) -> tuple[re.Pattern[str], dict[str, str]] | None:
    """A pattern for the labels of `prefixes`, and the prefix each written form stands for.

    A drafter may drop or change the separator a prefix ends with ("ZEN0000014", "ZEN 0000014"
    for the prefix "ZEN-"): the label is the case's, written loosely.
    """
    canonical: dict[str, str] = {}
    for prefix in sorted({p for p in prefixes if p}, key=len):
        core = prefix.rstrip(_SEPARATORS) or prefix
        canonical.setdefault(core, prefix)
        canonical[prefix] = prefix
    if not canonical:
        return None
    cores = sorted({p.rstrip(_SEPARATORS) or p for p in canonical}, key=len, reverse=True)
    alternation = "|".join(re.escape(p) for p in cores)
    pattern = re.compile(
        rf"(?<![A-Za-z0-9])(?P<prefix>(?:{alternation})[-_. \u00a0]?)(?P<num>\d{{3,12}})(?!\d)"
    )
    return pattern, canonical


def _range_end(text: str, end: int, prefix: str, num: str) -> tuple[int, int] | None:
    """`(end, last)` when a range continues at `end`: "-16", " - ACME000016", " through ..."."""
    core = re.escape(prefix.rstrip(_SEPARATORS) or prefix)
    match = re.compile(
        r"\s*(?:[-\u2013\u2014]|\s(?:through|thru|to)\s)\s*"
        rf"(?:(?P<p>{core})[-_. \u00a0]?)?(?P<n>\d{{1,12}})(?!\d)"
    ).match(text, end)
    if match is None:
        return None
    tail = match.group("n")
    worded = re.match(r"\s*\s(?:through|thru|to)\s", match.group())
    if match.group("p") is None and worded and len(tail) != len(num):
        return None  # "ACME000014 to 16 pages" is no range
    last = int(tail) if len(tail) >= len(num) else int(num[: len(num) - len(tail)] + tail)
    if last < int(num):
        return None
    return match.end(), last


def _bates_cites(
    text: str,
    pattern: re.Pattern[str],
    kind: Kind,
    blocked: _Spans,
    canonical: dict[str, str] | None = None,
) -> list[_Cite]:
    cites: list[_Cite] = []
    for match in pattern.finditer(text):
        start, end = match.span()
        if blocked.overlaps(start, end):
            continue
        if cites and start < cites[-1].end:
            continue
        prefix, num = match.group("prefix"), match.group("num")
        if canonical is not None:
            written = prefix.replace("\u00a0", " ")
            prefix = canonical.get(written) or canonical[written.rstrip(_SEPARATORS) or written]
        first = last = int(num)
        ranged = _range_end(text, end, prefix, num)
        if ranged is not None:
            end, last = ranged
        end, pins = _pins_after(text, end)
        exhibit = _EXHIBIT_BEFORE.search(text, max(0, start - 40), start)
        if exhibit is not None:
            start = exhibit.start()
        cites.append(
            _Cite(kind, start, end, (BatesRef(prefix, first, last, len(num)),), tuple(pins))
        )
    return cites


def _is_generated(part: str) -> bool:
    return any(p.search(part) for p in _GENERATED)


def is_generated_reference(text: str) -> bool:
    """Whether a not-a-record-cite names the system's own work ("Draft v2", "the earlier
    summary", "lexweb case summary v4") rather than a token that is no Bates number."""
    return _is_generated(text)


def _record_cites(text: str, prefixes: Sequence[str], quotes: Sequence[_Quote]) -> list[_Cite]:
    blocked = _Spans([(q.start, q.end) for q in quotes])
    known = _bates_pattern(prefixes)
    cites = (
        _bates_cites(text, known[0], "record_cite", blocked, known[1]) if known is not None else []
    )
    taken = _Spans([(q.start, q.end) for q in quotes] + [(c.start, c.end) for c in cites])

    def free(start: int, end: int) -> bool:
        return not taken.overlaps(start, end)

    def add(cite: _Cite) -> None:
        cites.append(cite)
        taken.add(cite.start, cite.end)

    positions = [
        (m.start(g), m.end(g))
        for m in _CITE_POSITION.finditer(text)
        for g in ("paren", "see")
        if m.group(g) is not None
    ]
    in_positions = _Spans(positions)

    # Labels of no known prefix: with known prefixes, such a label where a record cite belongs is
    # not one of this case's record cites; without any, a long zero-padded label is taken as one.
    for cite in _bates_cites(text, _GENERIC, "record_cite", blocked):
        ref = cite.bates[0]
        if not free(cite.start, cite.end) or _FISCAL_YEAR.fullmatch(text[cite.start : cite.end]):
            continue
        in_position = in_positions.covers(cite.start, cite.end)
        if known is None and (in_position or ref.digits >= 6):
            add(cite)
        elif known is not None and in_position:
            add(_Cite("not_a_record_cite", cite.start, cite.end, (), cite.pins))

    # Court-record cites without Bates numbers, anywhere: "Dkt. 12 at 3", "Compl. ¶ 4".
    for pattern in (_DOCKET, _PLEADING):
        for match in pattern.finditer(text):
            end, pins = _pins_after(text, match.end())
            if pattern is _PLEADING and not pins:
                continue
            if free(match.start(), end):
                add(_Cite("record_cite", match.start(), end, (), tuple(pins)))

    for match in _APPENDIX_ANYWHERE.finditer(text):
        end, pins = _pins_after(text, match.end())
        if free(match.start(), end):
            add(_Cite("record_cite", match.start(), end, (), tuple(pins)))

    # Inside cite positions: "1 App. 24", "Ex. 3 at 5", and what is used as a cite but is none.
    for p_start, p_end in positions:
        content = text[p_start:p_end]
        offset = p_start
        for part in re.finditer(r"[^;]+", content):
            a, b = _trim(text, offset + part.start(), offset + part.end())
            if b <= a or not free(a, b):
                continue
            piece = text[a:b]
            record = _APPENDIX.match(piece) or _EXHIBIT.match(piece)
            if record is not None:
                end, pins = _pins_after(text, a + record.end())
                add(_Cite("record_cite", a, end, (), tuple(pins)))
                continue
            if _FISCAL_YEAR.fullmatch(piece):
                continue
            if _YEAR_END.search(piece) and not _is_generated(piece):
                continue  # "(D. Colo. 2021)", "(2019)": a case citation's parenthetical
            if _JUNK.fullmatch(piece) or _is_generated(piece):
                add(_Cite("not_a_record_cite", a, b))
    cites.sort(key=lambda c: c.start)
    return cites


# ---------------------------------------------------------------------------------------------
# Case citations

_CHUNK = 20_000


@dataclass
class _Found:
    start: int
    end: int
    cite: Any


def _chunks(text: str) -> list[tuple[int, int]]:
    chunks: list[tuple[int, int]] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + _CHUNK)
        if end < len(text):
            cut = text.rfind("\n\n", start + _CHUNK // 2, end)
            if cut == -1:
                cut = text.rfind("\n", start + _CHUNK // 2, end)
            if cut == -1:
                cut = text.rfind(" ", start + _CHUNK // 2, end)
            end = cut + 1 if cut != -1 else end
        chunks.append((start, end))
        start = end
    return chunks


def _shift(cite: Any, offset: int) -> None:
    for name in ("span_start", "span_end", "full_span_start", "full_span_end"):
        value = getattr(cite, name, None)
        if value is not None:
            setattr(cite, name, value + offset)
    meta = getattr(cite, "metadata", None)
    for name in ("pin_cite_span_start", "pin_cite_span_end"):
        value = getattr(meta, name, None)
        if value is not None:
            setattr(meta, name, value + offset)


def _claim_span(text: str, cite: Any, offset: int) -> tuple[int, int]:
    from eyecite.models import FullCaseCitation, ShortCaseCitation, SupraCitation

    start, end = cite.span()
    if isinstance(cite, FullCaseCitation | ShortCaseCitation | SupraCitation):
        full_start, full_end = cite.full_span()
        end = max(end, full_end)
        if isinstance(cite, FullCaseCitation):
            start = min(start, full_start)
        else:
            # eyecite's full span of a short form can reach back over the previous sentence:
            # start at the antecedent name written just before it, if any.
            guess = getattr(cite.metadata, "antecedent_guess", None)
            if guess:
                at = text.rfind(guess, max(0, start - offset - len(guess) - 8), start - offset)
                if at != -1:
                    start = at + offset
    return start, end


def _eyecite(text: str, deadline: float) -> tuple[list[_Found], int]:
    """Case-citation candidates in `text` and how far eyecite read before the deadline."""
    try:
        from eyecite import get_citations
        from eyecite.models import (
            FullCaseCitation,
            IdCitation,
            ShortCaseCitation,
            SupraCitation,
        )
    except ImportError:  # pragma: no cover - eyecite is a pinned dependency
        logger.warning("eyecite is not installed; case citations read by the fallback pattern")
        return [], 0
    kinds = (FullCaseCitation, ShortCaseCitation, SupraCitation, IdCitation)
    found: list[_Found] = []
    for start, end in _chunks(text):
        if time.monotonic() >= deadline:
            return found, start
        chunk = text[start:end]
        if not chunk.strip():
            continue
        try:
            cites = get_citations(chunk)
        except Exception:
            logger.exception("eyecite failed on characters %d-%d of a draft", start, end)
            continue
        for cite in cites:
            if not isinstance(cite, kinds):
                continue
            a, b = _claim_span(chunk, cite, 0)
            _shift(cite, start)
            found.append(_Found(a + start, b + start, cite))
    return found, len(text)


@functools.lru_cache(maxsize=1)
def _reporter_pattern() -> re.Pattern[str]:
    try:
        from reporters_db import REPORTERS
    except ImportError:  # pragma: no cover
        names: list[str] = []
    else:
        names = sorted(
            {
                name
                for key, reporters in REPORTERS.items()
                for reporter in reporters
                for name in [key, *reporter.get("editions", {}), *reporter.get("variations", {})]
            },
            key=len,
            reverse=True,
        )
    alternation = "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in names if n) or "$^"
    return re.compile(
        rf"(?<![\w])(?P<volume>\d{{1,4}})\s+(?P<reporter>{alternation})\s+(?P<page>\d{{1,5}})"
        rf"(?:,\s*(?P<pin>\d{{1,5}}))?(?![\w])|(?<![\w])Id\.(?:\s+at\s+(?P<idpin>\d{{1,5}}))?"
    )


def _fallback_cites(text: str, start: int) -> list[tuple[int, int, CaseCite]]:
    found = []
    for m in _reporter_pattern().finditer(text, start):
        if m.group("volume"):
            cite = CaseCite(
                m.group("volume"), re.sub(r"\s+", " ", m.group("reporter")), m.group("page"),
                m.group("pin"), None, None, None, False, False,
            )  # fmt: skip
        else:
            cite = CaseCite("", "", "", m.group("idpin"), None, None, None, True, False)
        found.append((m.start(), m.end(), cite))
    return found


def _name(full: Any) -> str | None:
    meta = full.metadata
    plaintiff, defendant = getattr(meta, "plaintiff", None), getattr(meta, "defendant", None)
    if plaintiff and defendant:
        return f"{plaintiff} v. {defendant}"
    return getattr(meta, "resolved_case_name", None) or plaintiff or defendant


_GENERIC_NAME_TEXT = (
    "in re the of and a an inc llc ltd co corp company state people united states city county "
    "ex rel matter estate"
)
_GENERIC_NAME_WORDS = frozenset(_GENERIC_NAME_TEXT.split())


def _name_words(full: Any) -> list[str]:
    words = []
    for party in (
        getattr(full.metadata, "plaintiff", None),
        getattr(full.metadata, "defendant", None),
    ):
        for word in re.findall(r"[A-Za-z][\w'\u2019-]+", party or ""):
            if word.lower() not in _GENERIC_NAME_WORDS:
                words.append(word)
                break
    return words


def _pin(cite: Any) -> str | None:
    pin = getattr(cite.metadata, "pin_cite", None)
    if not pin:
        return None
    pin = re.sub(r"^\s*at\s+", "", pin.strip())
    return pin or None


def _case_cite(cite: Any, full: Any | None) -> CaseCite:
    from eyecite.models import FullCaseCitation, ShortCaseCitation

    short = not isinstance(cite, FullCaseCitation)
    source = cite if full is None else full
    groups = getattr(source, "groups", {}) or {}
    year = getattr(source, "year", None) or getattr(source.metadata, "year", None)
    pin = _pin(cite)
    if isinstance(cite, ShortCaseCitation) and pin is None:
        pin = (cite.groups or {}).get("page")
    page = groups.get("page") or ""
    if full is None and isinstance(cite, ShortCaseCitation):
        page = ""  # the page of an unresolved short form is its pin, not the first page
    return CaseCite(
        volume=groups.get("volume") or "",
        reporter=re.sub(r"\s+", " ", groups.get("reporter") or ""),
        page=page,
        pin=pin,
        name=_name(source) if full is not None or not short else None,
        year=int(year) if year and str(year).isdigit() else None,
        court=getattr(source.metadata, "court", None),
        short=short,
        resolved=full is not None,
    )


def _case_citations(
    text: str, masked: str, record: Sequence[_Cite], deadline: float
) -> list[tuple[int, int, CaseCite]]:
    # Markdown emphasis (*Smith v. Jones*, _Id._ at 4) is no part of a citation: eyecite reads
    # the text without those marks and the spans are mapped back.
    keep = [i for i, char in enumerate(masked) if char not in _EMPHASIS]
    compact = "".join(masked[i] for i in keep) if len(keep) < len(masked) else masked

    def start_of(j: int) -> int:
        return keep[j] if j < len(keep) else len(masked)

    def end_of(j: int) -> int:
        return keep[j - 1] + 1 if j > 0 else 0

    found, read_to = _eyecite(compact, deadline)
    for item in found:
        item.start, item.end = start_of(item.start), end_of(item.end)
    result: list[tuple[int, int, CaseCite]] = []
    if found:
        from eyecite import resolve_citations
        from eyecite.models import FullCaseCitation, IdCitation

        full_of: dict[int, Any] = {}
        if time.monotonic() < deadline:
            try:
                resolved = resolve_citations([f.cite for f in found])
            except Exception:
                logger.exception("eyecite could not resolve the citations of a draft")
                resolved = {}
            for resource, cites in resolved.items():
                full = getattr(resource, "citation", None)
                if not isinstance(full, FullCaseCitation):
                    continue
                for cite in cites:
                    full_of[id(cite)] = full
        record_ends = sorted(c.end for c in record)
        last_case_end = -1
        for item in found:
            cite = item.cite
            full = full_of.get(id(cite))
            if isinstance(cite, FullCaseCitation):
                full = cite
            elif isinstance(cite, IdCitation) and full is not None:
                # The nearest preceding cite decides what "Id." means: a record cite after the
                # last case citation takes it, unless the case is named again after that record
                # cite.
                at = bisect.bisect_left(record_ends, item.start) - 1
                if at >= 0 and record_ends[at] > last_case_end:
                    between = text[record_ends[at] : item.start]
                    named = any(
                        re.search(rf"\b{re.escape(w)}\b", between) for w in _name_words(full)
                    )
                    if not named:
                        full = None
            result.append((item.start, item.end, _case_cite(cite, full)))
            last_case_end = item.end
    if read_to < len(compact):
        logger.warning(
            "eyecite stopped at the time limit after %d of %d characters; the rest is read by "
            "the reporter pattern and never resolved",
            read_to,
            len(compact),
        )
        for a, b, unresolved in _fallback_cites(compact, read_to):
            result.append((start_of(a), end_of(b), unresolved))
    return result


# ---------------------------------------------------------------------------------------------
# Extraction


_EMPHASIS = frozenset("*_`")


def _mask(text: str, spans: Sequence[tuple[int, int]]) -> str:
    chars = list(text)
    for a, b in spans:
        for i in range(a, b):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


def extract_claims(
    text: str, *, bates_prefixes: Sequence[str] = (), timeout_s: float = 5.0
) -> list[Claim]:
    """Every checkable claim in `text`, in order of position (see the module's docstring)."""
    if not text or not text.strip():
        return []
    if isinstance(bates_prefixes, str):
        bates_prefixes = (bates_prefixes,)
    deadline = time.monotonic() + max(timeout_s, 0.0)
    plain = _ODD_SPACES.sub(" ", text)
    quotes = _quotes(plain)
    record = _record_cites(plain, bates_prefixes, quotes)
    bounds = _sentences(plain, quotes)
    starts = [s for s, _ in bounds]

    def sentence(start: int, end: int) -> tuple[int, int]:
        if not bounds:
            return (start, end)
        i = max(bisect.bisect_right(starts, start) - 1, 0)
        a, b = bounds[i]
        # A claim that runs past its sentence's end (a cite split over a line) takes the rest.
        while b < end and i + 1 < len(bounds):
            i += 1
            b = bounds[i][1]
        return (min(a, start), max(b, end))

    def with_previous(start: int, end: int, cites: Sequence[tuple[int, int]]) -> tuple[int, int]:
        """A citation sentence ("Id. at 4.", "See X, 1 F.3d 2.") supports the sentence before."""
        first = bisect.bisect_left(cites, (start, -1))
        inside = itertools.takewhile(lambda c: c[0] < end, itertools.islice(cites, first, None))
        rest = _mask(plain[start:end], [(a - start, min(b, end) - start) for a, b in inside])
        if re.fullmatch(
            r"[\s.,;:()]*(?:(?:see|see also|cf\.|accord|but see)[\s,]*)?[\s.,;:()]*", rest, re.I
        ):
            i = bisect.bisect_right(starts, start) - 2
            if i >= 0:
                return (bounds[i][0], end)
        return (start, end)

    claims: list[Claim] = []
    short_quoted: list[tuple[_Quote, tuple[int, int]]] = []
    quote_spans: list[tuple[int, int]] = []
    record_sentences = {sentence(c.start, c.end) for c in record}
    for q in quotes:
        if _is_defined_term(plain, q):
            continue
        words = len(_WORD.findall(q.quote))
        if words == 0:
            continue
        span = _block_sentence(plain, bounds, starts, q) if q.block else sentence(q.start, q.end)
        if words < 4 and span not in record_sentences:
            short_quoted.append((q, span))  # a quoted term; a quotation only if a cite follows
            continue
        quote_spans.append((q.start, q.end))
        claims.append(Claim("quote", q.start, q.end, text[q.start : q.end], span, quote=q.quote))

    for c in record:
        claims.append(
            Claim(
                c.kind,
                c.start,
                c.end,
                text[c.start : c.end],
                sentence(c.start, c.end),
                c.bates,
                c.pins,
            )
        )

    masked = _mask(plain, [(c.start, c.end) for c in record] + [(q.start, q.end) for q in quotes])
    # A citation wrapped over lines is one citation: a soft line break reads as a space (not the
    # break before a blank line, a list item, a heading or a block quote).
    masked = re.sub(r"(?<!\n)\n(?![ \t]*(?:\n|[-*+\u2022>#][ \t]|\d{1,3}[.)][ \t]))", " ", masked)
    cases = _case_citations(plain, masked, record, deadline)
    case_spans = sorted((a, b) for a, b, _ in cases)
    case_sentences = _Spans()
    for start, end, cite in cases:
        span = with_previous(*sentence(start, end), case_spans)
        claims.append(Claim("case_citation", start, end, text[start:end], span, citation=cite))
        if not case_sentences.overlaps(*span):
            case_sentences.add(*span)
    # A short quoted term is a quotation of a source where an authority is cited for it.
    for q, span in short_quoted:
        if case_sentences.covers(q.start, q.end):
            quote_spans.append((q.start, q.end))
            claims.append(
                Claim("quote", q.start, q.end, text[q.start : q.end], span, quote=q.quote)
            )

    taken = _Spans(quote_spans + [(c.start, c.end) for c in record] + case_spans)

    def free(start: int, end: int) -> bool:
        return not taken.overlaps(start, end)

    values: list[tuple[Kind, list[tuple[int, int, str]]]] = [
        ("date", date_values(plain)),
        ("amount", amount_values(plain)),
    ]
    for kind, found in values:
        for start, end, value in found:
            if free(start, end):
                span = sentence(start, end)
                claims.append(Claim(kind, start, end, text[start:end], span, value=value))
    claims.sort(key=lambda c: (c.start, c.end))
    return _shared_sentences(claims)


def _shared_sentences(claims: list[Claim]) -> list[Claim]:
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


def _block_sentence(
    text: str, bounds: list[tuple[int, int]], starts: list[int], quote: _Quote
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


__all__ = [
    "BatesRef",
    "CaseCite",
    "Claim",
    "Kind",
    "extract_claims",
    "is_generated_reference",
    "sentences",
]
