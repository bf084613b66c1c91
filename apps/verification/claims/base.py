"""The claim types and the span helper shared by the extractor's modules."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Kind = Literal[
    "record_cite", "not_a_record_cite", "case_citation", "statute", "date", "amount", "quote"
]


# Words a document's title may leave in lower case ("Notice of Default", "Letter to Voss"); a
# title's other words are its name (claims.record reads titles in cites, exhibits matches them).
TITLE_SMALL_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "at",
        "by",
        "for",
        "from",
        "in",
        "of",
        "on",
        "re",
        "the",
        "to",
        "with",
        "dated",
    ]
)


@dataclass(frozen=True)
class BatesRef:
    """One Bates label or a range of them: `prefix` + `first`..`last`, written with `digits`.

    A production that numbers documents, not pages, stamps each page with its document's
    number and a page suffix ("ABC000101.0002": page 2 of document ABC000101). `first_page`
    is the suffix written on `first` and `last_page` the one on `last` (None: no suffix, the
    whole document); `page_digits` is how many digits the suffix was written with."""

    prefix: str
    first: int
    last: int
    digits: int
    first_page: int | None = None
    last_page: int | None = None
    page_digits: int = 0

    @property
    def paged(self) -> bool:
        """Whether a page suffix was written on either end."""
        return self.first_page is not None or self.last_page is not None

    def labels(self) -> list[str]:
        """The labels named, as written (a suffixed one stands for its page only)."""
        out = [f"{self.prefix}{n:0{self.digits}d}" for n in range(self.first, self.last + 1)]
        if not self.paged or not out:
            return out
        width = self.page_digits
        if self.first == self.last and self.first_page is not None:
            low, high = self.first_page, self.last_page or self.first_page
            return [f"{out[0]}.{p:0{width}d}" for p in range(low, high + 1)]
        if self.first_page is not None:
            out[0] += f".{self.first_page:0{width}d}"
        if self.last_page is not None:
            out[-1] += f".{self.last_page:0{width}d}"
        return out


@dataclass(frozen=True)
class CaseCite:
    """A case citation; short forms, Id. and supra carry their full citation's fields.

    `resolved` is False for a short form, Id. or supra that could not be bound to a full
    citation in the draft (it never passes as verified). `pin` holds the pin's pages only
    ("813", "640-641"); the footnotes it names are `notes`. `court` is eyecite's courts-db id of
    the parenthetical's court; `court_text` the words of a full citation's parenthetical
    before its date ("S.D.N.Y." of "(S.D.N.Y. Mar. 3, 2020)"), None when it gives a year only.
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
    court_text: str | None = None  # the court as the parenthetical names it ("9th Cir.")
    # Footnotes the pin names ("813 n.4", "at p. 641, fn. 3", "813 nn.4-5"): (4,), (3,), (4, 5).
    notes: tuple[int, ...] = ()
    # The pin names paragraphs ("2019 IL App (1st) 181734, ¶ 29", "Id. ¶¶ 8-9"), as
    # public-domain citations are pinned: `pin` holds their numbers.
    paragraphs: bool = False


@dataclass(frozen=True)
class StatuteCite:
    """A statute or regulation: `code` as eyecite (reporters-db) names it ("U.S.C.", "Cal. Civ.
    Code", "N.Y. Gen. Bus. Law"), its `title` (or chapter) where the code has one, the
    `section`, and the subsections after it (`pin`, "(a)(1)").

    `short` is an Id. bound to a statute of the draft; `resolved` is False for an Id. that
    could not be bound (it never passes as verified)."""

    code: str
    title: str | None
    section: str
    pin: str | None
    year: int | None
    short: bool = False
    resolved: bool = True

    @property
    def label(self) -> str:
        head = f"{self.title} {self.code}" if self.title else self.code
        return f"{head} \u00a7 {self.section}{self.pin or ''}"


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
    statute: StatuteCite | None = None
    # A year-less date ("November 8", value "--11-08"): the years its sentence's full dates
    # make it (apps.verification.dates.context_years); () when any year will do.
    years: tuple[int, ...] = ()
    # A record cite that names its document rather than a Bates page: by exhibit number or
    # letter ("Ex. 3 at 2": "3") or by the document's name or title ("Subcontract at 3",
    # '"site-log.pdf" at 2': "Subcontract", "site-log.pdf"), as written. The checks resolve it
    # against the packet's documents (apps.verification.exhibits).
    exhibit: str | None = None
    title: str | None = None
    # An "Id." or "Ibid." that stands for a record cite: that cite as written ("Voss Dep.
    # 45:3-12", "Ex. 3 at 2"), which names the document where `text` ("Id. at 46:1") does not;
    # or a transcript cited by its designation ("1T45:19-21", claims.record) as the draft's
    # list of designations names it ("1T (Transcript of bench trial, March 5, 2024)").
    cited_as: str | None = None

    @property
    def designated(self) -> bool:
        """A transcript cited by its designation, not an Id. (see `cited_as`)."""
        return self.cited_as is not None and self.text[:1].isdigit()  # (an Id. is words)


# Unicode spaces that eyecite and the patterns below should read as a plain space. Each is one
# character, so replacing them keeps every offset.
ODD_SPACES = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)?")


class Spans:
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

    def within(self, start: int, end: int) -> list[tuple[int, int]]:
        """The held spans' parts inside [start, end), in order."""
        first = max(self._before(start + 1), 0)
        last = bisect.bisect_left(self._starts, end)
        parts = zip(self._starts[first:last], self._ends[first:last], strict=True)
        clipped = [(max(a, start), min(b, end)) for a, b in parts]
        return [(a, b) for a, b in clipped if a < b]

    def add(self, start: int, end: int) -> None:
        """Add a span that overlaps none already held."""
        i = bisect.bisect_left(self._starts, start)
        self._starts.insert(i, start)
        self._ends.insert(i, end)


# A party's series of exhibits, as an agency's record names them before "Exh." ("GC Exh. 7" the
# General Counsel's, "R Exh. 3" the respondent's, "Jt. Exh. 1" joint, "CP Exh. 2" the charging
# party's): one label form for the cite and the document ("GCX7", "RX3", "JX1", "CPX2").
_SERIES_LETTERS = {"gc": "GC", "cp": "CP", "jt": "J", "j": "J", "joint": "J", "r": "R", "resp": "R"}


def series_label(series: str, number: str) -> str | None:
    """ "GC", "7" -> "GCX7"; None for a word that names no series."""
    letters = _SERIES_LETTERS.get(series.lower().rstrip("."))
    return f"{letters}X{int(number)}" if letters and number.isdigit() else None
