"""The frozen packet, indexed once for every check of a draft (pure, no Django).

`PacketIndex.build(pages)` reads each page once:

1. its words: normalised tokens (apps.verification.normalise), stemmed, into an inverted index
   stem -> pages (key terms, and the candidates of a quotation);
2. its dates and money amounts (apps.verification.dates / amounts, the extractor's own parsers)
   into value -> pages, and per page, with their spans;
3. its Bates labels into (prefix, number) -> page.

The rest is done on demand for the few pages a check looks at, and cached: token spans, the
body of a page (its running heads and footers, repeated on the pages of its document, and
deposition line numbers left out: they are not part of a quotation), and the opinions (a page
whose head prints a reporter citation; each page of an opinion is one reporter page, its
number printed alone on a line of the head).

A check therefore costs a few dictionary look-ups and the pages it names, never a scan of the
packet.
"""

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from apps.verification import amounts as amount_parser
from apps.verification import dates as date_parser
from apps.verification import normalise as nz
from apps.verification.claims import BatesRef

OCR = "ocr"
_LABEL = re.compile(r"^(.*?)[\s\-_.]*(\d+)$")
_LINE_NUMBER = re.compile(r"^[ \t]*(\d{1,2})(?=[ \t]+\S)")
_LONE_NUMBER = re.compile(r"^\s*\d{1,5}\s*$")
_BARE_MONEY = re.compile(
    r"(?<![\w.,$/:-])(?:\d{1,3}(?:,\d{3})+(?:\.\d{2})?|\d+\.\d{2})(?![\d%]|[.,]\d)"
)
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
HEAD_LINES = 3  # lines at each end of a page that may be a running head or footer
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
    pages: dict[int, PageRecord]  # reporter page -> packet page

    @property
    def last_page(self) -> int:
        return max(self.pages)


def bates_key(label: str) -> tuple[str, int] | None:
    """("ACME", 14) for "ACME000014" / "ACME-000014"; None for a label without a number."""
    match = _LABEL.match(label.strip())
    if not match:
        return None
    return _prefix_key(match.group(1)), int(match.group(2))


def _prefix_key(prefix: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", prefix).upper()


@dataclass
class PacketIndex:
    pages: list[PageRecord]
    stems: list[frozenset[str]]
    postings: dict[str, list[int]]
    dates: list[list[Value]]
    amounts: list[list[Value]]
    date_pages: dict[str, list[int]]
    amount_pages: dict[str, list[int]]
    bates: dict[tuple[str, int], int]
    _details: dict[int, PageDetail] = field(default_factory=dict)
    _opinions: list[tuple[int, int, list[str]]] | None = None  # (page index, number, head)
    _repeats: dict[int, set[str]] = field(default_factory=dict)

    # -- building -------------------------------------------------------------------------

    @classmethod
    def build(cls, pages: Sequence[PageRecord]) -> "PacketIndex":
        """Index `pages` (a frozen packet in packet order)."""
        stem_cache: dict[str, str] = {}
        postings: dict[str, list[int]] = defaultdict(list)
        date_pages: dict[str, list[int]] = defaultdict(list)
        amount_pages: dict[str, list[int]] = defaultdict(list)
        all_stems: list[frozenset[str]] = []
        all_dates: list[list[Value]] = []
        all_amounts: list[list[Value]] = []
        bates: dict[tuple[str, int], int] = {}
        for i, page in enumerate(pages):
            found_dates = _values(date_parser.date_values(page.text))
            found_amounts = _page_amounts(page.text)
            words = set(nz.token_list(page.text))
            # A page dated 2023-11-08 speaks of November, whatever form the date takes.
            words.update(_MONTH_NAMES[int(v.value[5:7])] for v in found_dates)
            page_stems = frozenset(_stems_of(words, stem_cache))
            all_stems.append(page_stems)
            for term in page_stems:
                postings[term].append(i)
            all_dates.append(found_dates)
            all_amounts.append(found_amounts)
            for value in {v.value for v in found_dates}:
                date_pages[value].append(i)
            for value in {v.value for v in found_amounts}:
                amount_pages[value].append(i)
            for label in page.bates:
                key = bates_key(label)
                if key is not None:
                    bates.setdefault(key, i)
        return cls(
            pages=list(pages),
            stems=all_stems,
            postings=dict(postings),
            dates=all_dates,
            amounts=all_amounts,
            date_pages=dict(date_pages),
            amount_pages=dict(amount_pages),
            bates=bates,
        )

    # -- Bates ----------------------------------------------------------------------------

    def bates_indexes(self, ref: BatesRef) -> tuple[list[int], list[int]]:
        """(indexes of the pages the ref names that are in the packet, numbers not found)."""
        prefix = _prefix_key(ref.prefix)
        found: list[int] = []
        missing: list[int] = []
        last = min(ref.last, ref.first + MAX_RANGE) if ref.last >= ref.first else ref.first
        for number in range(ref.first, last + 1):
            index = self.bates.get((prefix, number))
            if index is None:
                missing.append(number)
            else:
                found.append(index)
        if ref.last > last:
            missing.append(ref.last)
        return found, missing

    def pages_for_bates(self, ref: BatesRef) -> list[PageRecord] | None:
        """The pages `ref` names, in order; None when any of them is not in the packet."""
        found, missing = self.bates_indexes(ref)
        if missing or not found:
            return None
        return [self.pages[i] for i in found]

    def bates_span(self, prefix: str) -> tuple[str, str] | None:
        """The first and last label of the packet with this prefix (for messages)."""
        key = _prefix_key(prefix)
        numbers = [n for (p, n) in self.bates if p == key]
        if not numbers:
            return None
        return self.pages[self.bates[(key, min(numbers))]].bates[0], self.pages[
            self.bates[(key, max(numbers))]
        ].bates[-1]

    def label(self, index: int) -> str:
        page = self.pages[index]
        return page.bates[0] if page.bates else f"{page.filename} p.{page.page_number}"

    # -- words ----------------------------------------------------------------------------

    def document_frequency(self, term: str) -> int:
        return len(self.postings.get(term, ()))

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
            for index in self.postings.get(term, ()):
                counts[index] += 1
        return Counter({i: n for i, n in counts.items() if n >= minimum})

    def detail(self, index: int) -> PageDetail:
        """The page's words with spans and its quotable body (cached)."""
        cached = self._details.get(index)
        if cached is None:
            cached = self._details[index] = self._make_detail(index)
        return cached

    def _make_detail(self, index: int) -> PageDetail:
        text = self.pages[index].text
        found = nz.tokens(text)
        words = [w for w, _, _ in found]
        spans = [(s, e) for _, s, e in found]
        skip = self._skipped_spans(index)
        body = [
            k for k, (start, _end) in enumerate(spans) if not any(a <= start < b for a, b in skip)
        ]
        return PageDetail(words=words, spans=spans, body=body)

    def _skipped_spans(self, index: int) -> list[tuple[int, int]]:
        """Character spans of running heads, footers and line numbers on the page."""
        page = self.pages[index]
        lines = _lines(page.text)
        repeated = self._repeated_shapes(page.document_id)
        skip: list[tuple[int, int]] = []
        content = [ln for ln in lines if ln[2].strip()]
        edge = content[:HEAD_LINES] + content[-HEAD_LINES:]
        for start, end, line in edge:
            line_shape = nz.shape(line)
            if line_shape in repeated or _LONE_NUMBER.match(line) or _is_page_footer(line_shape):
                skip.append((start, end))
        numbered = [(s, m) for s, _, ln in content if (m := _LINE_NUMBER.match(ln))]
        if len(numbered) >= 5 and len(numbered) >= len(content) // 2:
            skip.extend((s + m.start(1), s + m.end(1)) for s, m in numbered)
        return skip

    def _repeated_shapes(self, document_id: int) -> set[str]:
        """Shapes of edge lines that recur on two or more pages of the document (cached)."""
        if not self._repeats:
            counts: dict[int, Counter[str]] = defaultdict(Counter)
            for page in self.pages:
                content = [ln for ln in _lines(page.text) if ln[2].strip()]
                edge = content[:HEAD_LINES] + content[-HEAD_LINES:]
                counts[page.document_id].update({nz.shape(line) for _, _, line in edge})
            for doc, shapes in counts.items():
                self._repeats[doc] = {s for s, n in shapes.items() if n >= 2 and s}
        return self._repeats.get(document_id, set())

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
        return None

    def _quote_candidates(self, terms: set[str], within: Iterable[int] | None) -> list[int]:
        pool = list(within) if within is not None else None
        if pool is not None:
            return pool
        counts = self.pages_with_terms(terms, minimum=max(1, int(len(terms) * 0.6)))
        ranked = sorted(counts, key=lambda i: (-counts[i], i))
        full = [i for i in ranked if counts[i] == len(terms)]
        ocr = [i for i in ranked if counts[i] < len(terms) and self.pages[i].source == OCR]
        return full + ocr

    def _match_segments(
        self, index: int, segments: Sequence[Sequence[str]], *, fuzzy: bool = True
    ) -> tuple[int, int] | None:
        detail = self.detail(index)
        body = [detail.words[k] for k in detail.body]
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
        return detail.spans[detail.body[first]][0], detail.spans[detail.body[last]][1]

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
            counts = self.pages_with_terms(terms, minimum=max(1, len(terms) // 3))
            pool = sorted(counts, key=lambda i: (-counts[i], i))[:8]
        best: QuoteHit | None = None
        for index in pool:
            hit = self._align(index, list(words))
            if hit is not None and (best is None or hit.ratio > best.ratio):
                best = hit
        return best

    def _align(self, index: int, words: list[str]) -> QuoteHit | None:
        detail = self.detail(index)
        body = [detail.words[k] for k in detail.body]
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
        span = detail.spans[detail.body[first]][0], detail.spans[detail.body[last]][1]
        return QuoteHit(self.pages[index], span, False, ratio)

    # -- opinions -------------------------------------------------------------------------

    def opinion(self, volume: str, reporter: str, page: str) -> Opinion | None:
        """The opinion in the packet reported at `volume reporter page`, or None."""
        wanted = nz.token_list(f"{volume} {reporter} {page}")
        if not wanted or not page.isdigit():
            return None
        for index, number, head in self._opinion_heads():
            if number is not None and _contains_run(head, wanted):
                document_id = self.pages[index].document_id
                pages = {
                    n: self.pages[i]
                    for i, n, _ in self._opinion_heads()
                    if self.pages[i].document_id == document_id and n is not None
                }
                if int(page) in pages:
                    return Opinion(document_id, int(page), pages)
        return None

    def _opinion_heads(self) -> list[tuple[int, int, list[str]]]:
        """(page index, printed reporter page, words of the head) for pages that look like a
        reported opinion: a lone page number among the first lines."""
        if self._opinions is None:
            heads = []
            for index, page in enumerate(self.pages):
                lines = [ln for ln in _lines(page.text) if ln[2].strip()][: HEAD_LINES + 1]
                numbers = [int(ln[2]) for ln in lines if _LONE_NUMBER.match(ln[2])]
                if numbers:
                    head = nz.token_list(" ".join(ln[2] for ln in lines))
                    heads.append((index, numbers[0], head))
            self._opinions = heads
        return self._opinions

    def page_index(self, page: PageRecord) -> int:
        return page.position - 1 if self._is_position_index(page) else self.pages.index(page)

    def _is_position_index(self, page: PageRecord) -> bool:
        i = page.position - 1
        return 0 <= i < len(self.pages) and self.pages[i] is page


def _stems_of(words: set[str], cache: dict[str, str]) -> set[str]:
    out = set()
    for word in words:
        stemmed = cache.get(word)
        if stemmed is None:
            stemmed = cache[word] = nz.stem(word)
        out.add(stemmed)
    return out


def _page_amounts(text: str) -> list[Value]:
    """Money on a page: the extractor's amounts, and figures that can only be money on a
    page ("216,000.00", "869.98" in a column of a statement or an invoice)."""
    found = _values(amount_parser.amount_values(text))
    for match in _BARE_MONEY.finditer(text):
        start, end = match.span()
        if any(start < v.end and end > v.start for v in found):
            continue
        cents = amount_parser.parse_amount("$" + match.group())
        if cents is not None:
            found.append(Value(start, end, cents))
    found.sort(key=lambda v: v.start)
    return found


def _values(found: list[tuple[int, int, str]]) -> list[Value]:
    return [Value(start, end, value) for start, end, value in found]


def _lines(text: str) -> list[tuple[int, int, str]]:
    out = []
    position = 0
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        out.append((position, position + len(stripped), stripped))
        position += len(line)
    return out


def _is_page_footer(line_shape: str) -> bool:
    return bool(re.fullmatch(r"(.* )?(page )?# of #|(.* )?page #|#/#", line_shape))


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
