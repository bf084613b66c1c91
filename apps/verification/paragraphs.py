"""Paragraph pins of record cites (pure, no Django): "ACME000022 ¶ 4", "Ex. 3 at ACME000022
¶¶ 4-6", "Compl. ¶ 4".

`pinned(finding, context)` refines the page-level finding of a record cite
(`checks.record.record_cite`) that pins numbered paragraphs:

1. The pages: a Bates cite's, when the page-level check supported it (an unsupported or
   contradicted cite stays so: its pages are wrong already). A pleading cite without Bates
   pages ("Compl. ¶ 4", "Smith Decl. ¶ 2") is left for review, unless exactly one document of
   the packet is titled as that pleading (its file name holds the pleading's words: "Compl."
   -> "complaint", "Am. Compl." -> "amended" and "complaint", "Smith Decl." -> "smith" and
   "declaration"): then its pages.
2. The paragraphs: a numbered paragraph starts a line with its number and a period or bracket
   ("4.", "4)") or after a pilcrow ("¶ 4"); on OCR pages also with a comma for the period; in
   a document that marks none so, in brackets ("(4)", `_numbers_in_brackets`). It
   runs to the next such line, over a page break within the cited pages. Pages with no
   numbered paragraph: needs review (an unnumbered paragraph cannot be located).
3. A pinned paragraph missing from the pages: unsupported, naming the page of the document
   that has it, or the paragraphs the pages have; a number inside the pages' numbering that is
   not marked (a gap: another style, or a marker lost to OCR) is left for review. A paragraph
   that began on an earlier page of the document and runs onto the cited page is on it.
4. The sentence (the words the cite vouches for, `checks` segments): a quotation found on the
   pages in another paragraph than the pinned ones, or key terms that the pinned paragraphs
   lack while another paragraph of the pages holds them: unsupported, naming that paragraph.
   Dates and amounts are not judged by paragraph (a dated signature line or a caption stands
   outside every paragraph); their own claims check them on the cited pages.
5. Otherwise supported, with the paragraph's words (or the quotation, date or amount found in
   it) as the match.

A pleading cite with a page pin and no paragraph pin ("Compl. at 3") is supported when page 3
of the one document titled as that pleading carries the sentence's quotation, date or amount;
otherwise it stays for review, since a pleading's own page numbers need not be its file's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from apps.verification import normalise as nz
from apps.verification.claims import Claim
from apps.verification.claims.record import LETTER_VOLUME_TRANSCRIPT
from apps.verification.dates import same_day
from apps.verification.findings import Finding
from apps.verification.index import OCR, PacketIndex, ocr_read, pages_label
from apps.verification.quoting import quote_segments
from apps.verification.spans import excerpt_of

MAX_PARAGRAPHS = 50  # a range "¶¶ 4-60" is read up to this many paragraphs
# The pin is wrong when another paragraph holds at least WRONG_OTHER of the key terms' weight,
# two terms or more that the pinned paragraphs lack, and the pinned paragraphs under
# WRONG_RATIO of what that paragraph holds (paragraphs of one document share its words:
# "Tenant" is in most paragraphs of a lease).
WRONG_OTHER = 0.5
WRONG_RATIO = 1 / 3
SHORT_QUOTE = 4  # words: a shorter quotation does not place a sentence in a paragraph
LOOK_BACK = 3  # pages before the cited ones where a paragraph running onto them may begin

# ("{¶ 12}", "[¶ 12]": Ohio's and Wisconsin's opinions number their paragraphs so.)
_MARKER = re.compile(
    r"(?m)^[ \t]*(?:[\[{]?\u00b6[ \t]*(?P<a>\d{1,3})(?!\d)|(?P<b>\d{1,3})[ \t]?[.)](?=\s))"
)
_OCR_MARKER = re.compile(
    r"(?m)^[ \t]*(?:[\[{]?\u00b6[ \t]*(?P<a>\d{1,3})(?!\d)|(?P<b>\d{1,3})[ \t]?[.,)](?=\s))"
)
# An opinion's paragraph: "¶ 13" at a line's start, also in brackets ("[¶ 13]", "{¶ 13}").
_PILCROW = re.compile(r"(?m)^[ \t]*[\[{]?\u00b6[ \t]*(?P<a>\d{1,4})(?!\d)")
# A paragraph numbered in brackets, "(4)" at a line's start: the paragraphs' numbers only in a
# document that numbers none of its paragraphs otherwise (where it does, "(4)" is a clause
# inside one: "4. Payment. (1) The Buyer shall ...").
_BRACKETED = re.compile(r"(?m)^[ \t]*\((?P<a>\d{1,3})\)(?=\s)")
_PIN_NUMBERS = re.compile(r"(\d+)(?:\s*[-\u2013]\s*(\d+))?")
# Pleading abbreviations (Bluebook, table BT1) and the words of the document's title.
_PLEADINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"Am\.\s+Compl", ("amended", "complaint")),
    (r"Compl|Complaint", ("complaint",)),
    (r"Countercl", ("counterclaim",)),
    (r"Answer|Ans", ("answer",)),
    (r"Petition|Pet", ("petition",)),
    (r"Mem", ("memorandum",)),
    (r"Mot", ("motion",)),
    (r"Opp['\u2019]?n", ("opposition",)),
    (r"Reply", ("reply",)),
    (r"Decl", ("declaration",)),
    (r"Aff", ("affidavit",)),
    (r"Dep", ("deposition",)),
    # ("HT at 45", "HT 112": the Merit Systems Protection Board's hearing transcript)
    (r"Hr['\u2019]g\s+Tr|HT(?:\s+\d{1,4}(?:\s*[-\u2013]\s*\d{1,4})?)?", ("hearing", "transcript")),
    (r"N\.T", ("transcript",)),  # Pennsylvania's notes of testimony
    # Arizona's reporter's transcript ("RT 3/5/24 at 43"): the file naming "rt" and its day,
    # or the transcript of its day (`pleading_pages`)
    (r"RT", ("transcript", "rt")),
    (r"Tr|TR", ("transcript",)),
    (r"Resp", ("response",)),
    (r"Br", ("brief",)),
    (r"Stip", ("stipulation",)),
    (r"Interrog", ("interrogator",)),
    # The court's presentence report (a sentencing memorandum's "PSR ¶ 42"): the court's
    # record, like a pleading, seldom in the packet.
    (r"PSR|Presentence\s+Report", ("presentence",)),
)
# A file titled so is a transcript of testimony: "Tr. 47:4" cites a deposition's file too
# (the one of the packet), and "Dep." a file titled as a transcript.
# ("dep" as a file names it, "pruszynski-discovery-dep-excerpt.pdf": a form of three letters
# is matched whole, a longer one as a word's start.)
_SAME_AS = {
    # ("nt": Pennsylvania's notes of testimony, "08-nt-2023-03-15-excerpt.pdf")
    "transcript": ("transcript", "deposition", "depo", "dep", "nt", "testimony"),
    "deposition": ("deposition", "depo", "dep", "transcript"),
    "vol": ("vol", "volume", "v"),
}
# A volume's number as a file may write it: "2" or "ii" (_NUMERALS, after _ROMAN).
_VOLUME = re.compile(r"\s+[Vv]ol(?:ume)?\.?\s+(?P<n>[IVXivx]{1,5}|\d{1,2}),?$")
# ("Tr. II:112": a Roman volume before its page, `claims.record`; the page is the pin)
_VOLUME_PAGE = re.compile(r"\s+(?P<n>[IVX]{1,5}):\s?\d{1,4}(?:\s*[-\u2013]\s*\d{1,4})?$")
_ROMAN = {
    "I": 1,
    "II": 2,
    "III": 3,
    "IV": 4,
    "V": 5,
    "VI": 6,
    "VII": 7,
    "VIII": 8,
    "IX": 9,
    "X": 10,
}
_NUMERALS = {str(n): (str(n), roman.lower()) for roman, n in _ROMAN.items()}
# A transcript cited by its day ("N.T., 3/15/2023, at 203", "N.T. Mar. 15, 2023 at 4"): its
# file names the day ("...-2023-03-15-...", "...-mar-15-2023-..."), read as year, month, day.
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_DAY = re.compile(
    r",?\s+(?:(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4}|\d{2})"
    r"|(?P<month>[A-Z][a-z]{2})[a-z]*\.?\s+(?P<day>\d{1,2}),\s+(?P<year>\d{4})),?"
    r"(?:\s+\d{1,4}(?:[-\u2013]\d{1,4})?)?$"  # (its page without "at": "N.T. 3/14/23, 112")
)
# A transcript designated by number, as New Jersey's briefs list and cite them (`claims.record`:
# "1T45:19-21" is read as "1T (Transcript of bench trial, March 5, 2024)").
_DESIGNATED = re.compile(r"(?P<n>\d{1,2})T(?:[ \t]+\((?P<what>[^\n]*)\))?$")
_PAGE_WORD_AFTER_DAY = re.compile(
    r"(?<=\d),?[ \t]+(?:at[ \t]+)?pp?\.(?:[ \t]*\d{1,4}(?:[ \t]*[-\u2013][ \t]*\d{1,4})?)?$"
)
_DESIGNATION_WORD = re.compile(r"\d{1,2}t|rp|rt")
_DATED_REPORT = re.compile(r"V?RP\s*\((?P<day>[^()]*\d{4})\)")
_NAMED = ("declaration", "affidavit", "deposition")  # "Smith Decl.": the person's name counts


class Context(Protocol):
    """What `pinned` reads of the checks' context (`checks.context.Context`)."""

    index: PacketIndex
    text: str

    def segment(self, cite: Claim) -> tuple[int, int]: ...

    def members(self, span: tuple[int, int], kinds: tuple[str, ...]) -> list[Claim]: ...

    def key_terms(self, span: tuple[int, int]) -> list[str]: ...

    def cite_pages(self, cite: Claim) -> list[int]: ...


@dataclass
class Paragraph:
    number: int
    parts: list[tuple[int, int, int]]  # (page index, start, end) in each page's text

    def text(self, index: PacketIndex) -> str:
        return "\n".join(index.pages[p].text[a:b] for p, a, b in self.parts)

    def holds(self, page: int, start: int, end: int) -> bool:
        return any(p == page and a <= start and end <= b for p, a, b in self.parts)


def paragraph_numbers(pins: Sequence[str]) -> list[int]:
    """The paragraphs a cite's pins name: "¶ 4" -> [4]; "¶¶ 4-6" -> [4, 5, 6]."""
    numbers: list[int] = []
    for pin in pins:
        if not pin.startswith("\u00b6"):
            continue
        for match in _PIN_NUMBERS.finditer(pin):
            first = int(match.group(1))
            last = int(match.group(2)) if match.group(2) else first
            if last < first:
                last = first
            for n in range(first, min(last, first + MAX_PARAGRAPHS - 1) + 1):
                if n not in numbers:
                    numbers.append(n)
    return numbers


def paragraphs_of(
    index: PacketIndex, pages: Sequence[int], *, pilcrow: bool = False
) -> list[Paragraph]:
    """The numbered paragraphs of `pages` (in that order); a paragraph open at the end of a
    page goes on at the top of the next page of the same document. `pilcrow`: only those
    marked "¶ 4" ("[¶ 4]", "{¶ 4}": Wisconsin's and Ohio's), each numbered above the last."""
    found: list[Paragraph] = []
    open_paragraph: Paragraph | None = None
    previous: int | None = None
    bracketed: dict[int, bool] = {}
    for page_index in pages:
        page = index.pages[page_index]
        text = nz.fold(ocr_read(page.text) if page.source == OCR else page.text)
        marker = _OCR_MARKER if page.source == OCR else _MARKER
        if page.document_id not in bracketed:
            bracketed[page.document_id] = _numbers_in_brackets(index, page.document_id)
        if bracketed[page.document_id]:
            marker = _BRACKETED
        if pilcrow:
            # Numbered upward: a "¶ 4" line quoting another paragraph is no paragraph's start.
            starts = []
            last = found[-1].number if found else 0
            for m in _PILCROW.finditer(text):
                if int(m.group("a")) > last:
                    last = int(m.group("a"))
                    starts.append((m.start(), last))
        else:
            starts = [(m.start(), int(m.group("a") or m.group("b"))) for m in marker.finditer(text)]
        follows = (
            previous is not None
            and index.pages[previous].document_id == page.document_id
            and index.pages[previous].page_number + 1 == page.page_number
        )
        if open_paragraph is not None and follows:
            head_end = starts[0][0] if starts else len(text)
            if text[:head_end].strip():
                open_paragraph.parts.append((page_index, 0, head_end))
        open_paragraph = None
        for k, (start, number) in enumerate(starts):
            end = starts[k + 1][0] if k + 1 < len(starts) else len(page.text)
            open_paragraph = Paragraph(number, [(page_index, start, end)])
            found.append(open_paragraph)
        previous = page_index
    return found


def _numbers_in_brackets(index: PacketIndex, document_id: int) -> bool:
    """Whether a document numbers its paragraphs "(1)", "(2)", ... only: no page of it marks a
    paragraph "4." or "¶ 4", and a page of it starts lines with "(N)". Read once a packet."""
    return index.derived(
        ("paragraphs in brackets", document_id), lambda: _read_brackets(index, document_id)
    )


def _read_brackets(index: PacketIndex, document_id: int) -> bool:
    texts = [index.pages[p] for p in index.document_pages(document_id)]
    folded = [nz.fold(ocr_read(p.text) if p.source == OCR else p.text) for p in texts]
    if any(
        (_OCR_MARKER if p.source == OCR else _MARKER).search(text)
        for p, text in zip(texts, folded, strict=True)
    ):
        return False
    return any(_BRACKETED.search(text) for text in folded)


def paragraphs_on(
    index: PacketIndex, pages: Sequence[int], *, pilcrow: bool = False
) -> list[Paragraph]:
    """The numbered paragraphs with words on `pages`, including one that began on an earlier
    page of the document (up to LOOK_BACK pages before) and runs on at the top of the first."""
    first = index.pages[pages[0]]
    document = index.document_pages(first.document_id)
    at = document.index(pages[0]) if pages[0] in document else 0
    lead: list[int] = []
    for earlier in reversed(document[max(0, at - LOOK_BACK) : at]):
        if lead and index.pages[lead[0]].page_number != index.pages[earlier].page_number + 1:
            break
        if not lead and index.pages[earlier].page_number + 1 != first.page_number:
            break
        lead.insert(0, earlier)
    cited = set(pages)
    return [
        p
        for p in paragraphs_of(index, [*lead, *pages], pilcrow=pilcrow)
        if any(q in cited for q, _, _ in p.parts)
    ]


def pleading_pages(claim: Claim, index: PacketIndex) -> list[int] | None:
    """The pages of the one document titled as the pleading `claim` cites, or None."""
    words = _pleading_words(claim.cited_as or claim.text)  # an Id. names the pleading cited
    if not words:
        return None
    found = index.derived(("pleading pages", words), lambda: _pleading_pages(index, words))
    if found is None and len(words) > 1 and _DESIGNATION_WORD.fullmatch(words[1]):
        # a designated transcript: the file naming its designation (with its day, or as a
        # transcript), else its day
        alternatives = (words[1:], words[:2], (words[0], *words[2:])) if len(words) > 2 else ()
        for named in alternatives:
            found = index.derived(
                ("pleading pages", named), functools.partial(_pleading_pages, index, named)
            )
            if found is not None:
                break
    if found is None and "vol" in words:
        # No file names the volume: one transcript holds them all ("trial-transcript-
        # excerpts.pdf", each page headed "Volume II ... Page 112").
        whole = words[: words.index("vol")]
        found = index.derived(("pleading pages", whole), lambda: _pleading_pages(index, whole))
    return found


def _pleading_pages(index: PacketIndex, words: tuple[str, ...]) -> list[int] | None:
    titles = index.derived("document titles", lambda: _document_titles(index))
    forms = [_SAME_AS.get(w) or _NUMERALS.get(w) or _day_forms(w) or (w,) for w in words]
    matches = [
        document
        for document, title in titles
        if all(
            any(t.startswith(form) if len(form) > 3 else t == form for t in title for form in group)
            for group in forms
        )
    ]
    if len(matches) != 1:
        return None
    return index.document_pages(matches[0])


def _day_forms(word: str) -> tuple[str, ...] | None:
    """A transcript's month ("month:3") or day ("day:5") as a file's name may write it."""
    kind, _, number = word.partition(":")
    if kind == "month" and number.isdigit() and 1 <= int(number) <= 12:
        return (f"{int(number):02d}", number, _MONTHS[int(number) - 1])
    if kind == "day" and number.isdigit():
        return (f"{int(number):02d}", number)
    return None


def _day_words(day: re.Match[str]) -> tuple[str, ...] | None:
    """ "3/15/2023" -> ("2023", "month:3", "day:15"); None for no day of a calendar."""
    if day.group("m") is not None:
        month, number, year = int(day.group("m")), int(day.group("d")), day.group("y")
        year = year if len(year) == 4 else f"20{year}"
    else:
        name = day.group("month").lower()
        if name not in _MONTHS:
            return None
        month, number, year = _MONTHS.index(name) + 1, int(day.group("day")), day.group("year")
    if not (1 <= month <= 12 and 1 <= number <= 31):
        return None
    return (year, f"month:{month}", f"day:{number}")


def _document_titles(index: PacketIndex) -> list[tuple[int, list[str]]]:
    """Each document of the packet (in packet order) with the words of its file name."""
    return [
        (document, [t for t in re.split(r"[^0-9a-z]+", name.lower()) if t])
        for document, name in index.document_names().items()
    ]


def _pleading_words(text: str) -> tuple[str, ...]:
    designated = _DESIGNATED.match(text)
    if designated is not None:
        # "1T (Transcript of bench trial, March 5, 2024)": the transcript its file names "1T",
        # or else its day (`pleading_pages`)
        day = _DAY.search(designated.group("what") or "")
        dated = _day_words(day) if day is not None else None
        return ("transcript", f"{designated.group('n')}t", *(dated or ()))
    head = re.split(r"\s*(?:\u00b6|\bat\s+\d|\d+:\d)", text, maxsplit=1)[0].strip()
    # (Colorado's "TR 3/5/24, p. 43:16-17": the day before the page's "p.")
    head = _PAGE_WORD_AFTER_DAY.sub("", head)
    report = _DATED_REPORT.fullmatch(head)
    if report is not None:
        # Washington's "RP (Mar. 5, 2024)": the report of that day, its file named "rp" and
        # the day ("08-rp-vol1-2024-03-05.pdf") or the transcript and the day
        day = _DAY.search(", " + report.group("day"))
        dated = _day_words(day) if day is not None else None
        return ("transcript", "rp", *(dated or ()))
    # A transcript's volume ("Trial Tr. vol. II,"): its file names it ("...-vol-2.pdf").
    day = _DAY.search(head)
    dated = _day_words(day) if day is not None else None
    if day is not None and dated is not None:
        words = _pleading_words(head[: day.start()])
        return (*words, *dated) if "transcript" in words else words
    lettered = LETTER_VOLUME_TRANSCRIPT.fullmatch(head)
    if lettered is not None:
        # Minnesota's "T. II 45", "2T. 45": the transcript's volume II (`claims.record`)
        number = lettered.group("n") or str(_ROMAN.get(lettered.group("roman"), 0))
        return ("transcript", "vol", number) if number != "0" else ()
    volume = _VOLUME.search(head) or _VOLUME_PAGE.search(head)
    if volume is not None:
        words = _pleading_words(head[: volume.start()])
        number = volume.group("n")
        arabic = str(_ROMAN.get(number.upper(), 0)) if not number.isdigit() else number
        return (*words, "vol", arabic) if words and arabic != "0" else words
    for pattern, words in _PLEADINGS:
        match = re.search(rf"(?:^|\s)(?:{pattern})\.?$", head)
        if match is None:
            continue
        name = head[: match.start()].split()
        if words[0] in _NAMED and name and name[-1][:1].isupper():
            return (*words, name[-1].lower())
        return words
    return ()


def pinned(finding: Finding, context: Context) -> Finding:
    """The finding on a record cite, refined by its paragraph pins (see the module)."""
    claim = finding.claim
    numbers = paragraph_numbers(claim.pins)
    if not numbers:
        return _pleading_page(finding, context)
    index = context.index
    if finding.status == "supported" and claim.bates:
        pages: list[int] = []
        for ref in claim.bates:
            pages.extend(p for p in index.bates_indexes(ref)[0] if p not in pages)
        document = None
    elif finding.status == "supported" and (claim.exhibit is not None or claim.title is not None):
        # "Ex. 3 ¶ 4": the exhibit's pages, as resolved (apps.verification.exhibits).
        pages = context.cite_pages(claim)
        document = index.pages[pages[0]].filename if pages else None
    elif finding.check == "record_cite_unstamped" and not claim.bates:
        found_pages = pleading_pages(claim, index)
        if found_pages is None:
            return finding
        pages = found_pages
        document = index.pages[pages[0]].filename
    else:
        return finding
    if not pages:
        return finding
    return in_paragraphs(finding, context, pages, numbers, document or pages_label(index, pages))


def in_paragraphs(
    finding: Finding,
    context: Context,
    pages: list[int],
    numbers: list[int],
    where: str,
    *,
    check: str = "record_cite_paragraph",
    pilcrow: bool = False,
) -> Finding:
    """`finding` judged by the paragraphs `numbers` of `pages` (steps 2-5 of the module's
    docstring), named `where` in its messages, its check `check`. `pilcrow`: only paragraphs
    marked "¶ 4" count (an opinion's, whose "1." may start a list inside a paragraph)."""
    index = context.index
    paragraphs = paragraphs_on(index, pages, pilcrow=pilcrow)
    pins = _pins_label(numbers)

    _finding = functools.partial(_judged, check=check)

    if not paragraphs:
        return _finding(
            finding,
            "needs_review",
            f"{where} has no numbered paragraphs; {pins} cannot be located",
            index.pages[pages[0]],
        )
    by_number: dict[int, Paragraph] = {}
    for paragraph in paragraphs:
        by_number.setdefault(paragraph.number, paragraph)
    missing = [n for n in numbers if n not in by_number]
    if missing:
        return _missing(finding, index, pages, paragraphs, missing, where, check, pilcrow)
    wanted = [by_number[n] for n in numbers]
    span = context.segment(finding.claim)
    evidence = None
    for quote in context.members(span, ("quote",)):
        segments = quote_segments(quote.quote or quote.text)
        if sum(len(s) for s in segments) < SHORT_QUOTE:
            continue
        hit = index.find_quote(segments, within=pages)
        if hit is None:
            continue
        page_index = index.page_index(hit.page)
        if any(p.holds(page_index, *hit.span) for p in wanted):
            evidence = (page_index, hit.span, "carries the quotation")
            continue
        # (a quotation a page prints twice, in another paragraph first: the cited one's too)
        held = next((p for p in wanted if _holds_words(p.text(index), segments)), None)
        if held is not None:
            first = held.parts[0]
            evidence = (first[0], (first[1], first[2]), "carries the quotation")
            continue
        other = next((p for p in paragraphs if p.holds(page_index, *hit.span)), None)
        placed = f"\u00b6 {other.number}" if other else "another part of the page"
        return _finding(
            finding,
            "unsupported",
            f"the quotation is in {placed} of {where}, not in {pins}",
            hit.page,
            hit.span,
        )
    if evidence is None:
        wrong = _terms_elsewhere(context, index, span, wanted, paragraphs)
        if wrong is not None:
            return _finding(
                finding,
                "unsupported",
                f"{pins} of {where} lacks what the sentence attributes to it; "
                f"\u00b6 {wrong.number} has it",
                index.pages[wrong.parts[0][0]],
                wrong.parts[0][1:],
            )
        evidence = _value_in(context, index, span, wanted)
    if evidence is None:
        cited = set(pages)
        parts = wanted[0].parts
        page_index, start, end = next((q for q in parts if q[0] in cited), parts[0])
        evidence = (page_index, (start, end), "is there")
    page_index, match, what = evidence
    return _finding(
        finding, "supported", f"{pins} of {where} {what}", index.pages[page_index], match
    )


def _holds_words(text: str, segments: Sequence[Sequence[str]]) -> bool:
    """Whether `text` holds each segment of a quotation (its words) as a run of its words."""
    words = nz.token_list(text)
    for segment in segments:
        run = list(segment)
        if run and not any(words[i : i + len(run)] == run for i in range(len(words))):
            return False
    return True


def page_numbers(pins: Sequence[str]) -> list[int]:
    """The pages a cite's page pins name: "at 3" -> [3]; "pp. 3-4" -> [3, 4]; "at 41-3" ->
    [41, 42, 43] (`range_end`); a transcript's page:line ("at 12:3") names none (its pages are
    the transcript's own numbers)."""
    numbers: list[int] = []
    for pin in pins:
        if not re.match(r"(?:at|pp?\.)\s", pin) or ":" in pin:
            continue
        for match in _PIN_NUMBERS.finditer(pin):
            first = int(match.group(1))
            last = max(first, range_end(match.group(1), match.group(2) or match.group(1)))
            numbers.extend(n for n in range(first, min(last, first + 49) + 1) if n not in numbers)
    return numbers


def range_end(first: str, last: str) -> int:
    """The last page of a page range as written: a short end takes the first page's leading
    digits ("41-3" -> 43, "640-41" -> 641, "1045-46" -> 1046; Bluebook rule 3.2(a) drops the
    repeated digits), a full one is itself ("41-43")."""
    if len(last) < len(first):
        return int(first[: len(first) - len(last)] + last)
    return int(last)


def _pleading_page(finding: Finding, context: Context) -> Finding:
    """A pleading cite with a page pin ("Compl. at 3"): supported when page 3 of the one
    document titled so carries the sentence's quotation, date or amount; otherwise it stays for
    review (a pleading's own page numbers need not be its file's: a cover sheet shifts them)."""
    claim = finding.claim
    numbers = page_numbers(claim.pins)
    if claim.bates or finding.check != "record_cite_unstamped" or not numbers:
        return finding
    if set(_pleading_words(claim.cited_as or claim.text)) & {"transcript", "deposition"}:
        return finding  # a transcript's pages are the numbers it prints (`transcripts.lined`)
    index = context.index
    document = pleading_pages(claim, index)
    if document is None:
        return finding
    pages = [p for p in document if index.pages[p].page_number in numbers]
    name = index.pages[document[0]].filename
    if len(pages) != len(numbers):
        return replace(
            finding,
            message=f"{finding.message}; {name} has {len(document)} pages, not all of the cited",
        )
    span = context.segment(claim)
    wanted = [Paragraph(0, [(p, 0, len(index.pages[p].text))]) for p in pages]
    evidence = _quote_in(context, index, span, pages) or _value_in(context, index, span, wanted)
    if evidence is None:
        return replace(
            finding,
            message=f"{finding.message}; page {_runs(numbers)} of {name} does not show the "
            "sentence's quotation, date or amount",
        )
    page_index, match, what = evidence
    return _judged(
        finding,
        "supported",
        f"page {_runs(numbers)} of {name} {what}",
        index.pages[page_index],
        match,
        check="record_cite_document_page",
    )


def _quote_in(
    context: Context, index: PacketIndex, span: tuple[int, int], pages: list[int]
) -> tuple[int, tuple[int, int], str] | None:

    for quote in context.members(span, ("quote",)):
        segments = quote_segments(quote.quote or quote.text)
        if sum(len(s) for s in segments) < SHORT_QUOTE:
            continue
        hit = index.find_quote(segments, within=pages)
        if hit is not None:
            return index.page_index(hit.page), hit.span, "carries the quotation"
    return None


def _terms_elsewhere(
    context: Context,
    index: PacketIndex,
    span: tuple[int, int],
    wanted: list[Paragraph],
    paragraphs: list[Paragraph],
) -> Paragraph | None:
    terms = [t for t in context.key_terms(span) if index.document_frequency(t)]
    if len(terms) < 2:
        return None
    weights = {t: index.idf(t) for t in terms}
    total = sum(weights.values())
    held = set()
    for paragraph in wanted:
        held |= set(nz.content_terms(nz.token_list(paragraph.text(index))))
    cited = sum(w for t, w in weights.items() if t in held)
    best: Paragraph | None = None
    best_score = 0.0
    for paragraph in paragraphs:
        if paragraph in wanted:
            continue
        stems = set(nz.content_terms(nz.token_list(paragraph.text(index))))
        if len([t for t in weights if t in stems and t not in held]) < 2:
            continue
        score = sum(w for t, w in weights.items() if t in stems)
        if score > best_score:
            best, best_score = paragraph, score
    if best is None or best_score / total < WRONG_OTHER or cited >= WRONG_RATIO * best_score:
        return None
    return best


def _same_value(claim: Claim, found: str) -> bool:
    """A page's value is the claim's: equal, or a year-less date's month and day."""
    if claim.kind == "date":
        return same_day(claim.value or "", found, claim.years)
    return found == claim.value


def _value_in(
    context: Context, index: PacketIndex, span: tuple[int, int], wanted: list[Paragraph]
) -> tuple[int, tuple[int, int], str] | None:
    for claim in context.members(span, ("date", "amount")):
        values = index.dates if claim.kind == "date" else index.amounts
        for paragraph in wanted:
            for page_index, _, _ in paragraph.parts:
                for value in values[page_index]:
                    if _same_value(claim, value.value) and paragraph.holds(
                        page_index, value.start, value.end
                    ):
                        return page_index, (value.start, value.end), f"carries the {claim.kind}"
    return None


def _missing(
    finding: Finding,
    index: PacketIndex,
    pages: list[int],
    paragraphs: list[Paragraph],
    missing: list[int],
    where: str,
    check: str,
    pilcrow: bool,
) -> Finding:
    pins = _pins_label(missing)
    cited = set(pages)
    documents = dict.fromkeys(index.pages[p].document_id for p in pages)

    _finding = functools.partial(_judged, check=check)

    for document_id in documents:
        rest = [p for p in index.document_pages(document_id) if p not in cited]
        for paragraph in paragraphs_of(index, rest, pilcrow=pilcrow):
            if paragraph.number in missing:
                page_index, start, end = paragraph.parts[0]
                return _finding(
                    finding,
                    "unsupported",
                    f"{pins} is not on {where}; \u00b6 {paragraph.number} of the document is "
                    f"on {index.label(page_index)}",
                    index.pages[page_index],
                    (start, end),
                )
    have = sorted({p.number for p in paragraphs})
    if any(have[0] < n < have[-1] for n in missing):
        # A gap in the numbering: the marker may be written in another style or lost to OCR.
        return _finding(
            finding,
            "needs_review",
            f"{pins} is not marked on {where}, whose numbered paragraphs are {_runs(have)}",
            index.pages[pages[0]],
        )
    return _finding(
        finding,
        "unsupported",
        f"{where} has no {pins} (its numbered paragraphs: {_runs(have)})",
        index.pages[pages[0]],
    )


def _judged(
    finding: Finding,
    status: str,
    message: str,
    page: object,
    match: tuple[int, int] | None = None,
    *,
    check: str = "record_cite_paragraph",
) -> Finding:
    text = getattr(page, "text", "")
    excerpt = excerpt_of(text, *match) if match else excerpt_of(text, 0, 160)
    return replace(
        finding,
        status=status,  # type: ignore[arg-type]  # one of checks.Status
        check=check,
        message=message,
        page=page,  # type: ignore[arg-type]  # a PageRecord
        excerpt=excerpt,
        match=match,
        found_value=None,
    )


def _pins_label(numbers: Sequence[int]) -> str:
    if len(numbers) == 1:
        return f"\u00b6 {numbers[0]}"
    return f"\u00b6\u00b6 {_runs(list(numbers))}"


def _runs(numbers: list[int]) -> str:
    """[1, 2, 3, 5] -> "1-3, 5"."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and runs[-1][-1] + 1 == n:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


__all__ = [
    "in_paragraphs",
    "page_numbers",
    "paragraph_numbers",
    "paragraphs_of",
    "paragraphs_on",
    "pinned",
    "pleading_pages",
    "range_end",
]
