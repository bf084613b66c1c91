"""Page and line cites of transcripts (issue 28 requirement 7; pure, no Django): "Voss Dep.
45:3-12", "Smith Dep. at 45:3-12", "(Tr. 112:4-113:2)".

`lined(finding, context)` refines the finding of a record cite that names transcript lines:

1. The transcript: for a Bates cite with a page:line pin ("SKP0001005 at 27:4-8"), the one
   document its pages belong to, when the page check supported them (a wrong page stays that
   check's finding, naming the page and lines of the transcript where the testimony is:
   `_testimony_elsewhere`); "ACME000123:4-9" names lines 4-9 of the transcript page stamped
   ACME000123 (`_bates_lines`; of a condensed sheet, of the transcript page on it whose lines
   carry the sentence, else of its first); for a cite of a deposition or transcript ("Dep.", "Tr.",
   "Hr'g Tr."; a pleading's "Compl. 2:4" is left as it is), the one document of the packet
   titled as the cite (its file name holds "deposition" and the witness's name for "Voss Dep.",
   "transcript" for "Tr.": `paragraphs.pleading_pages`). None, or several: the finding stays
   as it was.
2. Its pages: the transcript's own page numbers ("Page 45" at a page's edge, alone or closing
   its running head, or a number alone on its first line), else the file's page numbers: an
   excerpt produced of pages 1, 12 and 13 is those pages, not 1 to 3. Its lines: a line
   starting with its number, 1 to 25 (a page with fewer than five such lines has none). A
   condensed sheet (four transcript pages to a PDF page, each under its "Page 45" header) is
   read as the pages it prints, each with its own lines (apps.verification.sheets). A
   transcript with no numbered lines, a cited page whose header stands over no numbered lines,
   or one missing while a sheet prints numbered lines under no header: needs review, saying
   so.
3. The cited lines run from the first page:line to the last ("112:4-113:2" crosses a page). A
   page the transcript lacks, or a line past the page's last: unsupported, saying what the
   transcript has (a range is read up to MAX_LINES lines).
4. The sentence: a quotation found on other lines (or another page) is unsupported, naming the
   page and lines where it is; without a quotation, key terms the cited lines lack while
   another stretch of as many lines holds them is unsupported, naming those lines. Found on the
   cited lines: supported, with them as the match.
"""

from __future__ import annotations

import re
from collections.abc import KeysView
from dataclasses import dataclass, replace

from apps.verification import normalise as nz
from apps.verification.claims import Claim
from apps.verification.findings import Finding
from apps.verification.index import PacketIndex, QuoteHit, pages_label
from apps.verification.paragraphs import (
    SHORT_QUOTE,
    Context,
    _pleading_words,
    page_numbers,
    pleading_pages,
)
from apps.verification.quoting import quote_segments, quote_words
from apps.verification.sheets import sheet_pages
from apps.verification.spans import excerpt_of

MAX_LINES = 25 * 20  # a cited range is read up to twenty pages of lines
LAST_LINE = 25
_CITE = re.compile(
    r"(?P<p1>\d{1,5}):(?P<l1>\d{1,6})(?:[ \t]*[-\u2013][ \t]*(?:(?P<p2>\d{1,5}):)?(?P<l2>\d{1,6}))?"
)
_LINE = re.compile(r"(?m)^[ \t]*(?P<n>\d{1,2})(?:[ \t]+(?P<text>.*?))?[ \t]*$")
# "Page 45" on a line of its own, or closing a running head at the page's edge after a gap of
# two spaces or more, a tab or a bar ("Deposition of R. Voss        Page 45").
_PAGE_LABEL = re.compile(
    r"(?im)^(?:[ \t]*|.*?\S(?:[ \t]{2,}|\t|[ \t]*\|[ \t]*))page[ \t]+(\d{1,5})"
    r"(?:[ \t]+of[ \t]+\d+)?[ \t]*$"
)
_LONE = re.compile(r"^[ \t]*(\d{1,5})[ \t]*$")
# Terms elsewhere: as paragraphs' wrong-paragraph rule.
WHOLE_PAGE = -1  # a line number no cite writes: the cite names its pages whole
WRONG_OTHER = 0.5
WRONG_RATIO = 1 / 3
WRONG_ALONE = 0.35  # the cited lines hold none of the terms, another stretch this much


@dataclass(frozen=True)
class Line:
    page: int  # the transcript's page number
    number: int
    record: int  # packet page index
    span: tuple[int, int]  # the line's text in the page's text


_Wanted = tuple[tuple[int, int], tuple[int, int]]  # (first page, line), (last page, line)


def cited_lines(pins: tuple[str, ...]) -> _Wanted | None:
    """((first page, first line), (last page, last line)) of a page:line pin, or None."""
    for pin in pins:
        match = _CITE.search(pin)
        if match is None:
            continue
        p1, l1 = int(match.group("p1")), int(match.group("l1"))
        p2 = int(match.group("p2")) if match.group("p2") else p1
        l2 = int(match.group("l2")) if match.group("l2") else l1
        if (p2, l2) < (p1, l1):
            p2, l2 = p1, l1
        return (p1, l1), (p2, l2)
    return None


# A court filing's header over a filed excerpt ("Case 1:23-cv-00417 ECF No. 9-5, PageID.499
# Filed 06/02/23 Page 145 of 172", "Document 38-2 Filed ..."): its page count is the filing's,
# never the transcript's, and the transcript's own number stands below it.
_FILING_HEADER = re.compile(r"\bFiled\b.*\bPage\s+\d+\s+of\s+\d+|\bPageID\b|\bECF\s+No\.", re.I)


def _page_number(text: str, fallback: int) -> int:
    lines = [ln for ln in text.splitlines() if ln.strip() and not _FILING_HEADER.search(ln)]
    labels = [
        match
        for line in lines[:3] + lines[-3:]
        if "page" in line.lower() and (match := _PAGE_LABEL.match(line))
    ]
    # A transcript's own "Page 38" before a count of pages ("Page 5 of 14"), which a court
    # filing's header prints over an excerpt filed as its exhibit.
    for match in sorted(labels, key=lambda m: " of " in m.group(0).lower()):
        return int(match.group(1))
    # A number alone at the top (on the first line, or under a caption's line or two above the
    # numbered lines, as a trial transcript prints "203" at the right) is the page's number
    # when no line could be numbered so, or when the lines counted from 1 follow it ("24"
    # above " 1  Q. Trooper ...").
    for k, line in enumerate(lines[:3]):
        numbered = _LINE.match(line)
        if k > 0 and numbered is not None and numbered.group("text"):
            break  # the lines have begun: no number above them stands alone
        lone = _LONE.match(line)
        first_line = _LINE.match(lines[k + 1]) if len(lines) > k + 1 else None
        if lone and (
            int(lone.group(1)) > LAST_LINE
            or (
                first_line is not None and first_line.group("n") == "1" and first_line.group("text")
            )
        ):
            return int(lone.group(1))
    return fallback


@dataclass
class Unread:
    """What a transcript's condensed sheets print that cannot be read by line: pages whose
    header stands over no numbered lines, and sheets with numbered lines under no header (by
    packet page index)."""

    unnumbered: dict[int, int]  # transcript page number -> packet page index
    headless: list[int]


def transcript_lines(
    index: PacketIndex, pages: list[int], unread: Unread | None = None
) -> dict[int, list[Line]]:
    """The numbered lines of each transcript page, by the transcript's page number (a
    condensed sheet's mini-pages each by its own number: apps.verification.sheets); what a
    sheet prints that cannot be read so is noted in `unread`."""
    found: dict[int, list[Line]] = {}
    for record in pages:
        page = index.pages[record]
        minis = sheet_pages(page.text)
        if minis is not None:
            for mini in minis:
                if mini.number is None:
                    if unread is not None:
                        unread.headless.append(record)
                elif mini.lines:
                    read = [Line(mini.number, ln.number, record, ln.span) for ln in mini.lines]
                    found.setdefault(mini.number, read)
                elif unread is not None:
                    unread.unnumbered.setdefault(mini.number, record)
            continue
        number = _page_number(page.text, page.page_number)
        lines: list[Line] = []
        for match in _LINE.finditer(page.text):
            n = int(match.group("n"))
            if not lines and n == number and not match.group("text"):
                continue  # the page's own number alone above its lines ("24")
            if 1 <= n <= LAST_LINE and (not lines or n > lines[-1].number):
                start = match.start("text") if match.group("text") else match.end()
                lines.append(Line(number, n, record, (start, match.end())))
        if len(lines) >= 5:
            found.setdefault(number, lines)
    return found


def _transcript_of(finding: Finding, index: PacketIndex) -> list[int] | None:
    """The pages of the transcript a page:line cite names: for a Bates cite ("SKP0001005 at
    27:4-8"), the one document its pages belong to, when the page check supported them (a
    wrong page stays the page check's finding); else the one document titled as the cited
    deposition or transcript."""
    claim = finding.claim
    if claim.bates:
        if finding.status != "supported":
            return None
        documents: set[int] = set()
        for ref in claim.bates:
            documents.update(index.pages[p].document_id for p in index.bates_indexes(ref)[0])
        if len(documents) != 1:
            return None
        return index.document_pages(documents.pop())
    if claim.exhibit is not None or claim.title is not None:
        # "Ex. 2003, 4:5-8": the lines of the exhibit the cite resolved to (its finding's
        # page's document), unless that prints a patent's columns (read by column and line).
        from apps.verification import patents

        if finding.page is None:
            return None
        document = index.document_pages(finding.page.document_id)
        return None if patents.columns(index, document) else document
    if not set(_pleading_words(claim.cited_as or claim.text)) & {"deposition", "transcript"}:
        return None  # page:line names a transcript's lines; a pleading has none
    return pleading_pages(claim, index)


def cited_pages(claim: Claim, index: PacketIndex) -> list[int]:
    """The packet pages printing the lines that a page:line cite with no Bates number names
    ("Okafor Dep. 31:17-20"), in order; none when its transcript or those lines are not in the
    packet. So that such a cite vouches for its sentence beside the sentence's other cites
    (checks.support.group_pages), as a Bates cite does."""
    wanted = cited_lines(claim.pins)
    if claim.bates or wanted is None:
        return []
    if not set(_pleading_words(claim.cited_as or claim.text)) & {"deposition", "transcript"}:
        return []
    pages = pleading_pages(claim, index)
    if not pages:
        return []
    first, last = wanted
    found: dict[int, None] = {}
    for line in _lines_of(index, pages).ordered:
        if first <= (line.page, line.number) <= last:
            found[line.record] = None
    return list(found)


class _Transcript:
    """A transcript as read once per packet index (`_lines_of`): its numbered lines, and each
    line's content terms read when first asked for, a page's lines at a time.

    `lines_with(term)` reads only the lines of pages that the packet's index says hold the
    term. A line's terms are words of its page, which the index holds where the page is
    `indexed_as_written`; the lines of other pages (OCR, a word broken at a line's end, other
    scripts) and of condensed sheets (lines beside one another) are always read."""

    def __init__(self, index: PacketIndex, by_page: dict[int, list[Line]], unread: Unread):
        self.index = index
        self.by_page = by_page  # its numbered lines by its page number
        self.ordered = [line for number in sorted(by_page) for line in by_page[number]]
        self.unread = unread  # what its sheets print that cannot be read by line
        self._at_record: dict[int, list[int]] = {}  # packet page -> its lines in `ordered`
        pages_of: dict[int, set[int]] = {}
        for at, line in enumerate(self.ordered):
            self._at_record.setdefault(line.record, []).append(at)
            pages_of.setdefault(line.record, set()).add(line.page)
        self._always = [
            r for r in self._at_record if len(pages_of[r]) > 1 or not index.indexed_as_written(r)
        ]
        self._terms: list[frozenset[str] | None] = [None] * len(self.ordered)
        self._lines_with: dict[str, list[int]] = {}
        self._table: dict[str, str] = index.derived("content terms of words", dict)

    def terms(self, at: int) -> frozenset[str]:
        """The content terms of the line at `at` in `ordered`."""
        found = self._terms[at]
        if found is not None:
            return found
        record = self.ordered[at].record
        text = self.index.pages[record].text
        mine: frozenset[str] = frozenset()
        for k in self._at_record[record]:  # every line of its page
            a, b = self.ordered[k].span
            read = self._terms[k] = frozenset(
                nz.content_terms(nz.token_list(text[a:b]), self._table)
            )
            if k == at:
                mine = read
        return mine

    @property
    def records(self) -> KeysView[int]:
        """The packet pages its lines stand on."""
        return self._at_record.keys()

    def lines_with(self, term: str) -> list[int]:
        """The positions in `ordered` of the lines holding `term`, in order."""
        known = self._lines_with.get(term)
        if known is None:
            records = set(self._always)
            records.update(p for p in self.index.pages_with_term(term) if p in self._at_record)
            known = self._lines_with[term] = sorted(
                at for r in records for at in self._at_record[r] if term in self.terms(at)
            )
        return known


def _lines_of(index: PacketIndex, pages: list[int]) -> _Transcript:
    return index.derived(("transcript lines", pages[0]), lambda: _read_lines(index, pages))


def _read_lines(index: PacketIndex, pages: list[int]) -> _Transcript:
    unread = Unread({}, [])
    return _Transcript(index, transcript_lines(index, pages, unread), unread)


def _best_window(
    transcript: _Transcript,
    weights: dict[str, float],
    size: int,
    avoid: frozenset[tuple[int, int]] = frozenset(),
    floor: float = WRONG_OTHER,
) -> tuple[int | None, float]:
    """The first stretch of `size` lines (its start in `ordered`) that holds the most of the
    terms' weight, skipping stretches over a line of `avoid` (page, line), and its weight;
    None when no stretch holds WRONG_OTHER of the weight (the least the callers act on).

    Only stretches that can reach that share are weighed: a stretch holding none of the
    heaviest terms whose weight passes the rest's (`_needed`) holds less than WRONG_OTHER of
    the whole, so each stretch weighed is over a line holding one of them."""
    last_start = max(0, len(transcript.ordered) - size)
    starts = sorted(
        {
            k
            for term in _needed(weights, floor)
            for at in transcript.lines_with(term)
            for k in range(max(0, at - size + 1), min(at, last_start) + 1)
        }
    )
    total = sum(weights.values())
    best, best_score = None, 0.0
    for k in starts:
        window = transcript.ordered[k : k + size]
        if avoid and any((line.page, line.number) in avoid for line in window):
            continue
        value = _weight(transcript, weights, k, size)
        if value > best_score:
            best, best_score = k, value
    if best is None or best_score / total < floor:
        return None, 0.0
    return best, best_score


def _needed(weights: dict[str, float], floor: float = WRONG_OTHER) -> list[str]:
    """The heaviest terms, as few as hold more than 1 - `floor` of the weight: a stretch
    without any of them holds less than `floor` of it."""
    total = sum(weights.values())
    needed: list[str] = []
    held = 0.0
    for term in sorted(weights, key=lambda t: -weights[t]):
        needed.append(term)
        held += weights[term]
        if held > (1 - floor + 1e-9) * total:  # strictly, past rounding
            break
    return needed


QUESTION_LINES = 6  # how far back an answer's question is looked for
_ANSWER = re.compile(r"[ \t]*A[.:][ \t]")
_QUESTION = re.compile(r"[ \t]*Q[.:][ \t]")


def _question_before(index: PacketIndex, ordered: list[Line], at: int) -> int:
    """Where the question of the answer starting at `ordered[at]` starts (`at` itself when the
    line opens no answer, or no question is near before it)."""

    def text(k: int) -> str:
        line = ordered[k]
        return index.pages[line.record].text[line.span[0] : line.span[1]]

    if not _ANSWER.match(text(at)):
        return at
    for k in range(at - 1, max(-1, at - 1 - QUESTION_LINES), -1):
        if _ANSWER.match(text(k)):
            return at  # another answer first: the question is further off
        if _QUESTION.match(text(k)):
            return k
    return at


def _common_terms(transcript: _Transcript, weights: dict[str, float]) -> set[str]:
    """The terms printed on half the transcript's packet pages or more (of two at least), by
    the pages' terms: no line is read for it."""
    records = transcript.records
    if len(records) < 2:
        return set()
    index = transcript.index
    return {
        t for t in weights if 2 * sum(1 for r in records if t in index.stems[r]) >= len(records)
    }


def _held(transcript: _Transcript, weights: dict[str, float], first: int, size: int) -> set[str]:
    """The terms that the `size` lines from `first` hold."""
    stems: frozenset[str] = frozenset().union(
        *(transcript.terms(k) for k in range(first, min(first + size, len(transcript.ordered))))
    )
    return {t for t in weights if t in stems}


def _weight(transcript: _Transcript, weights: dict[str, float], first: int, size: int) -> float:
    """The weight of the terms that the `size` lines from `first` hold."""
    held = _held(transcript, weights, first, size)
    return sum(w for t, w in weights.items() if t in held)  # (in the terms' order: one sum)


_BATES_LINES = re.compile(
    r":(?P<l1>\d{1,6})(?:[ \t]*[-\u2013][ \t]*(?:(?P<p2>\d{1,6}):)?(?P<l2>\d{1,6}))?"
)


def _bates_lines(finding: Finding, index: PacketIndex) -> list[_Wanted]:
    """The lines of a Bates page:line cite ("ACME000123:4-9": lines 4-9 of the transcript page
    stamped ACME000123), on that page's own transcript page number; on a condensed sheet, those
    lines of each transcript page it prints (the cite does not say which), in sheet order; none
    for any other cite, or one of several pages."""
    claim = finding.claim
    if not claim.bates:
        return []
    match = next((m for p in claim.pins if (m := _BATES_LINES.fullmatch(p))), None)
    if match is None:
        return []
    cited = [p for ref in claim.bates for p in index.bates_indexes(ref)[0]]
    if match.group("p2") is not None and len(cited) >= 2:
        # "RR 106:21-107:12": from a line of the first page to one of the last
        numbers_of = [_page_number(index.pages[p].text, index.pages[p].page_number) for p in cited]
        first, last = int(match.group("l1")), int(match.group("l2"))
        return [((numbers_of[0], first), (numbers_of[-1], last))]
    if len(cited) != 1:
        return []
    page = index.pages[cited[0]]
    minis = sheet_pages(page.text) or []
    numbers = [m.number for m in minis if m.number is not None and m.lines]
    numbers = numbers or [_page_number(page.text, page.page_number)]
    first = int(match.group("l1"))
    last = max(first, int(match.group("l2") or first))
    return [((number, first), (number, last)) for number in numbers]


def _testimony_elsewhere(finding: Finding, context: Context, wanted: _Wanted) -> Finding:
    """A Bates page:line cite whose page the page check found wrong: the page check's finding,
    naming the page and lines of the transcript where the testimony is (the transcript of the
    page that check names, else of the cited page), as a deposition's page:line cite does."""
    index = context.index
    claim = finding.claim
    records = [index.page_index(finding.page)] if finding.page is not None else []
    records += [p for ref in claim.bates for p in index.bates_indexes(ref)[0]]
    span = context.segment(claim)
    (p1, l1), (p2, l2) = wanted
    size = l2 - l1 + 1 if p1 == p2 else LAST_LINE - l1 + 1 + l2
    size = max(1, min(size, MAX_LINES))
    for record in dict.fromkeys(records):
        pages = index.document_pages(index.pages[record].document_id)
        transcript = _lines_of(index, pages)
        if not transcript.by_page:
            continue
        found = _located(context, span, transcript, size)
        if found is None:
            continue
        lines, what = found
        name = index.pages[pages[0]].filename
        return replace(
            finding,
            message=f"{finding.message}; {what} at {_label(lines)} of {name}",
            page=index.pages[lines[0].record],
            excerpt=excerpt_of(index.pages[lines[0].record].text, *_lines_span(lines)),
            match=_lines_span(lines),
        )
    return finding


def _quoted_lines(
    context: Context, span: tuple[int, int], ordered: list[Line]
) -> tuple[list[Line], QuoteHit] | None:
    """The lines of a transcript (`ordered`) that the first quotation of the segment `span`
    found on them stands on, and where it was found; None when no quotation is found there."""
    index = context.index
    for quote in context.members(span, ("quote",)):
        segments = quote_segments(quote.quote or quote.text)
        if sum(len(s) for s in segments) < 4:
            continue
        hit = index.find_quote(segments, within=sorted({line.record for line in ordered}))
        if hit is None:
            continue
        record = index.page_index(hit.page)
        on = [
            line
            for line in ordered
            if line.record == record and line.span[0] < hit.span[1] and hit.span[0] < line.span[1]
        ]
        if on:
            # A condensed sheet read row by row: the span also crosses the lines of the
            # mini-pages beside the quotation's; its lines are those of the page it starts on
            # (and the line it ends on).
            first = min(on, key=lambda line: line.span[0])
            ends = [line for line in on if line.span[0] < hit.span[1] <= line.span[1]]
            on = [line for line in on if line.page == first.page or line in ends[-1:]]
            return on, hit
    return None


def _located(
    context: Context, span: tuple[int, int], transcript: _Transcript, size: int
) -> tuple[list[Line], str] | None:
    """The lines of a transcript that carry the segment `span`: a quotation's, or the stretch
    of `size` lines holding most of its key terms (at least WRONG_OTHER of their weight), and
    what they carry; None when no lines do."""
    index = context.index
    quoted = _quoted_lines(context, span, transcript.ordered)
    if quoted is not None:
        return quoted[0], "the quotation is"
    terms = [t for t in context.key_terms(span) if index.document_frequency(t)]
    if len(terms) < 2:
        return None
    weights = {t: index.idf(t) for t in terms}
    start, best_score = _best_window(transcript, weights, size)
    if start is None or best_score / sum(weights.values()) < WRONG_OTHER:
        return None
    best = transcript.ordered[start : start + size]
    # The stretch's lines that hold its terms, from the first to the last.
    holding = [k for k in range(len(best)) if transcript.terms(start + k) & weights.keys()]
    return best[holding[0] : holding[-1] + 1], "the testimony is"


# A Bates cite's parenthetical naming the transcript's page and lines it stamps ("2-ER-12
# (Varga Dep. 40:23-25)", "ACME000031 (Tr. 41:2-9)").
_STAMPED_LINES = re.compile(
    r"[ \t]*[(\[][ \t]*[^()\[\]\n]{1,60}?[ \t,]+(?:at[ \t]+)?(?P<p1>\d{1,5}):\d{1,3}"
    r"(?:[ \t]*[-\u2013][ \t]*(?:(?P<p2>\d{1,5}):)?\d{1,3})?[ \t]*[)\]]"
)


# ... or before it, joined by a comma ("(Garza Dep. 38:3-9, PLTF 000230)").
_LINES_BEFORE = re.compile(
    r"(?:Dep|Depo|Tr|Transcript)\.?[ \t]+(?:at[ \t]+)?(?P<p1>\d{1,5}):\d{1,3}"
    r"(?:[ \t]*[-\u2013][ \t]*(?:(?P<p2>\d{1,5}):)?\d{1,3})?[ \t]*,[ \t]*$"
)


def stamped(finding: Finding, context: Context) -> Finding:
    """A Bates cite with the transcript page and lines it stands for, after it in parentheses
    or before it with a comma: the Bates pages must be the transcript's pages cited. A stamped
    page printing another page number of the transcript is the wrong page, whatever its words
    (the lines are checked on their own), and the finding names the page of the document that
    prints the page cited."""
    claim, index = finding.claim, context.index
    written = _STAMPED_LINES.match(context.text, claim.end) or _LINES_BEFORE.search(
        context.text, max(0, claim.start - 60), claim.start
    )
    if not claim.bates or written is None or finding.status == "unsupported" or not finding.page:
        return finding
    first = int(written.group("p1"))
    last = max(first, int(written.group("p2") or first))
    cited = [p for ref in claim.bates for p in index.bates_indexes(ref)[0]]
    numbers = {p: _printed_pages(index, p) for p in cited}
    if not cited or not all(numbers.values()):
        return finding
    if any(first <= n <= last for found in numbers.values() for n in found):
        return finding
    document = index.pages[cited[0]].document_id
    right = [
        p
        for p in index.document_pages(document)
        if any(first <= n <= last for n in _printed_pages(index, p))
    ]
    shown = ", ".join(
        f"{index.label(p)} is its page {'-'.join(map(str, sorted(n)[:: max(1, len(n) - 1)]))}"
        for p, n in numbers.items()
    )
    where = f"; {first}" + (f"-{last}" if last > first else "")
    where += f" is on {pages_label(index, right)}" if right else " is on no page of it"
    return Finding(
        claim,
        "unsupported",
        "record_cite_page",
        f"{claim.text} stamps another page of the transcript than the one cited ({shown}{where})",
        page=index.pages[right[0]] if right else finding.page,
    )


def _printed_pages(index: PacketIndex, page: int) -> set[int]:
    """The transcript's page numbers a packet page prints over numbered lines (a condensed
    sheet's several); none where it prints none (its place in the document is no number of
    the transcript's)."""
    text = index.pages[page].text
    if sheet_pages(text) is None and _page_number(text, -1) == -1:
        return set()
    return set(transcript_lines(index, [page]))


def lined(finding: Finding, context: Context) -> Finding:
    """The finding on a record cite, refined by its page:line pin (see the module)."""
    claim = finding.claim
    cited = cited_lines(claim.pins) or _whole_pages(claim)
    choices = [cited] if cited else _bates_lines(finding, context.index)
    if not choices:
        return finding
    if claim.bates and finding.status == "unsupported" and finding.check == "record_cite_page":
        return _testimony_elsewhere(finding, context, choices[0])
    # A sheet's Bates page with lines: the transcript page of the sheet whose lines carry the
    # sentence, else the first.
    found = [_lined(finding, context, wanted) for wanted in choices]
    return next((f for f in found if f.status == "supported"), found[0])


def _whole_pages(claim: Claim) -> _Wanted | None:
    """A transcript cited by its pages alone ("N.T., 3/15/2023, at 203", "Tr. at 45-46"): all
    the lines of those pages (WHOLE_PAGE as their lines: `_lined` reads them as the
    first page's first line and the last page's last), or None for any other cite."""
    if claim.bates or claim.exhibit is not None or claim.title is not None:
        return None
    if not set(_pleading_words(claim.cited_as or claim.text)) & {"deposition", "transcript"}:
        return None
    numbers = page_numbers(claim.pins)
    if not numbers or numbers != list(range(numbers[0], numbers[-1] + 1)):
        return None
    return (numbers[0], WHOLE_PAGE), (numbers[-1], WHOLE_PAGE)


def _lined(finding: Finding, context: Context, wanted: _Wanted) -> Finding:
    claim = finding.claim
    index = context.index
    pages = _transcript_of(finding, index)
    if not pages:
        return finding
    name = index.pages[pages[0]].filename
    transcript = _lines_of(index, pages)
    by_page, unread = transcript.by_page, transcript.unread
    (p1, l1), (p2, l2) = wanted
    label = f"{p1}:{l1}" + (f"-{p2}:{l2}" if p2 != p1 else f"-{l2}" if l2 != l1 else "")
    for page_number in (p1, p2):
        if page_number in by_page:
            continue
        if page_number in unread.unnumbered:
            record = index.pages[unread.unnumbered[page_number]]
            return _finding(
                finding,
                "needs_review",
                f"page {page_number} of {name} (on its page {record.page_number}) has no "
                f"numbered lines that can be read; {label} cannot be located",
                record,
            )
        if unread.headless:
            record = index.pages[unread.headless[0]]
            return _finding(
                finding,
                "needs_review",
                f"{name} has no page {page_number} with numbered lines, and its page "
                f"{record.page_number} prints numbered lines under no page number; {label} "
                "cannot be located",
                record,
            )
    if not by_page:
        return _finding(
            finding,
            "needs_review",
            f"{name} has no numbered lines; {label} cannot be located",
            index.pages[pages[0]],
        )
    for page_number in (p1, p2):
        if page_number not in by_page:
            have = sorted(by_page)
            return _finding(
                finding,
                "unsupported",
                f"{name} has no page {page_number} with numbered lines (its pages: "
                f"{have[0]}-{have[-1]})",
                index.pages[pages[0]],
            )
    if l1 == WHOLE_PAGE:  # whole pages (`_whole_pages`)
        l1, l2 = by_page[p1][0].number, by_page[p2][-1].number
        label = f"page {p1}" if p1 == p2 else f"pages {p1}-{p2}"
    ordered = transcript.ordered
    at = [k for k, line in enumerate(ordered) if (p1, l1) <= (line.page, line.number) <= (p2, l2)]
    cited = [ordered[k] for k in at]
    last = by_page[p2][-1].number
    if l2 > last or not cited:
        return _finding(
            finding,
            "unsupported",
            f"{name} page {p2} ends at line {last}; {label} is not on it",
            index.pages[by_page[p2][0].record],
        )
    cited = cited[:MAX_LINES]
    held = {(line.page, line.number) for line in cited}
    span = context.segment(claim)

    quoted = _quoted_lines(context, span, ordered)
    if quoted is not None:
        on, hit = quoted
        if not {(line.page, line.number) for line in on} & held:
            return _finding(
                finding,
                "unsupported",
                f"the quotation is at {_label(on)} of {name}, not at {label}",
                hit.page,
                hit.span,
            )
        return _finding(
            finding, "supported", f"{label} of {name} carries the quotation", hit.page, hit.span
        )
    if any(len(quote_words(q)) >= SHORT_QUOTE for q in context.members(span, ("quote",))):
        # A quotation no line of the transcript holds decides nothing of the cite (it is
        # flagged on its own, misquoted or invented); the words around it, who said it ("the
        # engineer conceded"), do not place the testimony either.
        first = cited[0]
        return _finding(
            finding,
            "needs_review",
            f"{label} of {name}: the sentence's quotation is on none of its lines (see the "
            "quotation's finding); the lines are not judged by the words around it",
            index.pages[first.record],
        )
    terms = [t for t in context.key_terms(span) if index.document_frequency(t)]
    if len(terms) >= 2:
        weights = {t: index.idf(t) for t in terms}
        total = sum(weights.values())

        # An answer is read with its question ("Q. What would it cost to redo the north and
        # west walls?" / "A. Call it $46,000."): the lines cited from the answer hold the
        # question's words too.
        lead = _question_before(index, ordered, at[0])
        size = len(cited) + at[0] - lead
        held |= {(line.page, line.number) for line in ordered[lead : at[0]]}
        here = _weight(transcript, weights, lead, size)
        # (the cited lines holding none of the sentence's terms, a stretch holding a third of
        # them is the testimony's place: a few lines say less than a page; nor do the words the
        # transcript prints on half its pages or more, its parties' and its subject's names)
        common = _common_terms(transcript, weights)
        own = _held(transcript, weights, lead, size) - common
        floor = WRONG_ALONE if not own else WRONG_OTHER
        start, best_score = _best_window(transcript, weights, size, frozenset(held), floor)
        best = None if start is None else ordered[start : start + size]
        if (
            best is not None
            and best_score / total < WRONG_OTHER
            and len(_held(transcript, weights, start or 0, size)) < 3
        ):
            best = None  # (on a lesser share, three of the sentence's terms at least)
        # (against another stretch, the lines cited count: their question adds no weight)
        answer = here if lead == at[0] else _weight(transcript, weights, at[0], len(cited))
        if best is not None and best_score / total >= floor and answer < WRONG_RATIO * best_score:
            first = best[0]
            return _finding(
                finding,
                "unsupported",
                f"{label} of {name} does not carry the sentence's words; {_label(best)} does",
                index.pages[first.record],
                (
                    first.span[0],
                    best[-1].span[1] if best[-1].record == first.record else first.span[1],
                ),
            )
        if here / total >= WRONG_OTHER:
            first = cited[0]
            return _finding(
                finding,
                "supported",
                f"{label} of {name} carries the sentence's words",
                index.pages[first.record],
                (
                    first.span[0],
                    cited[-1].span[1] if cited[-1].record == first.record else first.span[1],
                ),
            )
    if finding.check != "record_cite_unstamped":
        return finding  # the page check's finding of a Bates cite stands
    # A cite of lines alone, found, whose lines carry too little of the sentence for either
    # answer: a person reads them (the finding points at them, not at "no Bates page").
    first = cited[0]
    return _finding(
        finding,
        "needs_review",
        f"{label} of {name} holds too few of the sentence's words to confirm or refute it; "
        "read the lines",
        index.pages[first.record],
        (first.span[0], cited[-1].span[1] if cited[-1].record == first.record else first.span[1]),
    )


def _lines_span(lines: list[Line]) -> tuple[int, int]:
    """The span of `lines` on the page of the first (to its page's last line when they run
    onto another page)."""
    first = lines[0]
    last = [line for line in lines if line.record == first.record][-1]
    return first.span[0], last.span[1]


def _label(lines: list[Line]) -> str:
    first, last = lines[0], lines[-1]
    if first.page == last.page:
        tail = f"-{last.number}" if last.number != first.number else ""
        return f"{first.page}:{first.number}{tail}"
    return f"{first.page}:{first.number}-{last.page}:{last.number}"


def _finding(
    finding: Finding,
    status: str,
    message: str,
    page: object,
    match: tuple[int, int] | None = None,
) -> Finding:
    text = getattr(page, "text", "")
    excerpt = excerpt_of(text, *match) if match else excerpt_of(text, 0, 160)
    return replace(
        finding,
        status=status,  # type: ignore[arg-type]  # one of checks.Status
        check="record_cite_lines",
        message=message,
        page=page,  # type: ignore[arg-type]  # a PageRecord
        excerpt=excerpt,
        match=match,
        found_value=None,
    )


__all__ = ["Line", "cited_lines", "cited_pages", "lined", "transcript_lines"]
