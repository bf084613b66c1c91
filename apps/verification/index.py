"""The frozen packet, indexed once for every check of a draft (pure, no Django).

`PacketIndex.build(pages)` reads each page once:

1. its words: normalised tokens (apps.verification.normalise), stemmed, into an inverted index
   stem -> pages (key terms, and the candidates of a quotation);
2. its dates and money amounts (apps.verification.dates / amounts, the extractor's own parsers)
   into value -> pages, and per page, with their spans;
3. its Bates labels into (prefix, number) -> page (a page-suffixed label, "ABC000101.0002",
   by its document's number; its pages by suffix are found on demand).

The rest is done on demand for the few pages a check looks at, and cached: token spans, the
body of a page (its running heads and footers, repeated on the pages of its document, and
deposition line numbers left out: they are not part of a quotation; a condensed transcript
sheet's mini-pages each in turn, apps.verification.sheets), and the opinions (a page
whose head prints a reporter citation; each page of an opinion is one reporter page, its
number printed alone on a line of the head).

A check therefore costs a few dictionary look-ups and the pages it names, never a scan of the
packet.
"""

import bisect
import functools
import gc
import math
import re
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from itertools import pairwise
from operator import methodcaller
from typing import TypeVar

from apps.verification import amounts as amount_parser
from apps.verification import dates as date_parser
from apps.verification import normalise as nz
from apps.verification import numwords
from apps.verification.claims import BatesRef
from apps.verification.sheets import MiniPage, sheet_pages

T = TypeVar("T")

OCR = "ocr"
# A label: its prefix, the separator after it, its number and, where the production numbers
# documents rather than pages, a page suffix (a dot and 1-6 digits after a number of at least
# three: "ABC000101.0002" is page 2 of ABC000101; "ABC-01-000123" has none).
_LABEL = re.compile(r"^(.*?)[\s\-_.]*(?:(\d+)\.(\d{1,6})|(\d+))$")
# "ROA.24-20317.500": a prefix carrying the appeal's docket number, then the page number (a
# page-suffix label's prefix is letters: "ABC000101.0002" is page 2 of ABC000101).
_DOCKET_IN_PREFIX = re.compile(r"^([A-Za-z]{2,10}[-_. ]\d{1,4}-\d{1,6})([-_.])(\d+)$")
_LINE_NUMBER = re.compile(r"^[ \t]*(\d{1,2})(?=[ \t]+\S)")
_NUMBERED_LINE = re.compile(r"(?m)^[ \t]*\d{1,2}[ \t]+\S")
_BLANK_LINE = re.compile(r"(?m)^[ \t]*(\d{1,2})[ \t]*$")  # a transcript's line, blank
_LONE_NUMBER = re.compile(r"^\s*\d{1,5}\s*$")
_EDGE_NUMBER = re.compile(
    r"^[ \t]*(?P<first>\d{1,5})(?:[ \t]{2,}|\t)\S.*$|^.*\S(?:[ \t]{2,}|\t)(?P<last>\d{1,5})[ \t]*$"
)
_BARE_MONEY = re.compile(
    r"(?<![\w.,$/:-])(?:\d{1,3}(?:,\d{3})+(?:\.\d{2})?|\d+\.\d{2})(?![\d%]|[.,]\d)"
)
# A figure after a minus sign that stands apart ("Payment  -41,207.33", a credit) is the amount
# a sentence states ("paid $41,207.33"); a hyphen inside a number ("22-3130487") is not. Its own
# pattern, led by the sign: most windows have none, and `_BARE_MONEY` stays as fast as it was.
_NEGATIVE_MONEY = re.compile(
    r"(?<!\S)-(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d{2})?|\d+\.\d{2})(?![\d%]|[.,]\d)"
)
RARE_TERMS = 8  # a quotation's candidate pages are found by its rarest words
WINDOW = 40  # characters around an anchor that a date or amount may take
_DIGITS = re.compile(r"\d+")
# A run of number words (and "and", "oh") and the white space or hyphens before each, capped.
_NUMBER_WORDS_AFTER = re.compile(
    r"(?:[\s-]+(?:and|oh|o|hundred|thousand|million|billion|"
    + "|".join(sorted(numwords.UNITS.keys() | numwords.TEENS.keys() | numwords.TENS.keys()))
    + r")(?!\w)){0,12}",
    re.IGNORECASE,
)
_LINE_END_HYPHEN = re.compile(r"-[ \t]*\r?\n")
# What each parser's patterns need (apps.verification.dates, .amounts), looked for the same
# way (same case folding): a month name starting a word, or digit, separator, digit; "USD" or
# "dollars" in any case ("$" is looked for with `in`).
_DATE_HINT = re.compile(
    r"(?<!\w)(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|\d[-/.]\d", re.IGNORECASE
)
_AMOUNT_HINT = re.compile(r"usd|dollars|eur|gbp|€|£", re.IGNORECASE)
# A bar standing alone, or just after an opening quotation mark or bracket ('"| swear').
_BAR_I = re.compile(r"(?<![^\s\"'(\[\u201c\u2018])\|(?!\S)")
_LOOKALIKE = "OoIlSB"
_DIGIT_FIX = str.maketrans("OoIlSB", "001158")
_FIGURE = re.compile(r"(?<![A-Za-z])[\dOoIlSB](?:[\dOoIlSB,./-]*[\dOoIlSB])?(?![A-Za-z])")
_MONTH_NAMES = (
    "",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
NEIGHBOURS = 2  # pages on each side whose heads and footers a page's are compared with
HEAD_LINES = 3  # lines at each end of a page that may be a running head or footer
_LETTERS_OR_DIGITS = re.compile(r"[^\W\d_]+|\d+")
_IN_TEXT_MARKER = re.compile(
    r"(?<![\w*])\[?\*{1,2}\d{1,5}\]?(?![\w*])|(?<=[\w.,;:\"'\u201d)])\[\d{1,3}\](?!\w)"
)
_YEAR_VOLUME = re.compile(r"(?:19|20)\d\d")  # a year where a volume stands: a series by year
_STAR = re.compile(r"(?<![\w*])\[?\*{1,2}(\d{1,5})\]?(?![\w*])")
STAR_STEP = 3  # a star marker names one of the next few reporter pages, or it is no marker
QUOTE_ACROSS = 6  # words: a quotation this long may run from one page onto the next
QUOTE_ACROSS_CANDIDATES = 50  # pages holding its rarest word, around which it is looked for
PRINTED_CANDIDATES = 200
MAX_OPINION_CANDIDATES = 200  # pages read to find the opinions a short form may name
# A reporter citation in an opinion's head: volume, reporter (a few abbreviated words), page.
_REPORTER_CITE = re.compile(
    r"(?<![\w.])(\d{1,4})\s+((?:[A-Z][A-Za-z0-9.']*\s?){1,5}?)\s*(\d{1,5})(?![\w-])"
)  # a token printed on more pages than this is no one document's
MAX_RANGE = 5000  # a Bates range longer than this is resolved label by label up to it


@dataclass(frozen=True)
class PageRecord:
    position: int
    document_id: int
    filename: str
    page_number: int
    bates: tuple[str, ...]
    text: str
    source: str
    ocr_confidence: float | None
    origin: str


@dataclass(frozen=True)
class Value:
    """A date (ISO) or an amount (cents as str) found on a page, with its span in the text."""

    start: int
    end: int
    value: str


@dataclass
class PageDetail:
    """A page's words with spans; `body` indexes the words that may be quoted."""

    words: list[str]
    spans: list[tuple[int, int]]
    body: list[int]
    body_words: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class QuoteHit:
    page: PageRecord
    span: tuple[int, int]  # in page.text
    exact: bool  # False: matched with OCR tolerance
    ratio: float  # share of the quotation's words found in order (1.0 when exact)


@dataclass(frozen=True)
class Opinion:
    document_id: int
    first_page: int
    pages: dict[int, PageRecord]  # reporter page -> packet page (where it starts)
    # Star-paged: reporter page -> its parts, (packet page index, start, end) in the text;
    # empty when each packet page is one reporter page.
    spans: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)

    @property
    def last_page(self) -> int:
        return max(self.pages)


def pages_label(index: "PacketIndex", pages: list[int]) -> str:
    """Pages by their labels: one label, or the first and last joined by a dash."""
    if len(pages) == 1:
        return index.label(pages[0])
    return f"{index.label(pages[0])}-{index.label(pages[-1])}"


def split_label(label: str) -> tuple[str, str, str | None] | None:
    """A label's prefix as printed (without the separator after it), its number's digits and
    its page suffix's digits (None without one): ("ABC", "000101", "0002") for
    "ABC000101.0002"; None for a label without a number."""
    match = _LABEL.match(label.strip())
    if not match:
        return None
    if match.group(2) is not None:
        docketed = _DOCKET_IN_PREFIX.match(label.strip())
        if docketed is not None:
            return docketed.group(1), docketed.group(3), None
        return match.group(1), match.group(2), match.group(3)
    return match.group(1), match.group(4), None


def docketed_prefix(label: str) -> str | None:
    """ "ROA.24-20317." for "ROA.24-20317.500": a prefix carrying a docket number, with the
    separator before the page number; None for any other label."""
    docketed = _DOCKET_IN_PREFIX.match(label.strip())
    return docketed.group(1) + docketed.group(2) if docketed is not None else None


def bates_key(label: str) -> tuple[str, int] | None:
    """("ACME", 14) for "ACME000014" / "ACME-000014" and for every page of a document numbered
    ACME000014 ("ACME000014.0002"); None for a label without a number."""
    parts = split_label(label)
    if parts is None:
        return None
    return _prefix_key(parts[0]), int(parts[1])


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _prefix_key(prefix: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", prefix).upper()


@dataclass
class PacketIndex:
    """The index of a packet's pages. Built by `build`, or loaded from its stored form
    (apps.verification.index_cache), whose `stems`, `postings`, `dates` and `amounts` are
    views that decode a page or a term when first asked for: the same values either way."""

    pages: list[PageRecord]
    stems: Sequence[AbstractSet[str]]
    postings: Mapping[str, Sequence[int]]
    dates: Sequence[list[Value]]
    amounts: Sequence[list[Value]]
    date_pages: Mapping[str, list[int]]
    amount_pages: Mapping[str, list[int]]
    bates: dict[tuple[str, int], int]
    _ocr_pages: frozenset[int] | None = None  # the pages whose text came from OCR
    _details: dict[int, PageDetail] = field(default_factory=dict)
    _repeats: dict[int, set[str]] = field(default_factory=dict)  # page -> edge line shapes
    # page -> its edge lines (start, end, line) with each one's shape (`normalise.shape`)
    _edges: dict[int, list[tuple[int, int, str, str]]] = field(default_factory=dict)
    _documents: dict[int, list[int]] = field(default_factory=dict)  # document -> page indexes
    _prefix_numbers: dict[str, list[int]] = field(default_factory=dict)  # prefix -> numbers
    # (prefix key, number) -> the document's pages by suffix, [(suffix, page index)], sorted:
    # made when a suffixed label is first looked up.
    _suffixed: dict[tuple[str, int], list[tuple[int, int]]] | None = None
    _month_day_pages: dict[str, list[int]] | None = None  # "--MM-DD" -> pages (value_pages)
    _opinions: dict[tuple[str, ...], object] = field(default_factory=dict)  # look-ups, cached
    # What the checks read from the packet once and again for many claims (a transcript's
    # lines, an opinion's notes and reporter pages), by the deriving module's key: `derived`.
    _derived: dict[Hashable, object] = field(default_factory=dict)

    def derived(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()`'s value, made once for this index and `key` and kept while the index
        lives (the checks' reading of a document that many claims cite; the pages do not
        change under an index, so neither does what is read from them)."""
        if key not in self._derived:
            self._derived[key] = make()
        return self._derived[key]  # type: ignore[return-value]  # stored by `make` for `key`

    def date_order_of(self, page: int) -> str | None:
        """The order the document of `page` writes its numeric dates in, where it tells one
        (`dates.document_order`; None: the deployment's)."""
        document = self.pages[page].document_id
        return self.derived(
            ("date order", document),
            lambda: date_parser.document_order(
                self.pages[p].text for p in self.document_pages(document)
            ),
        )

    def stem_table(self) -> dict[str, str]:
        """A word -> `normalise.stem(word)` table kept with the index, that the checks'
        readings of its documents (`derived`) share: a packet's documents use mostly the same
        words, which are stemmed once, not once per transcript or opinion."""
        return self.derived("stem table", dict)

    # -- building -------------------------------------------------------------------------

    @classmethod
    def build(cls, pages: Sequence[PageRecord]) -> "PacketIndex":
        """Index `pages` (a frozen packet in packet order)."""
        # Millions of small objects and no cycles among them: the cyclic collector would
        # walk the growing heap again and again (the build went superlinear without this).
        enabled = gc.isenabled()
        gc.disable()
        try:
            return cls._build(pages)
        finally:
            if enabled:
                gc.enable()

    @classmethod
    def _build(cls, pages: Sequence[PageRecord]) -> "PacketIndex":
        stem_cache: dict[str, str] = {}
        postings: defaultdict[str, list[int]] = defaultdict(list)
        date_pages: defaultdict[str, list[int]] = defaultdict(list)
        amount_pages: defaultdict[str, list[int]] = defaultdict(list)
        all_stems: list[frozenset[str]] = []
        all_dates: list[list[Value]] = []
        all_amounts: list[list[Value]] = []
        orders = _document_orders(pages)
        for i, page in enumerate(pages):
            page_stems, found_dates, found_amounts = _read_page(
                page, stem_cache, orders.get(page.document_id)
            )
            all_stems.append(page_stems)
            all_dates.append(found_dates)
            all_amounts.append(found_amounts)
            # Appending `i` to each term's list without a Python loop: a million and a half
            # appends on 10,000 pages, the largest share of the build when written as a loop.
            deque(map(methodcaller("append", i), map(postings.__getitem__, page_stems)), 0)
            for value in {v.value for v in found_dates}:
                date_pages[value].append(i)
            for value in {v.value for v in found_amounts}:
                amount_pages[value].append(i)
        return cls(
            pages=list(pages),
            stems=all_stems,
            postings=dict(postings),
            dates=all_dates,
            amounts=all_amounts,
            date_pages=dict(date_pages),
            amount_pages=dict(amount_pages),
            bates=bates_table(pages),
        )

    # -- the three look-ups (a bench peer replaces them with scans) ---------------------

    def bates_lookup(self, prefix_key: str, number: int) -> int | None:
        """The page labelled `prefix_key` + `number` (prefix as `bates_key` makes it)."""
        return self.bates.get((prefix_key, number))

    def pages_with_term(self, term: str) -> Sequence[int]:
        """The pages holding `term` (a stem), in packet order."""
        return self.postings.get(term, ())

    def indexed_as_written(self, index: int) -> bool:
        """Whether the page's terms are the words of its text as a reading of any run of it
        (a transcript's line) finds them, so that a run's words are among `pages_with_term`'s
        answers: not an OCR page (indexed as `ocr_read` reads it), nor one with a hyphen ending
        a line (its word indexed whole across it), nor one with characters outside ASCII
        (folded and normalised first)."""
        page = self.pages[index]
        return page.source != OCR and page.text.isascii() and not _LINE_END_HYPHEN.search(page.text)

    def ocr_pages_with_term(self, term: str) -> list[int]:
        """The OCR pages holding `term` (a stem), in packet order."""
        if self._ocr_pages is None:
            self._ocr_pages = frozenset(i for i, p in enumerate(self.pages) if p.source == OCR)
        if not self._ocr_pages:
            return []
        ocr = self._ocr_pages
        return [i for i in self.pages_with_term(term) if i in ocr]

    def value_pages(self, kind: str, value: str) -> Sequence[int]:
        """The pages holding a date (`kind` "date", ISO) or an amount (cents), in order. A
        year-less date ("--11-08") is held by the pages of any date of that month and day."""
        if kind == "date" and date_parser.is_month_day(value):
            return self._month_days().get(value, ())
        table = self.date_pages if kind == "date" else self.amount_pages
        return table.get(value, ())

    def _month_days(self) -> dict[str, list[int]]:
        """A year-less date ("--MM-DD") -> the pages holding a date of that month and day
        (made when first asked for, in one pass over the packet's distinct dates)."""
        if self._month_day_pages is None:
            found: defaultdict[str, set[int]] = defaultdict(set)
            for value, pages in self.date_pages.items():
                found["--" + value[-5:]].update(pages)
            self._month_day_pages = {k: sorted(v) for k, v in found.items()}
        return self._month_day_pages

    # -- Bates ----------------------------------------------------------------------------

    def bates_indexes(self, ref: BatesRef) -> tuple[list[int], list[int]]:
        """(indexes of the pages the ref names that are in the packet, numbers not found).

        A number of a production that numbers documents names all its document's pages; a
        page suffix on the ref's first (last) number names the pages from (up to) that one. A
        suffix naming no page of its document counts its number as not found
        (`page_suffix_gap` says why); on a number stamped without suffixes, ".1" is its page."""
        prefix = _prefix_key(ref.prefix)
        found: list[int] = []
        missing: list[int] = []
        last = min(ref.last, ref.first + MAX_RANGE) if ref.last >= ref.first else ref.first
        for number in range(ref.first, last + 1):
            index = self.bates_lookup(prefix, number)
            if index is None:
                missing.append(number)
                continue
            low = ref.first_page if number == ref.first else None
            high = ref.last_page if number == ref.last else None
            document = self.suffixed_pages(prefix, number, index)
            if not document:
                if {low, high} <= {None, 1}:
                    found.append(index)
                else:
                    missing.append(number)
                continue
            suffixes = {suffix for suffix, _ in document}
            if (low is not None and low not in suffixes) or (
                high is not None and high not in suffixes
            ):
                missing.append(number)
            found.extend(
                i
                for suffix, i in document
                if (low is None or suffix >= low) and (high is None or suffix <= high)
            )
        if ref.last > last:
            missing.append(ref.last)
        return found, missing

    def suffixed_pages(self, prefix_key: str, number: int, index: int) -> list[tuple[int, int]]:
        """The pages of the document numbered `prefix_key` + `number` whose labels carry a
        page suffix, as (suffix, page index) in suffix order; [] when the label of `index` (the
        page the number was looked up to) has none."""
        page = self.pages[index]
        if not any("." in label for label in page.bates):
            return []
        if self._suffixed is None:
            table: dict[tuple[str, int], list[tuple[int, int]]] = {}
            for i, record in enumerate(self.pages):
                for label in record.bates:
                    if "." not in label:
                        continue
                    parts = split_label(label)
                    if parts is not None and parts[2] is not None:
                        key = (_prefix_key(parts[0]), int(parts[1]))
                        table.setdefault(key, []).append((int(parts[2]), i))
            for pages in table.values():
                pages.sort()
            self._suffixed = table
        return self._suffixed.get((prefix_key, number), [])

    def page_suffix_gap(self, ref: BatesRef) -> str | None:
        """Why a page suffix of `ref` names no page: "page .0009 of ABC000101, which has 4
        pages"; None when each suffix it names is a page of its document (or its number is not
        in the packet at all: that is another finding)."""
        prefix = _prefix_key(ref.prefix)
        for number, page in ((ref.first, ref.first_page), (ref.last, ref.last_page)):
            if page is None:
                continue
            index = self.bates_lookup(prefix, number)
            if index is None:
                continue
            document = self.suffixed_pages(prefix, number, index)
            suffixes = [suffix for suffix, _ in document] or [1]
            if page in suffixes:
                continue
            label = next(
                (lb for lb in self.pages[index].bates if bates_key(lb) == (prefix, number)),
                self.label(index),
            )
            parts = split_label(label)
            name = label if parts is None or parts[2] is None else label.rsplit(".", 1)[0]
            written = f".{page:0{ref.page_digits}d}" if ref.page_digits else f".{page}"
            if not document:
                return f"page {written} of {name}, a page stamped without page suffixes"
            return f"page {written} of {name}, which has {_plural(len(document), 'page')}"
        return None

    def pages_for_bates(self, ref: BatesRef) -> list[PageRecord] | None:
        """The pages `ref` names, in order; None when any of them is not in the packet."""
        found, missing = self.bates_indexes(ref)
        if missing or not found:
            return None
        return [self.pages[i] for i in found]

    def bates_span(self, prefix: str) -> tuple[str, str] | None:
        """The first and last label of the packet with this prefix (for messages)."""
        key = _prefix_key(prefix)
        if not self._prefix_numbers:
            for p, n in self.bates:
                self._prefix_numbers.setdefault(p, []).append(n)
        numbers = self._prefix_numbers.get(key)
        if not numbers:
            return None
        high = max(numbers)
        last = self.bates[(key, high)]
        document = self.suffixed_pages(key, high, last)
        if document:
            last = document[-1][1]  # the last page of a document numbered with page suffixes
        return self.pages[self.bates[(key, min(numbers))]].bates[0], self.pages[last].bates[-1]

    def label(self, index: int) -> str:
        page = self.pages[index]
        return page.bates[0] if page.bates else f"{page.filename} p.{page.page_number}"

    # -- words ----------------------------------------------------------------------------

    def document_frequency(self, term: str) -> int:
        """How many pages hold `term`: a loaded index counts its postings without reading
        them (a common word's run thousands of pages long)."""
        count = getattr(self.postings, "count", None)  # index_cache.Postings.count
        if count is not None:
            return int(count(term))
        return len(self.pages_with_term(term))

    def idf(self, term: str) -> float:
        return math.log((1 + len(self.pages)) / (1 + self.document_frequency(term))) + 1.0

    def has_term(self, index: int, term: str) -> bool:
        """`term` (a stem) on the page; on an OCR page also one OCR slip away."""
        if term in self.stems[index]:
            return True
        if self.pages[index].source != OCR or len(term) < 5:
            return False
        return any(nz.close_words(term, other) for other in self.stems[index])

    def pages_with_terms(self, terms: Iterable[str], *, minimum: int) -> Counter[int]:
        """How many of `terms` each page holds, for pages holding at least `minimum`."""
        counts: Counter[int] = Counter()
        for term in set(terms):
            for index in self.pages_with_term(term):
                counts[index] += 1
        return Counter({i: n for i, n in counts.items() if n >= minimum})

    def detail(self, index: int) -> PageDetail:
        """The page's words with spans and its quotable body (cached)."""
        cached = self._details.get(index)
        if cached is None:
            cached = self._details[index] = self._make_detail(index)
        return cached

    def _make_detail(self, index: int) -> PageDetail:
        page = self.pages[index]
        words, spans = nz.token_spans(ocr_read(page.text) if page.source == OCR else page.text)
        # The body: every word but those starting inside a skipped span (a few lines), cut
        # out by position.
        starts = [s for s, _ in spans]
        skipped = self._skipped_spans(index)
        # A condensed transcript sheet: its mini-pages' headers and line numbers (also of lines
        # with no words) are no part of a quotation.
        minis = sheet_pages(page.text)
        if minis:
            skipped += [mini.header for mini in minis if mini.header]
            skipped += [(line.start, line.span[0]) for mini in minis for line in mini.lines]
            skipped.sort()
        body: list[int] = []
        kept = 0
        for skip_start, skip_end in skipped:
            first = max(kept, bisect.bisect_left(starts, skip_start))
            body.extend(range(kept, first))
            kept = max(kept, bisect.bisect_left(starts, skip_end))
        body.extend(range(kept, len(words)))
        if minis:
            body = _sheet_order(body, starts, minis)
        return PageDetail(words, spans, body, [words[k] for k in body])

    def _skipped_spans(self, index: int) -> list[tuple[int, int]]:
        """Character spans of running heads, footers and line numbers on the page."""
        page = self.pages[index]
        repeated = self._repeated_shapes(index)
        skip: list[tuple[int, int]] = []
        for start, end, line, line_shape in self._edge_shaped(index):
            if line_shape in repeated or _LONE_NUMBER.match(line) or _is_page_footer(line_shape):
                skip.append((start, end))
        # Star-page markers ("*457", "[*457]") and bracketed footnote calls ("costs.[4]") sit
        # inside the opinion's sentences and are no part of a quotation.
        # Each has a star or an opening bracket: a page with neither has none.
        if "*" in page.text or "[" in page.text:
            skip.extend(m.span() for m in _IN_TEXT_MARKER.finditer(page.text))
        # A deposition page: most lines start with their line number (a line may hold its
        # number alone: a blank line of testimony, "13", where the answer ended above).
        numbered_text = len(_NUMBERED_LINE.findall(page.text))
        if numbered_text >= 2 and numbered_text + len(_BLANK_LINE.findall(page.text)) >= 5:
            content = [ln for ln in _lines(page.text) if ln[2].strip()]
            numbered = [
                (s, m)
                for s, _, ln in content
                if (m := _LINE_NUMBER.match(ln) or _BLANK_LINE.match(ln))
            ]
            if len(numbered) >= len(content) // 2:
                skip.extend((s + m.start(1), s + m.end(1)) for s, m in numbered)
        skip.extend(margin_count(page.text))
        return sorted(skip)

    def _repeated_shapes(self, index: int) -> set[str]:
        """Shapes of the edge lines of the pages next to this one in its document (two on
        each side): a running head or footer recurs there."""
        document = self.document_pages(self.pages[index].document_id)
        at = document.index(index)
        shapes: set[str] = set()
        for other in document[max(0, at - NEIGHBOURS) : at + NEIGHBOURS + 1]:
            if other != index:
                shapes |= self._edge_shapes(other)
        return shapes

    def _edge_shapes(self, index: int) -> set[str]:
        cached = self._repeats.get(index)
        if cached is None:
            cached = self._repeats[index] = {s for *_, s in self._edge_shaped(index) if s}
        return cached

    def _edge_shaped(self, index: int) -> list[tuple[int, int, str, str]]:
        """The page's edge lines (`_edge_lines`), each with its shape (cached: a page's are
        read for its own quotable body and for its neighbours')."""
        cached = self._edges.get(index)
        if cached is None:
            lines = _edge_lines(self.pages[index].text)
            cached = self._edges[index] = [(a, b, ln, nz.shape(ln)) for a, b, ln in lines]
        return cached

    def document_pages(self, document_id: int) -> list[int]:
        """The document's page indexes in page order."""
        if not self._documents:
            for i, page in enumerate(self.pages):
                self._documents.setdefault(page.document_id, []).append(i)
            for pages in self._documents.values():
                pages.sort(key=lambda i: self.pages[i].page_number)
        return self._documents.get(document_id, [])

    def document_names(self) -> dict[int, str]:
        """Each document's file name, by document id."""
        if not self._documents:
            self.document_pages(-1)
        return {d: self.pages[pages[0]].filename for d, pages in self._documents.items()}

    def printed_on(self, text: str) -> tuple[int, tuple[int, int]] | None:
        """The first page whose text prints `text` (its words in order, any separators
        between them: "DEF 004411", "DEF-004411") and the span there; None when no page does.
        Only the pages holding its rarest word are read."""
        # Letters and digits apart ("DEF004411" as "def", "004411"): a page may print them
        # joined or apart, and its words are indexed as printed.
        words = [w for token in nz.token_list(text) for w in _LETTERS_OR_DIGITS.findall(token)]
        if not words or len(words) > 8:
            return None
        rarest = min(words, key=lambda w: self.document_frequency(nz.stem(w)))
        holders = sorted(
            {*self.pages_with_term(nz.stem(rarest)), *self.pages_with_term("".join(words))}
        )
        if not holders or len(holders) > PRINTED_CANDIDATES:
            return None
        pattern = re.compile(
            r"(?<![A-Za-z0-9])"
            + r"[\s\-_./#:]*".join(re.escape(w) for w in words)
            + r"(?![A-Za-z0-9])",
            re.IGNORECASE,
        )
        for page in holders:
            found = pattern.search(nz.fold(self.pages[page].text))
            if found is not None:
                return page, found.span()
        return None

    # -- quotations -----------------------------------------------------------------------

    def find_quote(
        self, segments: Sequence[Sequence[str]], *, within: Iterable[int] | None = None
    ) -> QuoteHit | None:
        """Where the quotation's segments (its words between ellipses, in order) stand on one
        page's body, verbatim; OCR pages also with one slip per long word. `within` limits
        the search to some pages (a record cite's)."""
        words = [w for segment in segments for w in segment]
        if not words:
            return None
        terms = {nz.stem(w) for w in words}
        candidates = self._quote_candidates(terms, within)
        for index in candidates:
            span = self._match_segments(index, segments)
            if span is not None:
                exact = self._match_segments(index, segments, fuzzy=False) is not None
                return QuoteHit(self.pages[index], span, exact, 1.0)
        if len(words) >= QUOTE_ACROSS:
            return self._across_pages(words, within)
        return None

    def _across_pages(self, words: list[str], within: Iterable[int] | None) -> QuoteHit | None:
        """A quotation that runs from the end of one page's body onto the start of the next
        page of its document (verbatim, read through an ellipsis as one run); the hit is on
        the page where it starts. Only the two pages around each page holding its rarest word
        are considered, and only a pair holding all of its words between them is read."""
        terms = {nz.stem(w) for w in words}
        rare = self.rarest(terms, 1)
        if not rare:
            return None
        holders = self.pages_with_term(rare[0])
        if within is not None:
            allowed = set(within)
            holders = [p for p in holders if p in allowed]
        if len(holders) > QUOTE_ACROSS_CANDIDATES:
            return None
        tried: set[tuple[int, int]] = set()
        for index in holders:
            document = self.document_pages(self.pages[index].document_id)
            at = document.index(index)
            for first, second in ((at, at + 1), (at - 1, at)):
                if first < 0 or second >= len(document):
                    continue
                pair = (document[first], document[second])
                if pair in tried:
                    continue
                tried.add(pair)
                if not all(t in self.stems[pair[0]] or t in self.stems[pair[1]] for t in terms):
                    continue
                hit = self._split_run(pair, words)
                if hit is not None:
                    return hit
        return None

    def _split_run(self, pair: tuple[int, int], words: list[str]) -> QuoteHit | None:
        head = self.detail(pair[0]).body_words
        tail = self.detail(pair[1]).body_words
        for cut in range(1, len(words)):
            if head[len(head) - cut :] == words[:cut] and tail[: len(words) - cut] == words[cut:]:
                detail = self.detail(pair[0])
                begin = detail.spans[detail.body[len(head) - cut]][0]
                end = detail.spans[detail.body[-1]][1]
                return QuoteHit(self.pages[pair[0]], (begin, end), True, 1.0)
        return None

    def _quote_candidates(self, terms: set[str], within: Iterable[int] | None) -> list[int]:
        """Pages that may hold the quotation: those with all of its rarest words, then OCR
        pages with most of them (OCR may have misread some)."""
        if within is not None:
            return list(within)
        rare = self.rarest(terms, RARE_TERMS)
        if not rare:
            return []
        # The rarest word's pages, narrowed by each next word's presence on them (a page's
        # terms are a set: no common word's thousands of pages are listed).
        exact = set(self.pages_with_term(rare[0]))
        for term in rare[1:]:
            if not exact:
                break
            exact = {i for i in exact if term in self.stems[i]}
        counts: Counter[int] = Counter()
        for term in rare:
            counts.update(self.ocr_pages_with_term(term))
        minimum = max(1, len(rare) // 2)
        ocr = [i for i, n in counts.items() if n >= minimum and i not in exact]
        return sorted(exact) + sorted(ocr, key=lambda i: (-counts[i], i))

    def rarest(self, terms: Iterable[str], count: int) -> list[str]:
        """The `count` terms held by the fewest pages (a term on no page is left out)."""
        held = [(self.document_frequency(t), t) for t in set(terms)]
        return [t for df, t in sorted(held) if df][:count]

    def _match_segments(
        self, index: int, segments: Sequence[Sequence[str]], *, fuzzy: bool = True
    ) -> tuple[int, int] | None:
        detail = self.detail(index)
        body = detail.body_words
        tolerant = fuzzy and self.pages[index].source == OCR
        position = 0
        first: int | None = None
        last = 0
        for segment in segments:
            if not segment:
                continue
            at = _find_run(body, list(segment), position, tolerant)
            if at is None:
                return None
            if first is None:
                first = at
            last = at + len(segment) - 1
            position = at + len(segment)
        if first is None:
            return None
        return _span_of(detail, first, last)

    def closest_passage(
        self, words: Sequence[str], *, within: Iterable[int] | None = None
    ) -> QuoteHit | None:
        """The passage most like the quotation (a misquote's source), or None."""
        if not words:
            return None
        terms = {nz.stem(w) for w in words}
        if within is not None:
            pool = list(within)
        else:
            rare = self.rarest(terms, RARE_TERMS)
            counts = self.pages_with_terms(rare, minimum=max(1, len(rare) // 3))
            pool = sorted(counts, key=lambda i: (-counts[i], i))[:8]
        best: QuoteHit | None = None
        for index in pool:
            hit = self._align(index, list(words))
            if hit is not None and (best is None or hit.ratio > best.ratio):
                best = hit
        return best

    def _align(self, index: int, words: list[str]) -> QuoteHit | None:
        detail = self.detail(index)
        body = detail.body_words
        if not body:
            return None
        matcher = SequenceMatcher(None, words, body, autojunk=False)
        blocks = [b for b in matcher.get_matching_blocks() if b.size]
        if not blocks:
            return None
        # The densest run of blocks no longer than twice the quotation.
        best_count, best_span = 0, (0, 0)
        for i, start_block in enumerate(blocks):
            count = 0
            end = start_block.b
            for block in blocks[i:]:
                if block.b + block.size - start_block.b > 2 * len(words) + 4:
                    break
                count += block.size
                end = block.b + block.size
            if count > best_count:
                best_count, best_span = count, (start_block.b, end)
        ratio = best_count / len(words)
        first, last = best_span[0], max(best_span[0], best_span[1] - 1)
        span = _span_of(detail, first, last)
        return QuoteHit(self.pages[index], span, False, ratio)

    # -- opinions -------------------------------------------------------------------------

    def opinion(self, volume: str, reporter: str, page: str) -> Opinion | None:
        """The opinion reported at `volume reporter page` (see `_opinion`), cached."""
        key = ("at", volume, reporter, page)
        if key not in self._opinions:
            self._opinions[key] = self._opinion(volume, reporter, page)
        return self._opinions[key]  # type: ignore[return-value]  # stored by this method

    def _opinion(self, volume: str, reporter: str, page: str) -> Opinion | None:
        """The opinion in the packet reported at `volume reporter page`, or None.

        It is the document whose page carries that citation among its first lines; from that
        page on, each page of the document is one reporter page: the number printed alone on
        a line of its head, or else the next number after the page before."""
        wanted = nz.token_list(f"{volume} {reporter} {page}")
        if not page.isdigit() or len(wanted) < 3:
            return None
        first = int(page)
        candidates = set(self.pages_with_term(wanted[0])) & set(self.pages_with_term(wanted[-1]))
        # A public-domain citation printed with hyphens ("2020-Ohio-5521") is one word.
        joined = "".join(wanted)
        candidates.update(self.pages_with_term(nz.stem(joined)))
        # A published opinion's own pages first: a filed order of the record may cite it near
        # its top ("... in Larchmont Bakeries, Inc. v.\nIronclad ..., 684 F. Supp. 3d 1207").
        for index in sorted(candidates, key=lambda i: (self.pages[i].origin != "public_record", i)):
            head = _own_head_words(self.pages[index].text)
            # (also its own citation line below a caption, "[Cite as Wendt Hydraulics, Inc. v.
            # Auglaize Castings Co., 2019-Ohio-2874.]", as Ohio's opinions print it)
            head += [
                w for line in _CITE_AS.findall(self.pages[index].text) for w in nz.token_list(line)
            ]
            if (
                _contains_run(head, wanted)
                or joined in head
                or _spelled_head(head, volume, reporter, first, self.pages[index].text)
            ):
                if wanted[-2] == "wl" or _YEAR_VOLUME.fullmatch(volume):
                    # A database's number ("2023 WL 6190457") or a year's series ("2022
                    # USPQ2d 1187", the Board's since 2021) names a document, paged by stars;
                    # a public-domain citation ("2021 COA 87") names a document pinned by its
                    # paragraphs, whatever reporter pages it prints ("495 P.3d 612").
                    return (
                        self._screen_paged(index)
                        or self._opinion_from(index, first)
                        or self._document_from(index, first)
                    )
                return self._opinion_from(index, first)
        return None

    def _document_from(self, start: int, first: int) -> Opinion:
        """The document from `start` on as one opinion, its pages numbered from `first`."""
        doc = self.document_pages(self.pages[start].document_id)
        following = doc[doc.index(start) :]
        pages = {first + k: self.pages[i] for k, i in enumerate(following)}
        return Opinion(self.pages[start].document_id, first, pages)

    def _screen_paged(self, start: int) -> Opinion | None:
        """A Westlaw opinion ("2023 WL 6190457"): its number names the document, not a page,
        and its pages are the screen pages its text marks, "*1", "*2", ... (what "at *6"
        pins); its caption, before "*1", is on page 1. None when its text marks none."""
        doc = self.document_pages(self.pages[start].document_id)
        starred = self._star_paged(doc[doc.index(start) :], 0)
        if starred is None or 1 not in starred.pages:
            return None
        spans = dict(starred.spans)
        spans[1] = [*spans.pop(0, []), *spans[1]]
        pages = {number: self.pages[parts[0][0]] for number, parts in spans.items()}
        return Opinion(starred.document_id, 1, pages, spans)

    def opinions_citing(self, volume: str, reporter: str) -> list[Opinion]:
        """The opinions of the packet reported in `volume` of `reporter` (a short form names
        no first page: "Halloran, 341 P.3d at 883"), in packet order (cached)."""
        key = ("citing", volume, reporter)
        if key not in self._opinions:
            self._opinions[key] = self._opinions_citing(volume, reporter)
        return self._opinions[key]  # type: ignore[return-value]  # stored by this method

    def _opinions_citing(self, volume: str, reporter: str) -> list[Opinion]:
        wanted = nz.token_list(f"{volume} {reporter}")
        if len(wanted) < 2:
            return []
        candidates = set(self.pages_with_term(wanted[0])) & set(self.pages_with_term(wanted[-1]))
        found: list[Opinion] = []
        for index in sorted(candidates)[:MAX_OPINION_CANDIDATES]:
            words = _head_words(self.pages[index].text)
            n = len(wanted)
            for i in range(len(words) - n):
                if words[i : i + n] == wanted and words[i + n].isdigit():
                    opinion = self.opinion(volume, reporter, words[i + n])
                    if opinion is not None and all(
                        o.document_id != opinion.document_id for o in found
                    ):
                        found.append(opinion)
                    break
        return found

    def opinions_named(self, name: str) -> list[Opinion]:
        """The opinions of the packet whose first page's head names a party `name` and prints
        their reporter citation ("Halloran, supra": the Halloran opinion), in packet order
        (cached)."""
        key = ("named", name)
        if key not in self._opinions:
            self._opinions[key] = self._opinions_named(name)
        return self._opinions[key]  # type: ignore[return-value]  # stored by this method

    def _opinions_named(self, name: str) -> list[Opinion]:
        words = [w for w in nz.token_list(name) if w not in nz.STOPWORDS and len(w) >= 3]
        if not words:
            return []
        found: list[Opinion] = []
        for index in list(self.pages_with_term(nz.stem(words[0])))[:MAX_OPINION_CANDIDATES]:
            text = self.pages[index].text
            if words[0] not in _head_words(text):
                continue
            for match in _REPORTER_CITE.finditer("\n".join(text.splitlines()[:HEAD_LINES])):
                opinion = self.opinion(match.group(1), match.group(2), match.group(3))
                if opinion is not None and all(o.document_id != opinion.document_id for o in found):
                    found.append(opinion)
                    break
        return found

    def _opinion_from(self, start: int, first: int) -> Opinion | None:
        document_id = self.pages[start].document_id
        doc = self.document_pages(document_id)
        at = doc.index(start)
        # A first page whose head spells the reporter out ("914 FEDERAL REPORTER") where the
        # pages after it print the citation ("Cite as 914 F.3d 558"): the opinion starts at
        # the earlier page of its document that prints a page number from `first` on.
        while at > 0:
            before = _printed_number(self.pages[doc[at - 1]].text)
            here = _printed_number(self.pages[doc[at]].text)
            if before is None or not first <= before < (here if here is not None else first + 1):
                break
            at -= 1
        following = doc[at:]
        starred = self._star_paged(following, first)
        if starred is not None:
            return starred
        numbers: dict[int, PageRecord] = {}
        expected = first
        for i in following:
            printed = _printed_number(self.pages[i].text)
            number = printed if printed is not None and printed >= expected else expected
            numbers.setdefault(number, self.pages[i])
            expected = number + 1
        if first not in numbers:
            return None
        return Opinion(document_id, first, numbers)

    def _star_paged(self, following: list[int], first: int) -> Opinion | None:
        """An opinion whose reporter pages are marked in its text ("*457", "[*457]"): each
        marker starts the next reporter page wherever it stands, a file page without one goes
        on with the page before, and a page number printed alone in a page's head starts that
        page. None when its text marks no page after the first."""
        spans: dict[int, list[tuple[int, int, int]]] = {}
        current = first
        marked = False
        for i in following:
            text = self.pages[i].text
            printed = _printed_number(text)
            if printed is not None and current < printed <= current + STAR_STEP:
                current = printed
            position = 0
            for match in _STAR.finditer(text):
                number = int(match.group(1))
                if not current < number <= current + STAR_STEP:
                    continue  # a marker inside a number, or one out of order: not a page
                spans.setdefault(current, []).append((i, position, match.start()))
                current, position, marked = number, match.end(), True
            spans.setdefault(current, []).append((i, position, len(text)))
        if not marked:
            return None
        pages = {number: self.pages[parts[0][0]] for number, parts in spans.items()}
        return Opinion(self.pages[following[0]].document_id, first, pages, spans)

    def page_index(self, page: PageRecord) -> int:
        return page.position - 1 if self._is_position_index(page) else self.pages.index(page)

    def _is_position_index(self, page: PageRecord) -> bool:
        i = page.position - 1
        return 0 <= i < len(self.pages) and self.pages[i] is page


def _document_orders(pages: Sequence[PageRecord]) -> dict[int, str]:
    """The order each document that tells one writes its numeric dates in
    (`dates.document_order`), by document id."""
    texts: defaultdict[int, list[str]] = defaultdict(list)
    for page in pages:
        texts[page.document_id].append(page.text)
    orders = {document: date_parser.document_order(found) for document, found in texts.items()}
    return {document: order for document, order in orders.items() if order is not None}


def _read_page(
    page: PageRecord, stem_cache: dict[str, str], order: str | None = None
) -> tuple[frozenset[str], list[Value], list[Value]]:
    """A page's stems, dates and amounts (what `build` indexes), as read on an OCR page; its
    numeric dates in `order` where its document tells one."""
    read = ocr_read(page.text) if page.source == OCR else page.text
    words = _page_words(read)
    found_dates, found_amounts = _page_values(read, words, order)
    # A page dated 2023-11-08 speaks of November, whatever form the date takes.
    words.update(_MONTH_NAMES[int(v.value[-5:-3])] for v in found_dates)  # "--11-08" too
    missing = words.difference(stem_cache)  # a dict operand: looked up, not copied
    for word in missing:
        stem_cache[word] = nz.stem(nz.norm_token(word))
    return frozenset(map(stem_cache.__getitem__, words)), found_dates, found_amounts


def _page_words(text: str) -> set[str]:
    r"""The distinct words of `text` as `normalise.raw_words` finds them (lowercased, not yet
    normalised), found mostly without the word pattern: a word never spans whitespace except
    at a hyphen ending a line, so on a page without one the words are the whitespace-separated
    tokens made only of letters and digits (what the pattern's `[^\W_]` is), and the pattern
    runs on the other tokens only."""
    low = nz.fold(text).lower()
    if _LINE_END_HYPHEN.search(low):
        return set(nz.raw_words(text))
    tokens = set(low.split())
    words = set(filter(str.isalnum, tokens))
    tokens -= words
    if tokens:
        words.update(nz.raw_words(" ".join(tokens)))
    return words


def bates_table(pages: Sequence[PageRecord]) -> dict[tuple[str, int], int]:
    """(prefix key, number) -> the index of the first page carrying that label (`bates_key`,
    with each prefix's key made once: a packet has a handful of prefixes)."""
    prefixes: dict[str, str] = {}
    table: dict[tuple[str, int], int] = {}
    for i, page in enumerate(pages):
        for label in page.bates:
            match = _LABEL.match(label.strip())
            if not match:
                continue
            prefix, number = match.group(1), match.group(2) or match.group(4)
            if match.group(2) is not None and (parts := split_label(label)) is not None:
                prefix, number = parts[0], parts[1]  # (a docket number in the prefix)
            key = prefixes.get(prefix)
            if key is None:
                key = prefixes[prefix] = _prefix_key(prefix)
            # A page-suffixed label ("ABC000101.0002") is looked up by its document's number.
            table.setdefault((key, int(number)), i)
    return table


def ocr_read(text: str) -> str:
    """An OCR page's text as it was printed, where OCR's usual slips are unambiguous: a bar
    standing alone is the pronoun I ("| had to use"), look-alikes inside figures are digits.
    One character for one, so spans stay spans of the page's text."""
    return ocr_digits(_BAR_I.sub("I", text))


def ocr_digits(text: str) -> str:
    """OCR's look-alikes inside figures read as digits ("$869.9B" -> "$869.98", "2O23" ->
    "2023"): only in runs that are mostly digits, one character for one."""

    def fix(match: re.Match[str]) -> str:
        run = match.group()
        digits = sum(ch.isdigit() for ch in run)
        letters = sum(ch in _LOOKALIKE for ch in run)
        if digits < 2 or letters == 0 or letters > digits:
            return run
        return run.translate(_DIGIT_FIX)

    return _FIGURE.sub(fix, text)


def _page_values(
    text: str, words: set[str] | None = None, order: str | None = None
) -> tuple[list[Value], list[Value]]:
    """A page's dates and money: the extractor's dates and amounts, and figures that can only
    be money on a page ("216,000.00", "869.98" in a column of a statement or an invoice).

    Each parser runs only on the windows around figures (`_windows`), and only on a window
    that holds what every one of its patterns needs (a month name at the start of a word, or a
    digit, separator and digit, for a date; "$", "USD", "dollars", a euro or pound sign or
    code for an amount): a window without it can hold no match, so the values are those of
    parsing the whole text. Amounts in words are read on the whole page."""
    dates: list[Value] = []
    amounts: list[Value] = []
    bare: dict[int, tuple[int, str]] = {}  # start -> (end, figure); windows may overlap
    for start, end in _windows(text):
        chunk = text[start:end]
        if _DATE_HINT.search(chunk):
            full = date_parser.date_values(chunk, order)
            # Year-less dates too ("Aug 27 4:52 PM"), as "--MM-DD" (after the full ones).
            found = full + date_parser.month_day_values(chunk, full)
            dates.extend(Value(start + a, start + b, v) for a, b, v in found)
        if "$" in chunk or _AMOUNT_HINT.search(chunk) or amount_parser.CODE_HINT.search(chunk):
            amounts.extend(
                Value(start + a, start + b, v)
                for a, b, v in amount_parser.numeral_amount_values(chunk)
            )
        # A bare figure is digits, commas and a point, so it lies inside one window (which
        # starts and ends on whitespace) with the characters its pattern looks at around it.
        for match in _BARE_MONEY.finditer(chunk):
            bare.setdefault(start + match.start(), (start + match.end(), match.group()))
        if "-" in chunk:
            for match in _NEGATIVE_MONEY.finditer(chunk):
                bare.setdefault(
                    start + match.start("n"), (start + match.end("n"), match.group("n"))
                )
    # Dates with the day in words ("the second of April", "the second of April, two thousand
    # seven") and amounts in words ("four point one million dollars") may have no figure to
    # window around: read on the whole
    # page (one linear scan each), only where the page's words (`words`, when the caller has
    # them) hold an ordinal or a currency word. Words first: a numeral inside a run of words (a
    # transcript's line number) is no amount of its own.
    taken_dates = [(d.start, d.end, d.value) for d in dates]
    words_dates = date_parser.word_date_values(text, taken_dates, words)
    if words_dates:
        dates.extend(Value(a, b, v) for a, b, v in words_dates)
        dates.sort(key=lambda v: v.start)
    if (
        amount_parser.has_currency_word(text)
        if words is None
        else not amount_parser.CURRENCY_WORDS.isdisjoint(words)
    ):
        in_words = [Value(a, b, v) for a, b, v in amount_parser.word_amount_values(text)]
        if in_words:
            amounts = [
                v for v in amounts if not any(v.start < w.end and v.end > w.start for w in in_words)
            ]
            amounts.extend(in_words)
    taken = [(v.start, v.end) for v in amounts]
    for start, (end, figure) in sorted(bare.items()):
        if any(start < b and end > a for a, b in taken):
            continue
        dollars, _, cents = figure.replace(",", "").partition(".")
        amounts.append(Value(start, end, str(int(dollars) * 100 + int(cents or 0))))
    amounts.extend(_scaled_figures(text))
    amounts.sort(key=lambda v: v.start)
    return dates, amounts


# A table's statement of its unit: "($ in millions)", "($ millions)", "(USD millions)", "(in
# thousands, except per share data)", "in millions of dollars", "$000s".
_SCALE = re.compile(
    r"(?:\$|US\$|USD|dollars)[ \t]*(?:(?:amounts[ \t]+)?in[ \t]+|(?=millions|thousands|billions))"
    r"(?P<a>thousands|millions|billions)\b"
    r"|\([ \t]*in[ \t]+(?P<b>thousands|millions|billions)\b"
    r"|\bin[ \t]+(?P<c>thousands|millions|billions)[ \t]+of[ \t]+(?:U\.?S\.?[ \t]+)?dollars\b"
    r"|\$[ \t]?(?P<d>000)s?\b",
    re.IGNORECASE,
)
_SCALES = {"thousands": 1_000, "000": 1_000, "millions": 1_000_000, "billions": 1_000_000_000}
# What a page stating a unit prints, in any case: one of these (read by `in`, fast).
_SCALE_HINTS = ("illions", "ILLIONS", "housands", "HOUSANDS", "$000", "$ 000")
# A figure of such a table: a whole number or one with a decimal point, "(118)" negative.
_TABLE_FIGURE = re.compile(
    r"(?<![\w.,$/:%-])\(?(?P<n>\d{1,3}(?:,\d{3})+|\d{1,6})(?:\.(?P<d>\d{1,3}))?\)?(?![\w%/:-]|[.,]\d)"
)
MIN_ROW_FIGURES = 2  # a line of a table holds a row of figures, not one number in a sentence


def _scaled_figures(text: str) -> list[Value]:
    """The figures of the tables on a page that state their unit ("($ in millions)": 1,142
    is $1,142 million), as amounts, on the rows of figures after the statement (a year or a
    count in such a row is read too: a sentence's amount must still match its value)."""
    found: list[Value] = []
    if not any(word in text for word in _SCALE_HINTS):
        return found  # no unit stated: most pages, told apart without a regular expression
    for scale in _SCALE.finditer(text):
        unit = _SCALES[next(g for g in scale.groups() if g).lower()]
        at = text.find("\n", scale.end())
        if at < 0:
            continue
        for line in re.finditer(r"[^\n]+", text[at:]):
            figures = list(_TABLE_FIGURE.finditer(line.group()))
            if len(figures) < MIN_ROW_FIGURES:
                continue
            for figure in figures:
                whole = int(figure.group("n").replace(",", ""))
                decimals = figure.group("d") or ""
                cents = (whole * 10 ** len(decimals) + int(decimals or 0)) * unit * 100
                cents //= 10 ** len(decimals)
                end = figure.end("d") if decimals else figure.end("n")
                base = at + line.start()
                found.append(Value(base + figure.start("n"), base + end, str(cents)))
    return found


def _windows(text: str) -> list[list[int]]:
    """The stretches of `text` around its figures: every date and amount has a digit, and
    its month name or currency mark stands within WINDOW characters of one. Each stretch
    ends on whitespace, so no word is cut."""
    windows: list[list[int]] = []
    for match in _DIGITS.finditer(text):
        start, end = match.start() - WINDOW, match.end() + WINDOW
        if windows and start <= windows[-1][1]:
            windows[-1][1] = end
        else:
            windows.append([start, end])
    for window in windows:
        window[0] = _word_edge(text, max(0, window[0]), -1)
        end = _word_edge(text, min(len(text), window[1]), 1)
        # A year in words after the figure ("the 2nd day of April, two thousand and
        # twenty-three") is read whole, never cut into another year.
        words_after = _NUMBER_WORDS_AFTER.match(text, end)  # matches always (may be empty)
        window[1] = words_after.end() if words_after else end
    return windows


def _word_edge(text: str, position: int, step: int) -> int:
    """Move `position` to the nearest whitespace (or the text's end) in direction `step`."""
    while 0 < position < len(text) and not text[position].isspace():
        position += step
    return max(0, min(len(text), position))


def _values(found: list[tuple[int, int, str]]) -> list[Value]:
    return [Value(start, end, value) for start, end, value in found]


def _span_of(detail: PageDetail, first: int, last: int) -> tuple[int, int]:
    """The text span of body words `first` to `last` (a sheet's body is in reading order,
    not always in the text's: the span holds both ends)."""
    a, b = detail.spans[detail.body[first]], detail.spans[detail.body[last]]
    return min(a[0], b[0]), max(a[1], b[1])


def _sheet_order(body: list[int], starts: list[int], minis: list[MiniPage]) -> list[int]:
    """A condensed sheet's body words in reading order: each mini-page's lines in turn (a
    text layer read row by row across the sheet interleaves them); a word outside the numbered
    lines goes with the numbered line before it."""
    marks = sorted(
        (line.start, order, k)
        for order, mini in enumerate(minis)
        for k, line in enumerate(mini.lines)
    )
    if not marks:
        return body
    line_starts = [mark[0] for mark in marks]
    keys = []
    for word in body:
        at = bisect.bisect_right(line_starts, starts[word]) - 1
        keys.append(marks[at][1:] if at >= 0 else (-1, -1))
    if all(a <= b for a, b in pairwise(keys)):
        return body
    return [word for _, word in sorted(zip(keys, body, strict=True), key=lambda pair: pair[0])]


# A number at a line's start, before text (two spaces apart) or alone: a margin's count.
_MARGIN_NUMBER = re.compile(r"(?m)^[ \t]*(\d{1,2})(?=[ \t]{2,}\S|[ \t]*$)")
MARGIN_RUN = 3  # counts by five in a row: 5, 10, 15


def margin_count(text: str) -> list[tuple[int, int]]:
    """The spans of a margin counting lines by fives (a patent's columns, pleading paper: "5",
    "10", "15" at the starts of lines, alone or before the line's text), which no quotation
    holds. Only runs of MARGIN_RUN or more, each number five more than the one before: a
    table's first column is no such run."""
    if "5" not in text:
        return []
    found = [m for m in _MARGIN_NUMBER.finditer(text) if int(m.group(1)) % 5 == 0]
    spans: list[tuple[int, int]] = []
    run: list[re.Match[str]] = []
    for match in [*found, None]:
        if match is not None and (not run or int(match.group(1)) == int(run[-1].group(1)) + 5):
            run.append(match)
            continue
        if len(run) >= MARGIN_RUN:
            spans.extend(m.span(1) for m in run)
        run = [match] if match is not None else []
    return spans


def _lines(text: str) -> list[tuple[int, int, str]]:
    out = []
    position = 0
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        out.append((position, position + len(stripped), stripped))
        position += len(line)
    return out


def _edge_lines(text: str) -> list[tuple[int, int, str]]:
    """The first and last HEAD_LINES lines with words, with their spans (no full split)."""
    head: list[tuple[int, int, str]] = []
    position = 0
    while len(head) < HEAD_LINES and position < len(text):
        end = text.find("\n", position)
        end = len(text) if end < 0 else end
        line = text[position:end].rstrip("\r")
        if line.strip():
            head.append((position, position + len(line), line))
        position = end + 1
    tail: list[tuple[int, int, str]] = []
    stop = len(text)
    while len(tail) < HEAD_LINES and stop > position:
        start = text.rfind("\n", position, stop) + 1
        start = max(start, position)
        line = text[start:stop].rstrip("\r")
        if line.strip():
            tail.append((start, start + len(line), line))
        stop = start - 1
    return head + tail[::-1]


# A footer's page label: "Page 3 of 5" after a running title, "Nursing Flowsheet - Page 1", "3/5".
# A line of prose that ends on a page ("... see Table 1 (page 2) and Table 2 (page 3).") has more
# words before its "page #" than a footer's title.
_PAGE_FOOTER = re.compile(r"(\S+ ){0,12}(page )?# of #|(\S+ ){0,5}page #|#/#")


def _is_page_footer(line_shape: str) -> bool:
    return _PAGE_FOOTER.fullmatch(line_shape) is not None


_CITE_AS = re.compile(r"(?im)^[ \t]*\[?[ \t]*Cite[ \t]+as[ \t]+([^\n]{1,200})$")


# A line of an opinion's text citing another case ("prescription products recognized in Hahn
# v. Richter, 543 Pa. 558, 673 A.2d 888 (1996), rests on"): a name "X v. Y," before a number.
# (also the line a cite in the text runs onto: "Contracting, Inc., 472 N.J. Super. 140, 142",
# its name's "v." on the line before; an opinion's own head prints no comma before its volume)
_CITING_LINE = re.compile(
    r"\bv\.\s[^\n]{1,120}?,\s*\d|[\w.)],[ \t]+\d{1,4}[ \t]+[A-Z][\w.]*(?:[ \t][\w.]+){0,3}?[ \t]+\d"
)


def _own_head_words(text: str) -> list[str]:
    """The words of a page's head (`_head_words`) without the lines that cite another case in
    the opinion's text: a cite there is the opinion's own only on its first two lines (a
    printout's "Hahn v. Richter, 543 Pa. 558 (1996)") or on a "Cite as" line."""
    lines = [ln[2] for ln in _lines(text) if ln[2].strip()][: 2 * HEAD_LINES + 2]
    kept = [
        line
        for k, line in enumerate(lines)
        if k < 2 or _CITE_AS.match(line) or not _CITING_LINE.search(line)
    ]
    return nz.token_list(" ".join(kept))


_NAME_FILLER = frozenset({"reports", "report", "reporter", "of", "the", "series"})


@functools.lru_cache(maxsize=1)
def _reporter_names() -> dict[str, list[str]]:
    """Each reporter edition's name as its running heads spell it, in words of its own
    (reporters-db: "T.C." is "Reports of the United States Tax Court", whose heads read
    "161 UNITED STATES TAX COURT REPORTS"): the name's words but "Reports", "of", "the"."""
    try:
        from reporters_db import REPORTERS
    except ImportError:  # pragma: no cover - reporters-db is a pinned dependency
        return {}
    names: dict[str, list[str]] = {}
    for reporters in REPORTERS.values():
        for reporter in reporters:
            words = [w for w in nz.token_list(reporter.get("name", "")) if w not in _NAME_FILLER]
            for edition in reporter.get("editions", {}):
                names.setdefault(" ".join(nz.token_list(edition)), words)
    return names


def _spelled_head(head: list[str], volume: str, reporter: str, first: int, text: str) -> bool:
    """A first page whose running head spells its reporter out after the volume ("214   161
    UNITED STATES TAX COURT REPORTS") and prints the cited page as its number."""
    words = _reporter_names().get(" ".join(nz.token_list(reporter)))
    if not words or len(words) < 2:
        return False
    run = [w for w in head if w not in _NAME_FILLER]
    return _contains_run(run, [volume, *words]) and _printed_number(text) == first


def _head_words(text: str) -> list[str]:
    lines = [ln[2] for ln in _lines(text) if ln[2].strip()][: 2 * HEAD_LINES + 2]
    return nz.token_list(" ".join(lines))


def _printed_number(text: str) -> int | None:
    """The page number printed in the page's head: alone on a line, else at the start or the
    end of a head line, apart from its words by a column gap (a reporter's running head,
    "558    914 FEDERAL REPORTER, 3d SERIES" or "KEYSTONE v. PARDEE    559"); None if none."""
    head = [ln[2] for ln in _lines(text) if ln[2].strip()][: HEAD_LINES + 1]
    for line in head:
        if _LONE_NUMBER.match(line):
            return int(line)
    for line in head:
        bare = line.strip()
        if not (bare[:1].isdigit() or bare[-1:].isdigit()):
            continue  # (the pattern is tried only where a number may stand at an edge)
        edge = _EDGE_NUMBER.match(line)
        if edge is not None:
            return int(edge.group("first") or edge.group("last"))
    return None


def _contains_run(words: list[str], run: list[str]) -> bool:
    n = len(run)
    return any(words[i : i + n] == run for i in range(len(words) - n + 1))


def _find_run(body: list[str], run: list[str], start: int, tolerant: bool) -> int | None:
    """First position >= start where `run` stands in `body` (OCR slips allowed if tolerant)."""
    n = len(run)
    head = run[0]
    for i in range(start, len(body) - n + 1):
        if body[i] != head and not (tolerant and nz.close_words(body[i], head)):
            continue
        if all(
            body[i + k] == run[k] or (tolerant and nz.close_words(body[i + k], run[k]))
            for k in range(1, n)
        ):
            return i
    return None
