"""The deterministic checks: every claim of a draft against the frozen packet (pure, no Django).

`verify_text(text, claims, index)` gives one Finding per claim, in the claims' order:

1. The sentence's citations (record cites, things used as record cites, case citations) split
   it into segments: the words before a citation, back to the previous one, are what that
   citation vouches for; a citation that stands alone (a run of cites, a citation sentence)
   vouches for the words before it. A date, amount or quotation belongs to the citation that
   closes its segment (or, with none after it, the last one before it).
2. Record cite: its pages must be in the packet (else unsupported: out of range, not a Bates
   number of the packet, or a token that starts with the production's prefix but is none of
   its numbers; a range whose first pages are in the packet marks its end). The pages of a run
   of cites with no words between them vouch together: the segment is supported when any of
   them carries it, and the finding names that page. A quotation of its segment found
   verbatim on another page but not on the cited ones makes it unsupported (wrong page).
   Otherwise the cited pages must carry what the segment attributes to them better than any
   other page, their neighbours included: its key terms weighed by how distinctive they are
   in the packet (IDF over the pages; numbers double; a paraphrase of common legal English
   counts, `PARAPHRASES`), and its dates and amounts where another page carries them. When
   another page carries the distinctive terms (or the sentence's value and its words as well
   as the cited page does) and the cited pages only common ones: unsupported, naming the
   terms and the page; a smaller lead: needs review. A date or amount that no page carries is
   the value's error, not the cite's, when the cited page holds values of its kind. A segment
   with too few words of its own is read with the sentence before it (see
   `_Context._terms_elsewhere`). Otherwise supported.
3. Date / amount: with a record cite, on the pages of its cite's run, else of any cite of its
   sentence (another value of the same kind there: contradicted, naming it; the finding names
   where in the packet the value does stand); without one, anywhere in the packet, in any
   form.
4. Quotation: verbatim in the packet (words in order on one page's body, or running onto the
   next page of its document, between ellipses and bracketed changes); else unsupported,
   naming the closest passage when there is one (a misquote). A quoted term under four words
   is a misquote when the cited page prints it with one word changed into a form of itself or
   one word added or dropped; otherwise, not found, it is left for review (it may be a scare
   quote rather than a quotation).
5. Case citation: the opinion must be in the packet (else "not in the evidence", which does not
   mean fabricated), its name and year must fit, a pin must be one of its reporter pages (a
   star-paged opinion's too) and carry the sentence's quotation or, better than the opinion's
   other pages, its key terms. A short form, Id. or supra the draft could not bind is bound to
   a packet opinion by name, volume and reporter (`_Context.bind_short`).
6. Not a record cite: unsupported, with the reason taken from the packet (printed on a page
   of it: a number of that document or another production; a file name that is no packet
   document; no number of this production); a reference to the system's own work says so. A
   packet document named by its file name (with a page pin) is checked as a record cite.
7. A supported finding whose words are OCR text below the review confidence: needs review.
"""

import bisect
import functools
import gc
import itertools
import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from datetime import date

import reporters_db

from apps.verification import authorities, exhibits, paragraphs
from apps.verification import normalise as nz
from apps.verification.amounts import describe, distance, is_in_words
from apps.verification.claims import Claim, is_generated_reference, sentences
from apps.verification.claims.record import document_name_cite
from apps.verification.dates import is_month_day, reading, same_day
from apps.verification.findings import Finding, Status
from apps.verification.index import (
    OCR,
    Opinion,
    PacketIndex,
    PageRecord,
    QuoteHit,
    Value,
    bates_key,
    ocr_read,
    pages_label,
    split_label,
)
from apps.verification.quoting import quote_segments, quote_words
from apps.verification.spans import excerpt_of

VERIFIER_VERSION = "1"

CITES = ("record_cite", "not_a_record_cite", "case_citation")
VALUES = ("quote", "date", "amount")
NOT_IN_EVIDENCE = "not in the evidence (this does not mean it is fabricated)"
SHORT_QUOTE = 4  # words; a shorter quoted term not found is left for review
SHORT_VARIANT_PAGES = 10  # cited pages read word by word for a short term's altered form
MISQUOTE_RATIO = 0.5  # share of a quotation's words in order in the closest passage
NEAR_PASSAGE = 0.8  # a misquote this close to a passage of another page: the cite is wrong too
MISQUOTE_WORDS = 1  # ... and no more of its words missing from that passage
# Wrong page (checks._Context._terms_elsewhere), in shares of the key terms' weight: another
# page carries at least WRONG_PAGE_OTHER, of which at least WRONG_PAGE_GAIN (two terms or
# more) is missing from the cited pages, while what only the cited pages carry is at most
# WRONG_PAGE_KEPT. A smaller lead (REVIEW_GAIN, more than what only the cited pages carry) asks
# for review.
# Verbs whose meaning is their object's ("put a name to", "made a payment", "took delivery",
# "gave notice"): no fact of a sentence, however rare they are in a small packet.
LIGHT_VERBS = frozenset(
    """
    put puts putting get gets got gotten getting make makes made making take takes took taken
    taking give gives gave given giving go goes went gone going come comes came coming
    """.split()  # noqa: SIM905
)
WRONG_PAGE_OTHER = 0.6
WRONG_PAGE_GAIN = 0.4
WRONG_PAGE_KEPT = 0.1
WRONG_PAGE_KEPT_RATIO = 1 / 3  # or up to a third of what the other page adds
REVIEW_GAIN = 0.3
PASSAGE_GAIN = 0.2  # another page's one sentence carries this much more (see _passage_lead)
WRONG_PAGE_ALONE = 0.5  # the cited pages carry none of it and another page half of it
RARE_CANDIDATES = 4  # the other pages considered hold one of the heaviest lacking terms...
CANDIDATE_PAGES = 50  # ... held by at most this many pages (or a 20th of the packet's)
NAME_PAGES = 20  # the pages read to tell a name (printed with a capital) from a word
# Paraphrase groups: words of common legal and commercial English that a draft uses for what
# a page says in other words ("the purpose is restricted to" for "used solely for"). A page
# carries a draft's key term when it holds any word of the term's group. General vocabulary,
# not any case's: a group joins words that say the same thing in a contract, a letter or a
# record of payments.
PARAPHRASES = (
    "use used uses using purpose purposes",
    "solely only exclusively restrict restricted restriction limit limited",
    "pay pays paid paying payment payments remit remitted",
    "buy bought purchase purchased purchases acquire acquired",
    "sell sold sale sales",
    "end ended terminate terminated termination cancel cancelled cancellation",
    "begin began start started commence commenced commencement",
    "inform informed notify notified notice advise advised",
    "ask asked request requested requests",
    "refuse refused decline declined reject rejected",
    "agree agreed consent consented accept accepted",
    "owe owed owes due outstanding unpaid",
    "lend lent loan loaned borrow borrowed",
    "sign signed signature execute executed",
    "deliver delivered delivery ship shipped",
    "repair repaired fix fixed",
    "inspect inspected inspection examine examined examination",
    "guarantee guaranteed guaranty guarantor",
    "miss missed skip skipped",
    "employ employed employee employees staff",
    "car cars vehicle vehicles automobile",
    "home house residence dwelling",
    "money funds proceeds",
    "fee fees charge charges",
    "contract agreement",
    "broke broken breach breached violate violated violation",
    "warn warned warning",
    "hire hired retain retained engage engaged",
    "move moved relocate relocated",
    "fire fired dismiss dismissed",
    "quit resign resigned resignation",
    "injure injured injury injuries hurt",
    "die died death",
    "meet met meeting",
)
PARAPHRASE_OF: dict[str, tuple[str, ...]] = {}
for _group in PARAPHRASES:
    _stems = tuple(dict.fromkeys(nz.stem(w) for w in _group.split()))
    for _stem in _stems:
        PARAPHRASE_OF[_stem] = tuple(dict.fromkeys(PARAPHRASE_OF.get(_stem, ()) + _stems))
# A year and month in figures ("2023-11", "11/2023"). Each starts with a digit: the lookahead
# says so first, which lets the pattern skip to the digits of a page instead of trying every
# character.
_YEAR_MONTH = re.compile(
    r"(?=[0-9])(?<![\d/-])"
    r"(?:(?:19|20)\d\d[-/](?P<m1>0[1-9]|1[0-2])|(?P<m2>0?[1-9]|1[0-2])/(?:19|20)\d\d)"
    r"(?![\d/-])"
)
# Where a page's sentence ends: a stop (and a footnote's call number after it) before a capital
# (not "L.P. has", not "Mar. 5"), or a blank line.
_PAGE_SENTENCE = re.compile(
    r"(?<=[.!?])[\"\u201d']?(?:\d{1,3}(?=\s))?\s+(?=[\"\u201c]?[A-Z])|\n[ \t]*\n"
)
_LINE_END_HYPHEN = re.compile(r"(?<=[a-z])-\n(?=[a-z])")
# A line laid out apart from running prose: no lowercase letter (a heading, a label), columns
# (two spaces or a tab inside it), or a list item (`_laid_out`).
_LAID_OUT_START = re.compile(r"[^a-z]*$|\s*(?:[-*\u2022]|\d{1,3}[.)])\s")
_COLUMNS = re.compile(r"\S(?: {2,}|\t)\S")
# The drafter's frame before a sentence's proposition: a short opening that introduces it and
# names nothing ("The record shows that", "It is undisputed that", "As the file reflects,",
# "Notably,", "Courts hold that"). Its words are about the evidence or the argument, not facts
# a page must carry; a frame with a name or a number ("Smith testified that", "On 3 May 2021,")
# is none.
_FRAME = re.compile(
    r"[\s\-*\u2022]*(?:\d{1,3}[.)]\s+)?(?P<frame>(?:[A-Za-z'\u2019]+\s+){0,4}?[A-Za-z'\u2019]+"
    r"\s+that\b|[A-Z][a-z]+ly,|As(?:\s+[A-Za-z'\u2019]+){1,4},|(?:[A-Za-z'\u2019]+\s+){1,4}?"
    r"[A-Za-z'\u2019]+:)"
)
_NAMED_OR_NUMBERED = re.compile(r"[A-Z0-9]")
# The kinds of source a sentence cites, as a frame's subject ("Courts hold that", "Cases
# recognise that", "Records show that"): the cited authorities or record speaking of
# themselves, as in "The record shows that"; a page need not print them.
_SOURCE_SUBJECTS = frozenset(
    {"courts", "cases", "decisions", "authorities", "opinions", "records", "documents"}
)


def _is_frame(words: str) -> bool:
    """An opening matched by `_FRAME` is a frame when it names nothing: no capital after its
    first letter, no digit, and its first word a function word ("The", "It", "As"), an adverb
    or the cited sources (`_SOURCE_SUBJECTS`: "Courts hold that"), never a name ("Smith
    testified that"). An article and one word before "that" is a noun and its relative clause
    ("A tenant that fails ...": the tenant is a fact), no frame."""
    parts = words.split()
    first = parts[0].rstrip(",:").lower()
    if first in ("a", "an", "the") and len(parts) == 3 and parts[-1].lower() == "that":
        return False
    return not _NAMED_OR_NUMBERED.search(words[1:]) and (
        first in nz.STOPWORDS
        or first == "as"
        or first in _SOURCE_SUBJECTS
        or (" " not in words and first.endswith("ly"))
    )


_LIST_ITEM = re.compile(r"\n[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]")
# An abbreviation on a page standing for a run of the draft's words ("SLA"): three capitals or
# more (two initials match too many pairs of words).
_ACRONYM = re.compile(r"(?=[A-Z])\b[A-Z]{3,5}\b")  # (the lookahead first: tried at capitals only)
_MONTHS = [
    *("january", "february", "march", "april", "may", "june"),
    *("july", "august", "september", "october", "november", "december"),
]
# The name a short form gives its case: "Halloran, 341 P.3d at 883", "See Halloran, supra".
_SHORT_NAME = re.compile(
    r"(?:(?:see|see also|cf\.|accord|but see)\s+)?(?P<name>[A-Z][^,]{0,80}?),", re.IGNORECASE
)
_FILE_NAME = re.compile(r"[\w][\w.\-]*\.[A-Za-z][A-Za-z0-9]{1,4}\b")
_GENERATED = re.compile(r"\b(draft|summary|memo|outline|v\d+|version|earlier|prior)\b", re.I)


def verify_text(
    text: str,
    claims: Sequence[Claim],
    index: PacketIndex,
    *,
    ocr_review_confidence: float | None = None,
    only: Sequence[Claim] | None = None,
) -> list[Finding]:
    """One finding per claim (see the module docstring). Reads nothing but its arguments.

    `ocr_review_confidence`: settings.LEXWEB_OCR_REVIEW_CONFIDENCE (0-100), passed in by the
    caller. `only`: check just these claims, each in the context of all of `claims`."""
    # The index holds millions of small objects; a collection pass over them during the
    # checks costs more than the checks (and no cycle is made here).
    enabled = gc.isenabled()
    gc.disable()
    try:
        context = _Context(text, list(claims), index)
        return [
            _review(context.check(claim), ocr_review_confidence)
            for claim in (claims if only is None else only)
        ]
    finally:
        if enabled:
            gc.enable()


def _review(finding: Finding, threshold: float | None) -> Finding:
    page = finding.page
    if (
        finding.status == "supported"
        and threshold is not None
        and page is not None
        and page.source == OCR
        and page.ocr_confidence is not None
        and page.ocr_confidence < threshold
    ):
        confidence = page.ocr_confidence
        return replace(
            finding,
            status="needs_review",
            message=f"{finding.message}; the words are OCR text read at {confidence:.0f}% "
            f"confidence, under the review threshold of {threshold:.0f}%",
        )
    return finding


class _Context:
    def __init__(self, text: str, claims: list[Claim], index: PacketIndex) -> None:
        self.text = text
        self.claims = claims
        self.index = index
        self.cites_by_sentence: dict[tuple[int, int], list[Claim]] = {}
        for claim in sorted(claims, key=lambda c: c.start):
            if claim.kind in CITES:
                self.cites_by_sentence.setdefault(claim.sentence, []).append(claim)
        self.all_sentences: list[tuple[int, int]] | None = None  # read when first needed
        self.sentence_ends: list[int] = []
        self.sentence_starts: list[int] = []
        self.forms: dict[int, tuple[frozenset[str], frozenset[str]]] = {}
        self.passages: dict[int, list[frozenset[str]]] = {}  # a page's sentences, as stems
        self.stems_of: dict[str, str] = {}  # a word's stem, and its form in runs (`_stemmed`)
        self.shown_of: dict[str, str] = {}
        self.sentence_runs: dict[int, list[list[str]]] = {}  # ... as runs of words
        self.ordered = sorted(claims, key=lambda c: c.start)
        self.starts = [c.start for c in self.ordered]
        self.held: dict[tuple[str, ...], frozenset[int]] = {}  # a common word's pages, as a set
        self.document_sets: dict[int, frozenset[int]] = {}  # a document's pages, as a set
        self.spans_label: str | None = None  # the production's labels, for messages
        self.bound: dict[int, Opinion | None] = {}  # short forms bound to a packet opinion
        self.documents: exhibits.Catalogue | None = None  # read when a cite names a document
        self.named: dict[tuple[int, int], tuple[list[int], Finding | None, str]] = {}

    def check(self, claim: Claim) -> Finding:
        if claim.kind == "record_cite":
            from apps.verification import transcripts  # page:line pins (issue 28 req 7)

            finding = transcripts.lined(paragraphs.pinned(self.record_cite(claim), self), self)
            return _as_id(finding) if claim.cited_as else finding
        if claim.kind == "not_a_record_cite":
            return self.not_a_record_cite(claim)
        if claim.kind == "case_citation":
            if claim.bates and claim.cited_as:  # "Id. at 2" after a Bates cite
                read = self._id_page(claim)
                if read is not None:
                    return read
                found = authorities.court_fits(self.case_citation(claim))
                if found.status == "supported":
                    return found
                numbers = ", ".join(str(n) for n in paragraphs.page_numbers(claim.pins)[:3])
                return replace(
                    found,
                    message=f"{found.message}; nor is page {numbers} a page of the document "
                    f"of {claim.cited_as}, the record cite before it",
                )
            return authorities.court_fits(self.case_citation(claim))
        if claim.kind == "statute":
            return authorities.statute(claim, self.index)
        if claim.kind == "quote":
            return self.quote(claim)
        if claim.kind in ("date", "amount"):
            return self.value(claim)
        return Finding(claim, "needs_review", "unknown", f"no check for a {claim.kind} claim")

    # -- segments -----------------------------------------------------------------------

    def segment(self, cite: Claim) -> tuple[int, int]:
        """The words `cite` vouches for: back to the previous citation of its sentence; a cite
        with no words of its own shares the previous one's; the last cite of its sentence also
        takes the words after it; a citation sentence takes the previous sentence."""
        cites = self.cites_by_sentence.get(cite.sentence, [cite])
        position = cites.index(cite) if cite in cites else 0
        start = cite.sentence[0]
        k = position
        while k > 0:
            previous = cites[k - 1]
            if _has_words(self.text[previous.end : cites[k].start]):
                start = previous.end
                break
            k -= 1
        end = cite.start
        if position == len(cites) - 1 and _has_words(self.text[cite.end : cite.sentence[1]]):
            end = cite.sentence[1]
        if not _has_words(self.text[start:end]) and k == 0:
            earlier = self.previous_sentence(cite.sentence)
            if earlier is not None:
                return earlier
        return start, end

    def previous_sentence(self, sentence: tuple[int, int]) -> tuple[int, int] | None:
        if self.all_sentences is None:
            self.all_sentences = sentences(self.text)
            self.sentence_ends = [end for _, end in self.all_sentences]
        at = bisect.bisect_right(self.sentence_ends, sentence[0]) - 1
        if at < 0:
            return None
        candidate = self.all_sentences[at]
        gap = self.text[candidate[1] : sentence[0]]
        # Only the sentence just before it, in the same paragraph.
        return None if "\n\n" in gap else candidate

    def closing_cite(self, claim: Claim) -> Claim | None:
        cites = self.cites_by_sentence.get(claim.sentence, [])
        after = [c for c in cites if c.start >= claim.end]
        if after:
            return after[0]
        before = [c for c in cites if c.end <= claim.start]
        return before[-1] if before else None

    def members(self, span: tuple[int, int], kinds: tuple[str, ...]) -> list[Claim]:
        """The claims of these kinds inside `span`."""
        first = bisect.bisect_left(self.starts, span[0])
        out = []
        for claim in self.ordered[first:]:
            if claim.start >= span[1]:
                break
            if claim.kind in kinds and claim.end <= span[1]:
                out.append(claim)
        return out

    def key_terms(self, span: tuple[int, int]) -> list[str]:
        """Content words of the span outside every claim in it."""
        masked = list(self.text[span[0] : span[1]])
        for claim in self.claims:
            if claim.end <= span[0] or claim.start >= span[1]:
                continue
            for k in range(max(claim.start, span[0]), min(claim.end, span[1])):
                masked[k - span[0]] = " "
        words = [w for w in nz.token_list("".join(masked)) if not (w.isdigit() and len(w) < 4)]
        return nz.content_terms(words)

    def cite_pages(self, cite: Claim) -> list[int]:
        if not cite.bates and (cite.exhibit is not None or cite.title is not None):
            return self._named_pages(cite)[0]
        found: list[int] = []
        for ref in cite.bates:
            pages, _missing = self.index.bates_indexes(ref)
            found.extend(p for p in pages if p not in found)
        return found

    # -- record cites -------------------------------------------------------------------

    def record_cite(self, claim: Claim) -> Finding:
        if not claim.bates and (claim.exhibit is not None or claim.title is not None):
            return self._named_cite(claim)
        if not claim.bates:
            # A pleading or docket cite ("Compl. ¶ 4", "Dkt. 12 at 3") names no Bates page:
            # the packet's pages cannot be matched to it, so a person checks it.
            return Finding(
                claim,
                "needs_review",
                "record_cite_unstamped",
                f"{claim.text!r} names no Bates page; the packet cannot confirm or refute it",
            )

        pages: list[int] = []
        for ref in claim.bates:
            found, missing = self.index.bates_indexes(ref)
            gap = self.index.page_suffix_gap(ref) if missing and ref.paged else None
            if gap is not None:
                # The document is in the packet; the page its suffix names is not.
                return Finding(
                    claim,
                    "unsupported",
                    "bates_in_packet",
                    f"{claim.text} is not in the packet: {gap}",
                )
            if missing:
                return self._out_of_range(claim, ref.prefix, missing, bool(found))
            pages.extend(p for p in found if p not in pages)
        if claim.exhibit is not None:
            return self._in_exhibit(claim, pages, self.judge_pages(claim, pages))
        return self.judge_pages(claim, pages)

    def _id_page(self, claim: Claim) -> Finding | None:
        """ "Id. at 2" / "(Id. at p. 2.)" after a Bates cite: page 2 of the document that Bates
        page is in, judged as a record cite's pages are. None where that document has no such
        page: then the pin is read as a case's Id. (drafters put a record cite between a case
        and its Id.; claims.record.record_id)."""
        numbers = paragraphs.page_numbers(claim.pins)
        cited: list[int] = []
        for ref in claim.bates:
            cited.extend(self.index.bates_indexes(ref)[0])
        documents = {self.index.pages[p].document_id for p in cited}
        if not numbers or len(documents) != 1:
            return None
        pages = [
            p
            for p in self.index.document_pages(documents.pop())
            if self.index.pages[p].page_number in numbers
        ]
        if len({self.index.pages[p].page_number for p in pages}) != len(numbers):
            return None
        finding = self.judge_pages(claim, pages)
        name = self.index.pages[pages[0]].filename
        said = (
            f"{claim.text} refers to the record cite before it, {claim.cited_as}: page "
            f"{'-'.join(str(n) for n in numbers[:: max(1, len(numbers) - 1)])} of {name}"
        )
        return replace(finding, message=f"{said}; {finding.message}")

    def _in_exhibit(self, claim: Claim, pages: list[int], finding: Finding) -> Finding:
        """ "Ex. 3 at ACME000022": the Bates page must be in exhibit 3. Where the packet's
        documents carry exhibit labels, a page of another document is unsupported; where the
        exhibits are read from the packet's order, the finding only says where the page is."""
        if self.documents is None:
            self.documents = exhibits.catalogue(self.index)
        resolved = exhibits.exhibit(self.documents, claim.exhibit or "")
        document = resolved.document
        if document is not None and all(p in document.pages for p in pages):
            return finding
        where = ", ".join(dict.fromkeys(self.index.pages[p].filename for p in pages))
        said = resolved.how if document is not None else resolved.reason
        if not self.documents.labelled or finding.status != "supported":
            return replace(
                finding, message=f"{finding.message} ({said}; the cited page is in {where})"
            )
        return replace(
            finding,
            status="unsupported",
            check="record_cite_exhibit",
            message=f"{pages_label(self.index, pages)} is in {where}, not in the exhibit cited: "
            f"{said}",
        )

    def _named_cite(self, claim: Claim) -> Finding:
        """A cite naming its document by exhibit or title ("Ex. 3 at 2", "Subcontract at 3"):
        resolved through the packet's documents (apps.verification.exhibits), then its pages
        judged as a Bates cite's are."""
        pages, failed, how = self._named_pages(claim)
        if failed is not None:
            return failed
        finding = self.judge_pages(claim, pages)
        return replace(finding, message=f"{how}; {finding.message}")

    def _named_pages(self, claim: Claim) -> tuple[list[int], Finding | None, str]:
        """The pages a cite by exhibit or title names, or the finding saying why it names
        none, and how the document was read."""
        key = (claim.start, claim.end)
        cached = self.named.get(key)
        if cached is not None:
            return cached
        if self.documents is None:
            self.documents = exhibits.catalogue(self.index)
        if claim.exhibit is not None:
            resolved = exhibits.exhibit(self.documents, claim.exhibit)
        else:
            resolved = exhibits.titled(self.documents, self.index, claim.title or "")
        document = resolved.document
        result: tuple[list[int], Finding | None, str]
        if document is None:
            # A citation sentence of its own ("Subcontract at 3.") may be no document's cite
            # at all (a short form of a case, a time): one naming no document is for a
            # person to read.
            bare = not self.text[claim.sentence[0] : claim.start].strip(" \t\n-*\u2022")
            status: Status = "needs_review" if resolved.ambiguous or bare else "unsupported"
            result = (
                [],
                Finding(
                    claim,
                    status,
                    "record_cite_document",
                    f"{claim.text!r} names no page of the packet: {resolved.reason}",
                ),
                "",
            )
        else:
            numbers = paragraphs.page_numbers(claim.pins)
            pages = list(document.pages)
            if numbers:
                pages = exhibits.pinned_pages(self.index, document, numbers)
            held = [self.index.pages[p].page_number for p in document.pages]
            missing = [n for n in numbers if n not in held]
            if missing:
                result = (
                    [],
                    Finding(
                        claim,
                        "unsupported",
                        "record_cite_page",
                        f"{resolved.how}; the packet holds no page {missing[0]} of it (its "
                        f"pages: {_page_run(held)})",
                        page=self.index.pages[document.pages[0]],
                    ),
                    resolved.how,
                )
            else:
                result = (pages, None, resolved.how)
        self.named[key] = result
        return result

    def judge_pages(self, claim: Claim, pages: list[int]) -> Finding:
        """Whether the cited `pages` carry what the cite's segment attributes to them."""
        if not any(self.index.pages[p].text.strip() for p in pages):
            return Finding(
                claim,
                "needs_review",
                "record_cite_page",
                f"{pages_label(self.index, pages)} is in the packet but has no text "
                "to check the sentence against",
                page=self.index.pages[pages[0]],
            )
        span = self.segment(claim)
        # Every page of the run of cites the words share vouches for them ("(A; B)"): the
        # sentence is supported when any of them carries it.
        group = self.group_pages(claim, pages)
        moved = self._quote_elsewhere(span, group)
        if moved is not None:
            return moved_finding(claim, moved, self.index)
        evidence = self._evidence_on(span, group)
        # A quotation of the segment decides for the cite (found elsewhere: moved, above; a
        # misquote or an invented one is flagged on its own). Otherwise the segment's words,
        # and its dates and amounts where some page carries them, must be carried by the
        # cited pages better than by any other page, their neighbours included: a wrong value
        # under a right cite leaves the cite supported (the value is flagged on its own),
        # while a value that stands with the sentence's words on another page moves the cite.
        quoted = any(len(quote_words(q)) >= SHORT_QUOTE for q in self.members(span, ("quote",)))
        if evidence is None and not quoted and not self._altered_here(span, group):
            weighed = self._terms_elsewhere(span, group)
            if weighed is not None:
                return wrong_finding(claim, weighed, group, self.index)
        page, match, what = evidence or self._best_cited(span, group)
        excerpt = excerpt_of(page.text, *match) if match else excerpt_of(page.text, 0, 160)
        label = pages_label(self.index, pages)
        where = self.index.label(self.index.page_index(page))
        if len(group) > len(pages) and page not in [self.index.pages[p] for p in pages]:
            what = f"is cited with {where}, which {what.removeprefix('is ')}"
        return Finding(
            claim,
            "supported",
            "record_cite_page",
            f"{label} {what}",
            page=page,
            excerpt=excerpt,
            match=match,
        )

    def _altered_here(self, span: tuple[int, int], pages: list[int]) -> bool:
        """A date or amount of the segment that no page of the packet carries, while the cited
        pages carry values of its kind (what it may have been altered from) and no other value
        of the segment stands elsewhere: the error is the value's (flagged on its own, naming
        the nearest value on the page), not the cite's."""
        altered = False
        for claim in self.members(span, ("date", "amount")):
            if claim.value is None or is_month_day(claim.value):
                continue
            what = "date" if claim.kind == "date" else "amount"
            if self.index.value_pages(what, claim.value):
                # Another value of the sentence stands elsewhere in the packet: that page
                # may be the one the sentence is about (the word check decides).
                return False
            altered = altered or any(self._page_values(what, page) for page in pages)
        return altered

    def group_pages(self, cite: Claim, pages: list[int]) -> list[int]:
        """`pages` and those of the record cites run together with `cite` (no words between
        them), in the sentence's order: the pages that vouch for one segment."""
        cites = self.cites_by_sentence.get(cite.sentence, [cite])
        if cite not in cites or len(cites) == 1:
            return pages
        at = cites.index(cite)
        first = last = at
        while first > 0 and not _has_words(self.text[cites[first - 1].end : cites[first].start]):
            first -= 1
        while last + 1 < len(cites) and not _has_words(
            self.text[cites[last].end : cites[last + 1].start]
        ):
            last += 1
        group = list(pages)
        for other in cites[first : last + 1]:
            if other is not cite and other.kind == "record_cite":
                group.extend(p for p in self.cite_pages(other) if p not in group)
        return group

    def _best_cited(
        self, span: tuple[int, int], pages: list[int]
    ) -> tuple[PageRecord, tuple[int, int] | None, str]:
        """The cited page that carries most of the segment's key terms (the first on a tie)."""
        best = pages[0]
        if len(pages) > 1:
            terms = [t for t in self._weighed_terms(span).values() if t.count]
            scores = [sum(t.weight for t in terms if self._carries(p, t)) for p in pages]
            best = pages[max(range(len(pages)), key=lambda k: (scores[k], -k))]
        return self.index.pages[best], None, "is in the packet"

    def _evidence_on(
        self, span: tuple[int, int], pages: list[int]
    ) -> tuple[PageRecord, tuple[int, int], str] | None:
        """A quotation, date or amount of the segment found on the cited pages."""
        for claim in self.members(span, ("quote", "date", "amount")):
            if claim.kind == "quote":
                hit = self.index.find_quote(quote_segments(claim.quote or claim.text), within=pages)
                if hit is not None:
                    return hit.page, hit.span, "carries the quotation"
                continue
            what = "date" if claim.kind == "date" else "amount"
            for page in pages:
                for found in self._page_values(what, page):
                    if _same(claim, found.value):
                        record = self.index.pages[page]
                        return record, (found.start, found.end), f"carries the {what}"
        return None

    def _out_of_range(self, claim: Claim, prefix: str, missing: list[int], partly: bool) -> Finding:
        span = self.index.bates_span(prefix)
        if span is None:
            message = f"{prefix or 'this label'} is not a Bates prefix of this packet"
        else:
            what = "runs past the packet's pages" if partly else "is not in the packet"
            message = f"{claim.text} {what} ({span[0]}-{span[1]})"
            tail = _TOKEN_TAIL.match(self.text, claim.end)
            written = claim.bates[0].digits if claim.bates else 0
            parts = split_label(span[0])
            produced = len(parts[1]) if parts else 0
            if tail is not None or (written and written != produced and not partly):
                if tail is not None:
                    claim = replace(claim, end=tail.end(), text=self.text[claim.start : tail.end()])
                message = (
                    f"{claim.text} starts with this production's prefix but is not one of its "
                    f"numbers ({span[0]}-{span[1]}, {produced} digits)"
                )
        if partly:
            # The range's first pages are in the packet: the finding marks its end, the part
            # of the cite that names no page of the packet.
            claim = _range_end(claim)
        return Finding(claim, "unsupported", "bates_in_packet", message)

    def _quote_elsewhere(self, span: tuple[int, int], pages: list[int]) -> QuoteHit | None:
        """A quotation of the segment that stands elsewhere but not on `pages`: verbatim, or
        (a misquote) nearly so on another page while the cited pages hold nothing like it."""
        for quote in self.members(span, ("quote",)):
            segments = quote_segments(quote.quote or quote.text)
            words = [w for segment in segments for w in segment]
            if len(words) < SHORT_QUOTE:
                continue
            if self.index.find_quote(segments, within=pages) is not None:
                return None
            hit = self.index.find_quote(segments)
            if hit is not None:
                return hit
            here = self.index.closest_passage(words, within=pages)
            if here is not None and here.ratio >= MISQUOTE_RATIO:
                continue  # a misquote of the cited page: the quotation's finding says so
            near = self.index.closest_passage(words)
            # A misquote (a word changed, added or dropped) of another page's passage quotes
            # that page; a quotation that only shares most of its words with a passage is not
            # from it (an invented one, flagged on its own) and says nothing of the cite.
            if (
                near is not None
                and near.ratio >= NEAR_PASSAGE
                and round((1 - near.ratio) * len(words)) <= MISQUOTE_WORDS
            ):
                return near
        return None

    def _terms_elsewhere(
        self, span: tuple[int, int], pages: list[int], *, within: set[int] | None = None
    ) -> "_Weighed | None":
        """Whether the cited pages carry what the segment attributes to them (see `_Weighed`).

        The segment's key terms are weighed by how distinctive they are in the packet (IDF
        over its pages; a number counts double) and a term is carried by a page that holds
        it or a paraphrase of it (`PARAPHRASES`). A segment with too few key terms of its own
        ("Nothing after that") is read with the sentence before it, whose dates and amounts
        count as terms too. The best other page is compared with the cited pages on what one
        carries and the other lacks."""
        terms = self._weighed_terms(span, values=True)
        context = False
        if sum(1 for t in terms.values() if t.count) < 2:
            sentence = self._sentence_of(span)
            earlier = self.previous_sentence(sentence)
            # Another item of a list is not the sentence this one continues.
            if earlier is None or _LIST_ITEM.search(self.text[earlier[1] : sentence[1]]):
                return None
            terms = {**self._weighed_terms(earlier, values=True), **terms}
            context = True
        terms = {k: t for k, t in terms.items() if t.count}
        if len(terms) < 2:
            return None
        on_cited = {k for k, t in terms.items() if any(self._carries(p, t) for p in pages)}
        if len(on_cited) < len(terms):
            also = self._carried_otherwise(span, pages)
            on_cited |= {
                k
                for k, t in terms.items()
                if k not in on_cited
                and (k in also or (t.stems and self._ocr_slip(pages, (*t.stems, t.word))))
            }
        total = sum(t.weight for t in terms.values())
        # Candidates: the pages holding the heaviest terms the cited pages lack (a term held
        # by many pages is no sign of the right one).
        lacking = sorted(
            (k for k in terms if k not in on_cited), key=lambda k: (-terms[k].weight, k)
        )
        common = max(CANDIDATE_PAGES, len(self.index.pages) // 20)
        candidates: set[int] = set()
        for k in lacking[:RARE_CANDIDATES]:
            if terms[k].count <= common:
                candidates.update(self._holders(terms[k]))
        candidates.difference_update(pages)
        if within is not None:
            candidates &= within
        best: int | None = None
        best_key: tuple[float, int] = (0.0, 0)
        for page, score in self._scores(candidates, terms).items():
            if (score, -page) > best_key:
                best, best_key = page, (score, -page)
        phrases = {} if context else self._phrase_terms(span, terms)
        if best is None:
            return None if context else self._passage_lead(span, terms, pages, within, phrases)
        # A phrase of the segment that the other page prints whole, and whose words the cited
        # pages hold apart or in part, is a fact they lack (one they print whole adds nothing
        # to its words, nor one whose words they lack: those count already).
        apart = {
            k: t
            for k, t in phrases.items()
            if any(part in on_cited for part in t.pair)
            and self._carries(best, t)
            and not self._ocr_pair(pages, t, on_cited)
            and not any(self._carries(p, t) for p in pages)
        }
        if apart:
            terms = {**terms, **apart}
            total = sum(t.weight for t in terms.values())
        on_best = {k for k, t in terms.items() if self._carries(best, t)}
        gained = on_best - on_cited  # what the other page carries and the cited ones lack
        kept = on_cited - on_best  # what only the cited pages carry
        share_gained = sum(terms[k].weight for k in gained) / total
        share_kept = sum(terms[k].weight for k in kept) / total
        share_best = sum(terms[k].weight for k in on_best) / total
        missing = sorted(gained, key=lambda k: (-terms[k].weight, k))
        words = tuple(terms[k].word for k in missing)
        # Read with the sentence before, the cite is judged wrong only when the other page
        # carries that sentence's dates or amounts too; on words alone, a person checks.
        strong = not context or any(":" in k for k in gained)
        # The cited pages carry none of its words, while the packet does (what the other
        # page holds of them; a phrase tells nothing more where none of its words is cited).
        alone = sum(t.weight for k, t in terms.items() if k in on_best and not t.pair) / sum(
            t.weight for t in terms.values() if not t.pair
        )
        if not on_cited and alone >= WRONG_PAGE_ALONE:
            status: Status = "unsupported" if strong else "needs_review"
            return _Weighed(status, best, words)
        share_cited = sum(terms[k].weight for k in on_cited) / total
        if (
            not context
            and any(":" in k for k in gained)
            and share_kept <= max(WRONG_PAGE_KEPT, share_gained * WRONG_PAGE_KEPT_RATIO)
            and share_best > share_cited
        ):
            # A date or amount of the sentence stands on the other page, which carries its
            # words as well as the cited one does: the cite is that page's neighbour.
            return _Weighed("unsupported", best, words)
        if (
            strong
            and len(gained) >= 2
            and share_gained >= WRONG_PAGE_GAIN
            and share_kept <= max(WRONG_PAGE_KEPT, share_gained * WRONG_PAGE_KEPT_RATIO)
            and share_best >= WRONG_PAGE_OTHER
        ):
            return _Weighed("unsupported", best, words)
        if (
            strong
            and not kept
            and share_best >= WRONG_PAGE_OTHER
            and len(gained) == 1
            and self._neighbour(best, pages)
            and self._named(terms[next(iter(gained))], span)
        ):
            # The sentence names someone the cited pages never print, and a neighbour prints
            # the name with all that the cited pages carry of the sentence: the name is a fact
            # (one word, but a person's), and the neighbour's page is the sentence's.
            return _Weighed("unsupported", best, words)
        if len(gained) >= 2 and share_gained >= REVIEW_GAIN and share_gained > share_kept:
            # A lead on words alone; stated together in one sentence of a neighbour, it is
            # the neighbour's fact.
            together = None if context else self._passage_lead(span, terms, pages, within, phrases)
            return together or _Weighed("needs_review", best, words)
        return None if context else self._passage_lead(span, terms, pages, within, phrases)

    def _passage_lead(
        self,
        span: tuple[int, int],
        terms: Mapping[str, "_Term"],
        pages: list[int],
        within: set[int] | None,
        phrases: Mapping[str, "_Term"],
    ) -> "_Weighed | None":
        """Support is specific: the segment's facts stand together in one sentence of a page.
        A page whose words hold the segment's terms only scattered over different sentences
        ("Lindqvist ordered the chart." and "... the transfer note in writing.") carries it less
        than a page stating them in one ("Lindqvist signed the transfer note."). The cited
        pages' best sentence is compared with the best sentence of the pages holding the
        segment's rarest terms: when another page's sentence carries at least WRONG_PAGE_OTHER
        of the terms' weight, all that the cited sentence carries, and PASSAGE_GAIN more, the
        cite is that page's neighbour (unsupported, naming it)."""
        terms = {k: t for k, t in terms.items() if not t.pair}
        words = {k: t for k, t in terms.items() if t.stems}
        if len(words) < 2:
            return None
        values = {k for k, t in terms.items() if not t.stems}
        # The cited pages' sentence that carries most of the segment, a phrase it does not
        # print whole counting as a fact it lacks (`_phrase_terms`).
        also = self._carried_otherwise(span, pages)
        cited_weight, cited, lacking = max(
            (
                self._sentence_share(terms, words, values, phrases, also, page, stems, runs)
                for page in pages
                for stems, runs in zip(self._passages(page), self._sentence_runs(page), strict=True)
            ),
            key=lambda b: (b[0] / (b[3] or 1.0), b[0]),
            default=(0.0, frozenset(), {}, 0.0),
        )[:3]
        terms = {**terms, **lacking}
        total = sum(t.weight for t in terms.values())

        def best_sentence(page: int) -> tuple[float, frozenset[str]]:
            page_values = frozenset(k for k in values if page in terms[k].pages)
            runs = self._sentence_runs(page) if lacking else None
            return _best_sentence(
                terms, {**words, **lacking}, self._passages(page), page_values, runs
            )

        common = max(CANDIDATE_PAGES, len(self.index.pages) // 20)
        heaviest = sorted(words, key=lambda k: (-words[k].weight, k))[:RARE_CANDIDATES]
        candidates: set[int] = set()
        for k in heaviest:
            if words[k].count <= common:
                candidates.update(self._holders(words[k]))
        # Its neighbours: the other pages of the cited pages' documents, which share their
        # letterhead, parties and defined terms (a page of another document is told apart by
        # its words, `_terms_elsewhere`).
        documents = {self.index.pages[p].document_id for p in pages}
        in_documents = [self._document_set(d) for d in documents]
        neighbours = in_documents[0] if len(in_documents) == 1 else frozenset().union(*in_documents)
        candidates = (candidates & neighbours).difference(pages)
        if within is not None:
            candidates &= within
        # A page whose words, even all in one sentence, could not lead is not read by sentence.
        floor = max(WRONG_PAGE_OTHER, PASSAGE_GAIN) * total
        scores = {
            p: score for p, score in self._scores(candidates, terms).items() if score >= floor
        }
        if not scores:
            return None
        # What the cited pages carry in another form (a month as "2023-11", "SLA" for "Service
        # Level") counts for their sentence: the benefit of the doubt is theirs.
        otherwise = frozenset(also & words.keys()) - cited
        cited |= otherwise
        cited_weight += sum(terms[k].weight for k in otherwise)
        if cited_weight / total >= 1 - PASSAGE_GAIN:
            return None  # the cited pages state it together: no page can lead by enough
        found: tuple[float, int, frozenset[str]] | None = None
        for page, score in sorted(scores.items()):
            if score < cited_weight + PASSAGE_GAIN * total:
                continue
            weight, held = best_sentence(page)
            if found is None or weight > found[0]:
                found = (weight, page, held)
        if found is None:
            return None
        weight, page, held = found
        gained = _leads_together(terms, (cited_weight, cited), (weight, held))
        if gained is None:
            return None
        return _Weighed("unsupported", page, gained, True)

    def _sentence_share(
        self,
        terms: Mapping[str, "_Term"],
        words: Mapping[str, "_Term"],
        values: Collection[str],
        phrases: Mapping[str, "_Term"],
        also: Collection[str],
        page: int,
        stems: frozenset[str],
        runs: list[str],
    ) -> tuple[float, frozenset[str], dict[str, "_Term"], float]:
        """What one sentence of a cited page carries of the segment: the weight and keys of
        its terms (the page's dates and amounts counted in it), the phrases whose words it holds
        apart or in part (`_phrase_terms`; a phrase whose words the page carries in another
        form, or an OCR page's, is given it) and the whole weight they make together."""
        held = frozenset(k for k, t in words.items() if any(x in stems for x in t.stems))
        held |= frozenset(k for k in values if page in terms[k].pages)
        ocr = self.index.pages[page].source == OCR
        lacking = {
            k: t
            for k, t in phrases.items()
            if any(part in held for part in t.pair)
            and not _phrase_in(stems, runs, t)
            and not (
                all(part in held or part in also for part in t.pair)
                and (ocr or any(part in also for part in t.pair))
            )
        }
        weight = sum(terms[k].weight for k in held)
        whole = sum(t.weight for t in terms.values()) + sum(t.weight for t in lacking.values())
        return weight, held, lacking, whole

    def _passages(self, page: int) -> list[frozenset[str]]:
        """The page's sentences, each as the stems of its words (cached)."""
        cached = self.passages.get(page)
        if cached is None:
            self._read_sentences(page)
            cached = self.passages[page]
        return cached

    def _sentence_runs(self, page: int) -> list[list[str]]:
        """The page's sentences (as `_passages` has them), each as its runs of words: cut
        where a phrase breaks (a comma, a colon, a bracket), each its words' stems between
        spaces, a word that is no key word as "|" (cached; see `_phrase_in`)."""
        cached = self.sentence_runs.get(page)
        if cached is None:
            self._read_sentences(page)
            cached = self.sentence_runs[page]
        return cached

    def _read_sentences(self, page: int) -> None:
        """Reads the page's sentences once for `_passages` and `_sentence_runs`."""
        record = self.index.pages[page]
        text = ocr_read(record.text) if record.source == OCR else record.text
        stem_of, shown_of = self.stems_of, self.shown_of
        passages: list[frozenset[str]] = []
        runs: list[list[str]] = []
        for part in _page_sentences(text):
            stems: set[str] = set()
            cut: list[str] = []
            for chunk in _phrases(part):
                words = nz.token_list(chunk)
                # Each word's stem and form in a run, made once a run for a word first met
                # (`_stemmed`), then looked up word by word in C.
                for word in set(words).difference(stem_of):
                    stem_of[word], shown_of[word] = _stemmed(word)
                stems.update(map(stem_of.__getitem__, words))
                if len(words) > 1:
                    cut.append(f" {' '.join(map(shown_of.__getitem__, words))} ")
            passages.append(frozenset(stems))
            runs.append(cut)
        self.passages[page] = passages
        self.sentence_runs[page] = runs

    def _phrase_terms(
        self, span: tuple[int, int], terms: Mapping[str, "_Term"]
    ) -> dict[str, "_Term"]:
        """The span's phrases: two key words that stand side by side in it, both capitalised
        (a name: "Kasimir Whitcombe") or neither (a term: "discharge summary", "royalty
        report"), no claim, comma or bracket between them ("Northcott recorded" is a name and
        a verb, no phrase). A page
        carries a phrase when it prints the two words side by side (either in a paraphrase's
        form), in that order: a name or a term of art is one fact, and a page that holds its
        words apart ("Kasimir wrote", "the minimum royalty ... a report") holds less of it. A
        phrase weighs as its lighter word and is a term of its own beside its words."""
        masked = list(self.text[span[0] : span[1]])
        first = max(0, bisect.bisect_left(self.starts, span[0]) - 3)
        for claim in self.ordered[first:]:
            if claim.start >= span[1]:
                break
            for k in range(max(claim.start, span[0]), min(claim.end, span[1])):
                masked[k - span[0]] = "|"
        out: dict[str, _Term] = {}
        for chunk in _PHRASE_BREAK.split("".join(masked)):
            found = nz.tokens(chunk)
            words = [token for token, _, _ in found]
            stems = [nz.stem(word) for word in words]  # each word stemmed once
            cased = [chunk[start : start + 1].isupper() for _, start, _ in found]
            for k, (a, b) in enumerate(itertools.pairwise(words)):
                left, right = terms.get(stems[k]), terms.get(stems[k + 1])
                if not _key_word(a) or not _key_word(b) or left is None or right is None:
                    continue
                if cased[k] != cased[k + 1]:
                    continue  # a name and a word ("Northcott recorded"): no phrase
                if not left.stems or not right.stems or left is right:
                    continue
                key = f"{stems[k]} {stems[k + 1]}"
                out[key] = _Term(
                    f"{a} {b}",
                    min(left.count, right.count),
                    min(left.weight, right.weight),
                    pair=(stems[k], stems[k + 1]),
                    groups=(left.stems, right.stems),
                    group_holders=(left.holders, right.holders),
                )
        return out

    def _weighed_terms(self, span: tuple[int, int], *, values: bool = False) -> dict[str, "_Term"]:
        """The span's key terms (outside its claims), each with the pages that carry it or a
        paraphrase and its weight; with `values`, its dates and amounts as terms too."""
        out: dict[str, _Term] = {}
        masked = list(self.text[span[0] : span[1]])
        first = max(0, bisect.bisect_left(self.starts, span[0]) - 3)
        for claim in self.ordered[first:]:
            if claim.start >= span[1]:
                break
            if is_month_day(claim.value):
                continue  # a year-less date: its month is a word of the segment, as before
            for k in range(max(claim.start, span[0]), min(claim.end, span[1])):
                masked[k - span[0]] = " "
        frame = _FRAME.match(self.text, span[0], span[1])
        if frame is not None and _is_frame(frame.group("frame")):
            for k in range(frame.start("frame"), frame.end("frame")):
                masked[k - span[0]] = " "
        for word in nz.token_list("".join(masked)):
            if word in nz.STOPWORDS or len(word) < 3 or (word.isdigit() and len(word) < 4):
                continue
            if word in LIGHT_VERBS:
                continue
            term = nz.stem(word)
            if term in out:
                continue
            group = PARAPHRASE_OF.get(term, (term,))
            if len(group) == 1:
                holders: Collection[int] = self.index.pages_with_term(term)
            else:
                holders = _pages_with_any(self.index, group)
            count = len(holders)
            factor = 2.0 if word.isdigit() else 1.0
            weight = factor * _weight_of(self.index, count)
            out[term] = _Term(word, count, weight, stems=group, holders=holders)
        if values:
            for claim in self.members(span, ("date", "amount")):
                if claim.value is None or is_month_day(claim.value):
                    continue
                what = "date" if claim.kind == "date" else "amount"
                held = frozenset(self.index.value_pages(what, claim.value))
                weight = 2.0 * _weight_of(self.index, len(held))
                out[f"{what}:{claim.value}"] = _Term(claim.text, len(held), weight, pages=held)
        return out

    def _carries(self, page: int, term: "_Term") -> bool:
        """The page holds the term (a date or amount: that value), or a paraphrase of it."""
        if term.pair:
            if not self._holds_words(page, term):
                return False
            sentences = zip(self._passages(page), self._sentence_runs(page), strict=True)
            return any(_phrase_in(stems, runs, term) for stems, runs in sentences)
        if not term.stems:
            return page in term.pages
        stems = self.index.stems[page]
        return any(s in stems for s in term.stems)

    def _neighbour(self, page: int, pages: Sequence[int]) -> bool:
        """Whether `page` is another page of a cited page's document."""
        return any(page in self._document_set(self.index.pages[p].document_id) for p in pages)

    def _named(self, term: "_Term", span: tuple[int, int]) -> bool:
        """Whether the term is a name: one word that the segment writes with a capital and the
        packet prints with one wherever it prints it in lower case letters too (on up to
        NAME_PAGES of its pages; a heading's capitals tell nothing), as "Castellanos". A
        sentence's first word has a capital whatever it is: the packet's pages tell a name
        from a word."""
        if not term.stems or term.pair:
            return False
        pattern = re.compile(rf"\b{re.escape(term.word)}\b", re.IGNORECASE)
        if not any(m.group()[:1].isupper() for m in pattern.finditer(self.text, *span)):
            return False
        printed = False
        for page in sorted(term.holders)[:NAME_PAGES]:
            for match in pattern.finditer(self.index.pages[page].text):
                word = match.group()
                if word.isupper():
                    continue
                if not word[:1].isupper():
                    return False
                printed = True
        return printed

    def _holds_words(self, page: int, term: "_Term") -> bool:
        """The page holds both words of the phrase `term` (or their paraphrases), anywhere."""
        stems = self.index.stems[page]
        return all(any(s in stems for s in group) for group in term.groups)

    def _holders(self, term: "_Term") -> Collection[int]:
        """The pages holding the term or a paraphrase (few: see CANDIDATE_PAGES)."""
        if not term.stems:
            return term.pages
        return term.holders

    def _scores(self, candidates: set[int], terms: Mapping[str, "_Term"]) -> dict[int, float]:
        """Each candidate page's weight of the terms it carries (the terms added in their
        order, as a sum over them per page would). A term held by fewer pages than there are
        candidates walks its holders; a common one is a set of its pages, made once a run."""
        scores = dict.fromkeys(candidates, 0.0)
        for term in terms.values():
            if term.pair:
                # A page holding both words may print them side by side: counted as if it
                # did (an upper bound for `_passage_lead`'s candidates, whose sentences are
                # read next). The pages holding each word, as sets (`_holds_words` of every
                # candidate page, without reading each page's terms).
                left, right = (
                    _holding(self._held_set(stems, held), scores)
                    for stems, held in zip(term.groups, term.group_holders, strict=True)
                )
                for page in left.intersection(right):
                    scores[page] += term.weight
                continue
            held = self._holders(term)
            if isinstance(held, Collection) and len(held) <= len(scores):
                for page in held:
                    if page in scores:
                        scores[page] += term.weight
                continue
            if term.stems:
                # A common word recurs in many claims' sentences: its pages, once as a set.
                held = self._held_set(term.stems, held)
            for page in _holding(held, scores):
                scores[page] += term.weight
        return scores

    def _document_set(self, document_id: int) -> frozenset[int]:
        """The pages of a document, as a set made once a run."""
        known = self.document_sets.get(document_id)
        if known is None:
            known = self.document_sets[document_id] = frozenset(
                self.index.document_pages(document_id)
            )
        return known

    def _held_set(
        self, stems: tuple[str, ...], held: Iterable[int]
    ) -> "AbstractSet[int] | list[int]":
        """`held`, the pages holding a word of `stems` (a `_Term`'s holders), as a set made
        once a run; a word's own pages (`PacketIndex.pages_with_term`, a list in packet order)
        as they are, asked by bisection (`_holding`): a common word's thousands of pages made
        a set cost more than the look-ups."""
        if isinstance(held, list):
            return held
        known = self.held.get(stems)
        if known is None:
            known = self.held[stems] = frozenset(held)
        return known

    def _carried_otherwise(self, span: tuple[int, int], pages: list[int]) -> set[str]:
        """Key terms of the span the cited pages carry in another form: the month of a
        year-month figure ("2023-11", "11/2023": November), and a run of the span's words
        that an abbreviation on the page stands for ("SLA": "Service Level")."""
        carried: set[str] = set()
        acronyms: set[str] = set()
        for page in pages:
            months, shorts = self._page_forms(page)
            carried |= months
            acronyms |= shorts
        words = [w for w in nz.token_list(self.text[span[0] : span[1]]) if w.isalpha()]
        # An abbreviation the span writes itself ("the CAM reconciliation") is that word, no
        # stand-in for a run of the span's other words ("Castellanos allowed").
        acronyms.difference_update(words)
        if acronyms:
            content = [w for w in words if w not in nz.STOPWORDS]
            for i in range(len(content) - 1):
                for j in range(i + 2, min(len(content), i + 5) + 1):
                    initials = "".join(w[0] for w in content[i:j])
                    if any(
                        a == initials or (a.startswith(initials) and len(a) == j - i + 1)
                        for a in acronyms
                    ):
                        carried.update(nz.stem(w) for w in content[i:j])
        return carried

    def _page_forms(self, page: int) -> tuple[frozenset[str], frozenset[str]]:
        """The page's months of year-month figures (stems) and its abbreviations (cached)."""
        cached = self.forms.get(page)
        if cached is None:
            text = self.index.pages[page].text
            months = frozenset(
                nz.stem(_MONTHS[int(m.group("m1") or m.group("m2")) - 1])
                for m in _YEAR_MONTH.finditer(text)
            )
            shorts = frozenset(m.group().lower() for m in _ACRONYM.finditer(text))
            cached = self.forms[page] = (months, shorts)
        return cached

    def _ocr_pair(self, pages: list[int], term: "_Term", carried: set[str]) -> bool:
        """An OCR page among `pages` holds both words of the phrase `term` (OCR may break the
        line or the spacing between them: the benefit of the doubt is the page's)."""
        return all(part in carried for part in term.pair) and any(
            self.index.pages[p].source == OCR for p in pages
        )

    def _ocr_slip(self, pages: list[int], group: Sequence[str]) -> bool:
        """An OCR page among `pages` holds a stem of `group` one slip away."""
        return any(
            self.index.pages[p].source == OCR and self.index.has_term(p, t)
            for p in pages
            for t in group
        )

    def _sentence_of(self, span: tuple[int, int]) -> tuple[int, int]:
        """The sentence of the draft that `span` starts in."""
        if self.all_sentences is None:
            self.previous_sentence((0, 0))
        found = self.all_sentences or []
        if len(self.sentence_starts) != len(found):
            self.sentence_starts = [start for start, _ in found]
        at = bisect.bisect_right(self.sentence_starts, span[0]) - 1
        return found[at] if at >= 0 else span

    def not_a_record_cite(self, claim: Claim) -> Finding:
        named = self._titled_after_all(claim)
        if named is not None:
            return named
        if _GENERATED.search(claim.text) or is_generated_reference(claim.text):
            message = (
                f"{claim.text!r} refers to a system-generated document (an earlier draft or "
                "summary), which is not evidence and not in the packet"
            )
            return Finding(claim, "unsupported", "system_generated_reference", message)
        document = self._named_document(claim.text)
        if document is not None:
            return self._document_cite(claim, document)
        what, printed = self._what_it_is(claim.text)
        page = self.index.pages[printed[0]] if printed else None
        return Finding(
            claim,
            "unsupported",
            "not_a_record_cite",
            f"{claim.text!r} stands where a record cite belongs but is not one of this case: "
            f"{what}",
            page=page,
            excerpt=excerpt_of(page.text, *printed[1]) if page and printed else "",
            match=printed[1] if printed else None,
        )

    def _titled_after_all(self, claim: Claim) -> Finding | None:
        """A piece the extractor read as no record cite by its words ("Discharge Summary at 1":
        "summary" is a word of the system's own work) that names a packet document with a
        page, every word of the name in that document's file name or title: a cite of that
        document, checked as one (the packet decides, not a list of words)."""
        found = document_name_cite(claim.text)
        if found is None:
            return None
        title, pin = found
        if self.documents is None:
            self.documents = exhibits.catalogue(self.index)
        if exhibits.titled(self.documents, self.index, title, names_only=True).document is None:
            return None
        return self._named_cite(replace(claim, kind="record_cite", title=title, pins=(pin,)))

    def _what_it_is(self, text: str) -> tuple[str, tuple[int, tuple[int, int]] | None]:
        """Why a token used as a cite is none of this case's (from the packet, not a list of
        words): where the packet prints it, else what its shape says it is."""
        printed = self.index.printed_on(text)
        spans = self._production_spans()
        if printed is not None:
            page, _ = printed
            return (
                f"it is printed on {self.index.label(page)} "
                f"({self.index.pages[page].filename}), a number of the document or of another "
                f"production, not a Bates number of this production ({spans})",
                printed,
            )
        if _FILE_NAME.search(text):
            return f"a file name, not a document of the packet; this production is {spans}", None
        return f"not a Bates number of this production ({spans}), an exhibit or a document", None

    def _production_spans(self) -> str:
        """The packet's Bates labels by prefix, for messages ("ABC000001-ABC000240")."""
        if self.spans_label is None:
            prefixes: dict[str, str] = {}
            for page in self.index.pages:
                for label in page.bates:
                    key, parts = bates_key(label), split_label(label)
                    if key is not None and parts is not None:
                        prefixes.setdefault(key[0], parts[0])
            spans = [self.index.bates_span(prefix) for prefix in list(prefixes.values())[:4]]
            self.spans_label = ", ".join(f"{a}-{b}" for a, b in filter(None, spans)) or "none"
        return self.spans_label

    def _named_document(self, text: str) -> int | None:
        """The packet document whose file name `text` names (with or without its extension,
        any case, a pin after it), or None."""
        name = _FILE_NAME.search(text)
        wanted = (name.group() if name else text).strip().lower()
        if not wanted:
            return None
        for document, filename in self.index.document_names().items():
            lower = filename.lower()
            if wanted in (lower, lower.rsplit(".", 1)[0]):
                return document
        return None

    def _document_cite(self, claim: Claim, document: int) -> Finding:
        """A packet document cited by its file name, with a page pin ("report.pdf at 3") or
        without one (the whole document): its pages carry the segment as a Bates cite's do."""
        pages = self.index.document_pages(document)
        pin = re.search(r"(?:\bat|\bpp?\.)\s*(\d{1,4})\s*$", claim.text)
        if pin is not None:
            number = int(pin.group(1))
            chosen = [p for p in pages if self.index.pages[p].page_number == number]
            if not chosen:
                return Finding(
                    claim,
                    "unsupported",
                    "record_cite_page",
                    f"{self.index.pages[pages[0]].filename} has no page {number} (it has "
                    f"{len(pages)})",
                    page=self.index.pages[pages[0]],
                )
            pages = chosen
        return self.judge_pages(claim, pages)

    # -- dates and amounts --------------------------------------------------------------

    def value(self, claim: Claim) -> Finding:
        what = "date" if claim.kind == "date" else "amount"
        if claim.value is None:
            return Finding(
                claim, "needs_review", f"{what}_unreadable", f"the {what} could not be read"
            )
        cite = self.closing_cite(claim)
        pages: list[int] = []
        if cite is not None and cite.kind == "record_cite":
            pages = self.group_pages(cite, self.cite_pages(cite))
        cited = self._sentence_record_pages(claim)
        if not pages:
            pages = cited
        if not pages:
            return self._value_anywhere(claim, claim.value, what)
        finding = self._value_on_pages(claim, claim.value, what, pages)
        if finding.status == "supported":
            return finding
        # Every cite of the sentence counts: another one's page may carry the value.
        rest = [p for p in cited if p not in pages]
        if rest:
            other = self._value_on_pages(claim, claim.value, what, rest)
            if other.status == "supported":
                return replace(other, message=f"{other.message} (another cite of the sentence)")
        if is_month_day(claim.value) and cite is not None:
            moved = self._under_wrong_cite(claim, cite)
            if moved is not None:
                return moved
        return self._named_elsewhere(finding, claim, what, [*pages, *rest])

    def _named_elsewhere(
        self, finding: Finding, claim: Claim, what: str, cited: list[int]
    ) -> Finding:
        """A value not on its cited pages: the finding names the pages of the packet that do
        carry it, if any (the value is there, under another cite)."""
        held = [p for p in self.index.value_pages(what, claim.value or "") if p not in cited]
        if claim.years:
            held = [
                p for p in held if any(_same(claim, v.value) for v in self._page_values(what, p))
            ]
        if not held:
            return finding
        shown = ", ".join(self.index.label(p) for p in held[:3]) + (
            f" and {len(held) - 3} more" if len(held) > 3 else ""
        )
        return replace(finding, message=f"{finding.message}; it stands on {shown}")

    def _under_wrong_cite(self, claim: Claim, cite: Claim) -> Finding | None:
        """A year-less date ("The November 8 outage (X)") not on its cite's page, where the cite
        is itself flagged (unsupported: another page carries the sentence): the cite says
        nothing of where the date is, so the date is read as one without a cite (some page of
        the packet must carry it), and the one error is flagged once, on the cite. None when
        the cite is not flagged or no page carries the date either."""
        verdict = self.record_cite(cite) if cite.kind == "record_cite" else None
        if verdict is None or verdict.status != "unsupported":
            return None
        found = self._value_anywhere(claim, claim.value or "", "date")
        if found.status != "supported":
            return None
        return replace(
            found,
            message=f"{found.message} (the sentence's cite {cite.text} is flagged: "
            f"{verdict.message})",
        )

    def _sentence_record_pages(self, claim: Claim) -> list[int]:
        pages: list[int] = []
        for cite in self.cites_by_sentence.get(claim.sentence, []):
            if cite.kind == "record_cite":
                pages.extend(p for p in self.cite_pages(cite) if p not in pages)
        return pages

    def _page_values(self, what: str, page: int) -> list[Value]:
        return self.index.dates[page] if what == "date" else self.index.amounts[page]

    def _value_on_pages(self, claim: Claim, value: str, what: str, pages: list[int]) -> Finding:
        others: list[tuple[int, Value]] = []
        for page in pages:
            for found in self._page_values(what, page):
                if _same(claim, found.value):
                    record = self.index.pages[page]
                    return Finding(
                        claim,
                        "supported",
                        f"{what}_on_cited_page",
                        f"{self.index.label(page)} reads {record.text[found.start : found.end]!r}"
                        + _read_as(what, claim.text, value, shown_text(record, found), found.value),
                        page=record,
                        excerpt=excerpt_of(record.text, found.start, found.end),
                        match=(found.start, found.end),
                    )
                others.append((page, found))
        label = pages_label(self.index, pages)
        if others:
            page, nearest = min(others, key=lambda pv: _distance(what, value, pv[1].value))
            if is_month_day(value) and same_day(value, nearest.value):
                # The month and day are there, in another year than the sentence gives.
                years = "/".join(map(str, claim.years))
                shown = self.index.pages[page].text[nearest.start : nearest.end]
                return Finding(
                    claim,
                    "contradicted",
                    f"{what}_on_cited_page",
                    f"the cited page {self.index.label(page)} gives {shown!r}, not "
                    f"{claim.text!r} of {years}",
                    page=self.index.pages[page],
                    excerpt=excerpt_of(self.index.pages[page].text, nearest.start, nearest.end),
                    match=(nearest.start, nearest.end),
                    found_value=nearest.value,
                )
            record = self.index.pages[page]
            shown = record.text[nearest.start : nearest.end]
            return Finding(
                claim,
                "contradicted",
                f"{what}_on_cited_page",
                f"the cited page {self.index.label(page)} gives {shown!r}, not {claim.text!r}"
                + _read_as(what, claim.text, value, shown, nearest.value),
                page=record,
                excerpt=excerpt_of(record.text, nearest.start, nearest.end),
                match=(nearest.start, nearest.end),
                found_value=nearest.value,
            )
        return Finding(
            claim,
            "unsupported",
            f"{what}_on_cited_page",
            f"{claim.text!r} is not on the cited page {label}"
            + _read_as(what, claim.text, value, ""),
        )

    def _value_anywhere(self, claim: Claim, value: str, what: str) -> Finding:
        held = self.index.value_pages(what, value)
        if claim.years:  # a year-less date of the sentence's year: a page of that year
            held = [
                p for p in held if any(_same(claim, v.value) for v in self._page_values(what, p))
            ]
        if not held:
            years = f" in {'/'.join(map(str, claim.years))}" if claim.years else ""
            return Finding(
                claim,
                "unsupported",
                f"{what}_in_packet",
                f"{claim.text!r} appears nowhere in the packet{years}",
            )
        page = held[0]
        record = self.index.pages[page]
        found = next(v for v in self._page_values(what, page) if _same(claim, v.value))
        return Finding(
            claim,
            "supported",
            f"{what}_in_packet",
            f"{self.index.label(page)} reads {record.text[found.start : found.end]!r}",
            page=record,
            excerpt=excerpt_of(record.text, found.start, found.end),
            match=(found.start, found.end),
        )

    # -- quotations ---------------------------------------------------------------------

    def quote(self, claim: Claim) -> Finding:
        segments = quote_segments(claim.quote if claim.quote is not None else claim.text)
        words = [w for s in segments for w in s]
        if not words:
            return Finding(claim, "unsupported", "quote_verbatim", "the quotation has no words")
        cite = self.closing_cite(claim)
        cited = self.cite_pages(cite) if cite is not None and cite.kind == "record_cite" else []
        hit = (self.index.find_quote(segments, within=cited) if cited else None) or (
            self.index.find_quote(segments)
        )
        if hit is not None:
            how = "verbatim" if hit.exact else "verbatim up to OCR slips"
            label = self.index.label(self.index.page_index(hit.page))
            return Finding(
                claim,
                "supported",
                "quote_verbatim",
                f"{how} on {label}",
                page=hit.page,
                excerpt=excerpt_of(hit.page.text, *hit.span),
                match=hit.span,
            )
        if len(words) < SHORT_QUOTE:
            variant = self._short_variant(words, cited)
            if variant is not None:
                passage = variant.page.text[variant.span[0] : variant.span[1]]
                label = self.index.label(self.index.page_index(variant.page))
                return Finding(
                    claim,
                    "unsupported",
                    "quote_verbatim",
                    f"misquote: the cited page {label} reads {' '.join(passage.split())!r}",
                    page=variant.page,
                    excerpt=excerpt_of(variant.page.text, *variant.span),
                    match=variant.span,
                )
            return Finding(
                claim,
                "needs_review",
                "quote_verbatim",
                "a short quoted term not found in the packet (a quotation or a "
                "term of the drafter's own?)",
            )
        closest = self.index.closest_passage(words, within=cited) if cited else None
        if closest is None or closest.ratio < MISQUOTE_RATIO:
            closest = self.index.closest_passage(words)
        if closest is not None and closest.ratio >= MISQUOTE_RATIO:
            passage = closest.page.text[closest.span[0] : closest.span[1]]
            label = self.index.label(self.index.page_index(closest.page))
            return Finding(
                claim,
                "unsupported",
                "quote_verbatim",
                f"misquote: the closest passage, on {label}, reads {' '.join(passage.split())!r}",
                page=closest.page,
                excerpt=excerpt_of(closest.page.text, *closest.span),
                match=closest.span,
            )
        return Finding(
            claim, "unsupported", "quote_verbatim", "no such passage anywhere in the packet"
        )

    def _short_variant(self, words: list[str], cited: list[int]) -> QuoteHit | None:
        """A short quoted term (two or three words) that a cited page prints with one word
        changed into a form of itself ("mortar covered" for "mortar uncovered"), or with one
        word added or dropped around two that stand: a misquote. A term that changes a word
        for an unrelated one, or shares less, may be the drafter's own: left for review."""
        n = len(words)
        if n < 2 or len(cited) > SHORT_VARIANT_PAGES:
            return None
        for page in cited:
            detail = self.index.detail(page)
            body = detail.body_words
            for start in range(len(body)):
                for size in (n, n - 1, n + 1):
                    window = body[start : start + size]
                    if len(window) != size or not _one_word_off(words, window):
                        continue
                    first, last = detail.body[start], detail.body[start + size - 1]
                    span = (detail.spans[first][0], detail.spans[last][1])
                    return QuoteHit(self.index.pages[page], span, False, (n - 1) / n)
        return None

    # -- case citations -----------------------------------------------------------------

    def case_citation(self, claim: Claim) -> Finding:
        cite = claim.citation
        if cite is None:
            return Finding(claim, "unsupported", "case_in_packet", "the citation could not be read")
        if cite.short and not cite.resolved:
            opinion = self.bind_short(claim)
            if opinion is None:
                return Finding(
                    claim,
                    "unsupported",
                    "case_short_form",
                    "this short form (Id., supra) names no full citation of the draft and no "
                    "opinion of the packet by its name, volume and reporter",
                )
            first = opinion.pages[opinion.first_page]
            if cite.pin is None:
                return Finding(
                    claim,
                    "supported",
                    "case_in_packet",
                    "the short form names an opinion of the packet",
                    page=first,
                    excerpt=excerpt_of(first.text, 0, 200),
                )
            return self._pin(claim, cite.pin, opinion)
        years = _edition_years(cite.reporter)
        if cite.year is not None and years is not None and not (years[0] <= cite.year <= years[1]):
            return Finding(
                claim,
                "unsupported",
                "case_reporter_year",
                f"{cite.reporter} was published {years[0]}-{years[1]}; a {cite.year} "
                "decision cannot be reported there",
            )
        opinion = self.index.opinion(cite.volume, cite.reporter, cite.page)
        if opinion is None:
            name = f"{cite.name}, " if cite.name else ""
            return Finding(
                claim,
                "unsupported",
                "case_in_packet",
                f"{name}{cite.volume} {cite.reporter} {cite.page}: {NOT_IN_EVIDENCE}",
            )
        first = opinion.pages[opinion.first_page]
        if cite.name and not self._name_fits(cite.name, first):
            return Finding(
                claim,
                "unsupported",
                "case_name",
                f"the opinion at {cite.volume} {cite.reporter} {cite.page} in the "
                f"packet is not {cite.name}",
                page=first,
            )
        if cite.pin is None:
            return Finding(
                claim,
                "supported",
                "case_in_packet",
                "the opinion is in the packet",
                page=first,
                excerpt=excerpt_of(first.text, 0, 200),
            )
        return self._pin(claim, cite.pin, opinion)

    def bind_short(self, claim: Claim) -> Opinion | None:
        """The packet opinion a short form the draft could not bind names (cached):

        1. "Id."/"Ibid.": the opinion of the citation just before it in the draft, when that is
           a case citation (after a record cite, "Id." is that record);
        2. a name with a volume and reporter ("Halloran, 341 P.3d at 883"): an opinion of the
           packet reported in that volume whose caption holds the name and whose pages hold
           the pin;
        3. a name with "supra": the opinion of the packet whose caption holds the name."""
        if claim.start in self.bound:
            return self.bound[claim.start]
        self.bound[claim.start] = None  # a chain never loops
        cite = claim.citation
        opinion: Opinion | None = None
        words = claim.text.strip()
        if cite is not None and re.match(r"(?i)(?:see\s+)?(?:id\.|ibid)", words):
            before = bisect.bisect_left(self.starts, claim.start) - 1
            while before >= 0 and self.ordered[before].kind not in CITES:
                before -= 1
            if before >= 0 and self.ordered[before].kind == "case_citation":
                opinion = self._opinion_of(self.ordered[before])
        elif cite is not None:
            name = _SHORT_NAME.match(words)
            named = name.group("name") if name else ""
            if cite.volume and cite.reporter:
                pins = pin_numbers(cite.pin or "")
                fitting = [
                    found
                    for found in self.index.opinions_citing(cite.volume, cite.reporter)
                    if not named or self._name_fits(named, found.pages[found.first_page])
                ]
                # The one whose pages hold the pin; else the pin is checked against the first.
                opinion = next(
                    (o for o in fitting if all(n in o.pages for n in pins)),
                    next(iter(fitting), None),
                )
            elif named:
                opinion = next(iter(self.index.opinions_named(named)), None)
        self.bound[claim.start] = opinion
        return opinion

    def _opinion_of(self, claim: Claim) -> Opinion | None:
        cite = claim.citation
        if cite is None:
            return None
        if cite.short and not cite.resolved:
            return self.bind_short(claim)
        return self.index.opinion(cite.volume, cite.reporter, cite.page)

    def _name_fits(self, name: str, first: PageRecord) -> bool:
        index = self.index.page_index(first)
        words = [w for w in nz.token_list(name) if w not in nz.STOPWORDS and len(w) >= 3]
        if not words:
            return True
        return self.index.has_term(index, nz.stem(words[0]))

    def _pin(self, claim: Claim, pin: str, opinion: Opinion) -> Finding:
        pages, first, last = opinion.pages, opinion.first_page, opinion.last_page
        numbers = pin_numbers(pin)
        if not numbers or any(n not in pages for n in numbers):
            return Finding(
                claim,
                "unsupported",
                "case_pin",
                f"pin cite {pin} is outside the opinion's pages {first}-{last}"
                if numbers
                else f"the pin cite {pin!r} names no page",
                page=pages[first],
            )
        from apps.verification import footnotes  # footnote pins (issue 28 req 1)

        quoted_segments = [
            quote_segments(q.quote or q.text) for q in self.members(self.segment(claim), ("quote",))
        ]
        on_note = footnotes.check(claim, pin, numbers, opinion, self.index, quoted_segments)
        if on_note is not None:
            return on_note
        if opinion.spans:
            return self._star_pin(claim, pin, numbers, opinion)
        pin_pages = [self.index.page_index(pages[n]) for n in numbers]
        opinion_pages = [self.index.page_index(p) for p in pages.values()]
        span = self.segment(claim)
        for quote in self.members(span, ("quote",)):
            segments = quote_segments(quote.quote or quote.text)
            if self.index.find_quote(segments, within=pin_pages) is None:
                elsewhere = self.index.find_quote(segments, within=opinion_pages)
                if elsewhere is not None:
                    label = self._reporter_page(pages, elsewhere.page)
                    return Finding(
                        claim,
                        "unsupported",
                        "case_pin",
                        f"the quotation is at {label}, not at the pin cite {pin}",
                        page=elsewhere.page,
                        match=elsewhere.span,
                    )
        quoted = any(len(quote_words(q)) >= SHORT_QUOTE for q in self.members(span, ("quote",)))
        if not quoted:
            # The pin must carry the proposition: its words, weighed as a record cite's are,
            # against the opinion's other pages.
            weighed = self._terms_elsewhere(span, pin_pages, within=set(opinion_pages))
            if weighed is not None and weighed.status == "unsupported":
                other = self.index.pages[weighed.page]
                shown = ", ".join(repr(w) for w in weighed.words[:4])
                return Finding(
                    claim,
                    "unsupported",
                    "case_pin",
                    f"page {pin} of the opinion does not carry {shown}; page "
                    f"{self._reporter_page(pages, other)} does",
                    page=other,
                    excerpt=excerpt_of(other.text, 0, 200),
                )
        # A range ("640-41") holds the proposition on any of its pages: the finding names the
        # one that carries most of it.
        number = self._carrying_page(span, numbers, pin_pages)
        page = pages[number]
        return Finding(
            claim,
            "supported",
            "case_pin",
            f"the opinion is in the packet and page {number} carries the proposition",
            page=page,
            excerpt=excerpt_of(page.text, 0, 200),
        )

    def _carrying_page(
        self, span: tuple[int, int], numbers: list[int], pin_pages: list[int]
    ) -> int:
        """The reporter page of a pin's `numbers` (printed on `pin_pages`, in order) that
        carries most of the segment's key terms; the first on a tie."""
        if len(numbers) < 2:
            return numbers[0]
        terms = {k: t for k, t in self._weighed_terms(span).items() if t.count}
        scores = self._scores(set(pin_pages), terms) if terms else {}
        best = max(range(len(numbers)), key=lambda k: (scores.get(pin_pages[k], 0.0), -k))
        return numbers[best]

    def _star_pin(self, claim: Claim, pin: str, numbers: list[int], opinion: Opinion) -> Finding:
        """A pin into an opinion whose reporter pages are marked in its text: the quotation
        must stand in (or run over into) the pin's pages, and its words be carried there
        better than on the opinion's other reporter pages."""
        parts = opinion.spans
        span = self.segment(claim)
        files = sorted({i for number in parts for i, _, _ in parts[number]})
        for quote in self.members(span, ("quote",)):
            hit = self.index.find_quote(quote_segments(quote.quote or quote.text), within=files)
            if hit is None:
                continue
            where = self.index.page_index(hit.page)
            holding = [
                number
                for number, pieces in parts.items()
                if any(i == where and a < hit.span[1] and hit.span[0] < b for i, a, b in pieces)
            ]
            if holding and not set(holding) & set(numbers):
                return Finding(
                    claim,
                    "unsupported",
                    "case_pin",
                    f"the quotation is at {holding[0]}, not at the pin cite {pin}",
                    page=hit.page,
                    excerpt=excerpt_of(hit.page.text, *hit.span),
                    match=hit.span,
                )
        quoted = any(len(quote_words(q)) >= SHORT_QUOTE for q in self.members(span, ("quote",)))
        first = parts[numbers[0]][0]
        record = self.index.pages[first[0]]
        if not quoted:
            better = self._better_reporter_page(span, numbers, opinion)
            if better is not None:
                number, words = better
                where_part = parts[number][0]
                other = self.index.pages[where_part[0]]
                shown = ", ".join(repr(w) for w in words[:4])
                return Finding(
                    claim,
                    "unsupported",
                    "case_pin",
                    f"page {pin} of the opinion does not carry {shown}; page {number} does",
                    page=other,
                    excerpt=excerpt_of(other.text, where_part[1], where_part[2]),
                    match=(where_part[1], where_part[2]),
                )
        return Finding(
            claim,
            "supported",
            "case_pin",
            f"the opinion is in the packet and page {numbers[0]} carries the proposition",
            page=record,
            excerpt=excerpt_of(record.text, first[1], first[2]),
            match=(first[1], first[2]),
        )

    def _better_reporter_page(
        self, span: tuple[int, int], numbers: list[int], opinion: Opinion
    ) -> tuple[int, tuple[str, ...]] | None:
        """Another reporter page of a star-paged opinion that carries the segment's key
        terms clearly better than the pin's pages (the thresholds of a wrong record page),
        with the words it adds; None when the pin holds its own."""
        terms = {k: t for k, t in self._weighed_terms(span).items() if t.count}
        if len(terms) < 2:
            return None
        read = self.index.derived(
            ("reporter pages", opinion.document_id, opinion.first_page),
            lambda: _reporter_pages_read(self.index, opinion),
        )
        stems, sentences = read.stems, read.sentences

        def carried(pages: Iterable[int]) -> set[str]:
            held = frozenset().union(*(stems[n] for n in pages))
            return {k for k, t in terms.items() if any(s in held for s in t.stems)}

        total = sum(t.weight for t in terms.values())
        on_pin = carried(numbers)
        # Only pages that may carry the share a wrong page's lead needs are weighed.
        leads = _reaching(read, terms, [k for k, t in terms.items() if t.stems], WRONG_PAGE_ALONE)
        best, on_best = max(
            ((n, carried([n])) for n in leads if n not in numbers),
            key=lambda item: (sum(terms[k].weight for k in item[1]), -item[0]),
            default=(0, set()),
        )
        gained, kept = on_best - on_pin, on_pin - on_best
        share_gained = sum(terms[k].weight for k in gained) / total
        share_kept = sum(terms[k].weight for k in kept) / total
        share_best = sum(terms[k].weight for k in on_best) / total
        wrong = (not on_pin and share_best >= WRONG_PAGE_ALONE) or (
            len(gained) >= 2
            and share_gained >= WRONG_PAGE_GAIN
            and share_kept <= max(WRONG_PAGE_KEPT, share_gained * WRONG_PAGE_KEPT_RATIO)
            and share_best >= WRONG_PAGE_OTHER
        )
        if wrong:
            words = tuple(
                terms[k].word for k in sorted(gained, key=lambda k: (-terms[k].weight, k))
            )
            return best, words
        # Support is specific: another reporter page that states the proposition in one
        # sentence, where the pin's pages hold its words only apart (see `_passage_lead`).
        on_pin_sentence = max(
            (_best_sentence(terms, terms, sentences[n]) for n in numbers if n in sentences),
            key=lambda b: b[0],
            default=(0.0, frozenset()),
        )
        sentence_keys = [k for k, t in terms.items() if t.stems and not t.pair]
        leader = max(
            (
                (n, _best_sentence(terms, terms, sentences[n]))
                for n in _reaching(read, terms, sentence_keys, WRONG_PAGE_OTHER)
                if n not in numbers
            ),
            key=lambda item: (item[1][0], -item[0]),
            default=None,
        )
        if leader is None:
            return None
        together = _leads_together(terms, on_pin_sentence, leader[1])
        return (leader[0], together) if together is not None else None

    @staticmethod
    def _reporter_page(pages: dict[int, PageRecord], page: PageRecord) -> str:
        return next((str(n) for n, p in pages.items() if p is page), "another page")


@dataclass(frozen=True)
class _ReporterPages:
    """A star-paged opinion's reporter pages as `_better_reporter_page` weighs them."""

    stems: dict[int, frozenset[str]]  # each page's stems
    sentences: dict[int, list[frozenset[str]]]  # the stems of each of its sentences
    pages_with: dict[str, set[int]]  # a stem -> the pages holding it (in either)


def _reporter_pages_read(index: PacketIndex, opinion: Opinion) -> _ReporterPages:
    """Read once per index and opinion: a brief pins one opinion many times."""
    stem_of = index.stem_table()

    def stemmed(text: str) -> frozenset[str]:
        tokens = nz.token_list(text)
        for token in tokens:
            if token not in stem_of:
                stem_of[token] = nz.stem(token)
        return frozenset(map(stem_of.__getitem__, tokens))

    stems: dict[int, frozenset[str]] = {}
    sentences: dict[int, list[frozenset[str]]] = {}
    pages_with: dict[str, set[int]] = {}
    for number, pieces in opinion.spans.items():
        parts = [stemmed(index.pages[i].text[a:b]) for i, a, b in pieces]
        stems[number] = frozenset().union(*parts)
        text = " ".join(index.pages[i].text[a:b] for i, a, b in pieces)
        sentences[number] = [stemmed(part) for part in _page_sentences(text)]
        for stem in stems[number].union(*sentences[number]):
            pages_with.setdefault(stem, set()).add(number)
    return _ReporterPages(stems, sentences, pages_with)


def _reaching(
    read: _ReporterPages, terms: Mapping[str, "_Term"], keys: Sequence[str], share: float
) -> list[int]:
    """The reporter pages, in order, that may carry `share` of the terms' weight by the terms
    `keys` (those that can count there, by their stems): the pages holding a stem of one of
    the heaviest of them, as few as weigh more than a page may lack and still reach `share`.
    A page holding none of those carries less (a wrong page's lead needs at least that)."""
    total = sum(t.weight for t in terms.values())
    may_lack = sum(terms[k].weight for k in keys) - share * total
    heavy: list[str] = []
    held = 0.0
    for key in sorted(keys, key=lambda k: -terms[k].weight):
        if held > may_lack + 1e-9 * total:  # strictly, past rounding
            break
        heavy.append(key)
        held += terms[key].weight
    return sorted({n for k in heavy for s in terms[k].stems for n in read.pages_with.get(s, ())})


def moved_finding(claim: Claim, hit: QuoteHit, index: PacketIndex) -> Finding:
    label = index.label(index.page_index(hit.page))
    return Finding(
        claim,
        "unsupported",
        "record_cite_page",
        f"the cited page does not carry the quotation; its passage is on {label}",
        page=hit.page,
        excerpt=excerpt_of(hit.page.text, *hit.span),
        match=hit.span,
    )


def _best_sentence(
    terms: Mapping[str, "_Term"],
    words: Mapping[str, "_Term"],
    sentences: Sequence[frozenset[str]],
    values: frozenset[str] = frozenset(),
    runs: Sequence[list[str]] | None = None,
) -> tuple[float, frozenset[str]]:
    """The weight and the keys of the terms that one of `sentences` (each a set of stems)
    carries at most (a word term by its stem or a paraphrase's; a phrase by the sentence's
    `runs`, `_phrase_in`), with `values` (the dates and amounts its page holds) counted in
    each."""
    best: tuple[float, frozenset[str]] = (0.0, frozenset())
    runs = runs or [[] for _ in sentences]
    for at, stems in enumerate(sentences):
        held = (
            frozenset(
                k
                for k, t in words.items()
                if (_phrase_in(stems, runs[at], t) if t.pair else any(x in stems for x in t.stems))
            )
            | values
        )
        weight = sum(terms[k].weight for k in held)
        if weight > best[0]:
            best = (weight, held)
    return best


def _leads_together(
    terms: Mapping[str, "_Term"],
    cited: tuple[float, frozenset[str]],
    other: tuple[float, frozenset[str]],
) -> tuple[str, ...] | None:
    """The draft's words that another page's best sentence (`other`) adds to the cited pages'
    (`cited`), when it leads as a wrong page does: it carries at least WRONG_PAGE_OTHER of
    the terms' weight, PASSAGE_GAIN more than the cited sentence, and lacks no more of what
    the cited one carries than a wrong page may (WRONG_PAGE_KEPT, or a third of its gain)."""
    total = sum(t.weight for t in terms.values())
    if not total:
        return None
    gained, kept = other[1] - cited[1], cited[1] - other[1]
    share_gained = sum(terms[k].weight for k in gained) / total
    share_kept = sum(terms[k].weight for k in kept) / total
    # No sentence of the cited pages states two of the terms together: what it holds of them
    # stands apart from the rest, and keeps nothing for it (as `WRONG_PAGE_ALONE` at page level).
    alone = len(cited[1]) < 2
    # The other sentence states the whole of it, and the cited one lacks two of its words and
    # holds nothing the other lacks: the cited sentence is another proposition in the same
    # words ("a shipper that delays its inspection ..." for "... terminates the agreement ..."),
    # however common the words that tell them apart are in the packet.
    whole = other[0] >= (1 - 1e-9) * total and len(gained) >= 2 and not kept
    if whole or (
        other[0] >= WRONG_PAGE_OTHER * total
        and share_gained >= PASSAGE_GAIN
        and (alone or share_kept <= max(WRONG_PAGE_KEPT, share_gained * WRONG_PAGE_KEPT_RATIO))
    ):
        return tuple(terms[k].word for k in sorted(gained, key=lambda k: (-terms[k].weight, k)))
    return None


def _page_sentences(text: str) -> list[str]:
    """A page's sentences: running prose split where a sentence ends; a line laid out apart
    from the prose (a heading in capitals, a row of columns, a label and its value) is a
    sentence of its own, as is each line of a list."""
    out: list[str] = []
    prose: list[str] = []
    if "-\n" in text:
        text = _LINE_END_HYPHEN.sub("", text)
    for line in text.splitlines():
        if _laid_out(line):
            out.extend(_prose_sentences(" ".join(prose)))
            prose = []
            out.append(line)
        else:
            if prose and _NUMBERED_START.match(line) and _ENDED.search(prose[-1]):
                # A note ("1 A landlord that ...") or a numbered line starting after a
                # sentence that ended: a sentence of its own, never the end of the one before.
                out.extend(_prose_sentences(" ".join(prose)))
                prose = []
            prose.append(line.strip())
    out.extend(_prose_sentences(" ".join(prose)))
    return [part for part in out if part.strip()]


_NUMBERED_START = re.compile(r"[ \t]*\d{1,3}[ \t]+[\"\u201c]?[A-Z]")
_ENDED = re.compile(r"[.!?][\"\u201d')\]]*[ \t]*$")


_STOP = re.compile(r"[.!?]")
_AFTER_STOP = re.compile(r"[\"\u201d']?(?:\d{1,3}(?=\s))?\s+(?=[\"\u201c]?[A-Z])")


def _prose_sentences(prose: str) -> list[str]:
    """`_PAGE_SENTENCE.split(prose)`. A line of prose holds no line break, so a sentence ends
    only after a stop: the end is looked for after each stop (`_AFTER_STOP`, the pattern's
    first branch), not tried at every character of the page."""
    if "\n" in prose:
        return _PAGE_SENTENCE.split(prose)
    out: list[str] = []
    last = 0
    for stop in _STOP.finditer(prose):
        if stop.end() < last:
            continue
        end = _AFTER_STOP.match(prose, stop.end())
        if end is not None:
            out.append(prose[last : end.start()])
            last = end.end()
    out.append(prose[last:])
    return out


def _laid_out(line: str) -> bool:
    """A line of a page laid out apart from its prose (see `_LAID_OUT_START`, `_COLUMNS`), or a
    blank one. Columns are looked for only on a line with two spaces or a tab (most lines of
    prose have neither: the pattern is not run over them)."""
    if _LAID_OUT_START.match(line):
        return True
    return ("  " in line or "\t" in line) and _COLUMNS.search(line) is not None


# Where a phrase of the draft or a page breaks: a claim (masked as "|"), a comma, a colon, a
# bracket or a quotation mark.
_PHRASE_BREAK = re.compile(r"[|,;:()\[\]\"\u201c\u201d]+")


# `_PHRASE_BREAK`'s characters of ASCII text, each made "|" (a byte table: a translation in C).
_BREAKS = bytes(ord("|") if chr(c) in '|,;:()[]"' else c for c in range(256))


def _phrases(part: str) -> list[str]:
    """`part` cut where a phrase breaks (`_PHRASE_BREAK`); in ASCII text by a translation, so
    that a run of breaks leaves empty phrases between them (which hold no words)."""
    if part.isascii():
        return part.encode("ascii").translate(_BREAKS).decode("ascii").split("|")
    return _PHRASE_BREAK.split(part)


def _key_word(word: str) -> bool:
    """A word `_weighed_terms` keeps as a key term."""
    return not (word in nz.STOPWORDS or len(word) < 3 or (word.isdigit() and len(word) < 4))


def _phrase_in(stems: frozenset[str], runs: list[str], term: "_Term") -> bool:
    """A sentence (its `stems`, and its `runs`, `_Context._sentence_runs`) prints the phrase
    `term`: its two words (or their paraphrases) side by side, in order."""
    left, right = term.groups
    if not (any(s in stems for s in left) and any(s in stems for s in right)):
        return False
    pairs = [f" {first} {second} " for first in left for second in right]
    return any(pair in run for run in runs for pair in pairs)


def _stemmed(word: str) -> tuple[str, str]:
    """The word's stem, and its form in a sentence's runs (`_Context._sentence_runs`): its
    stem for a key word, "|" for another."""
    stem = nz.stem(word)
    return stem, stem if _key_word(word) else "|"


def wrong_finding(
    claim: Claim, weighed: "_Weighed", pages: list[int], index: PacketIndex
) -> Finding:
    record = index.pages[weighed.page]
    shown = ", ".join(repr(w) for w in weighed.words[:4])
    cited = pages_label(index, pages)
    if weighed.together:
        message = (
            f"the cited page {cited} does not state {shown} with the rest of the sentence, "
            f"as a sentence on {index.label(weighed.page)} does"
        )
    elif weighed.status == "unsupported":
        message = f"the cited page {cited} does not carry {shown}; {index.label(weighed.page)} does"
    else:
        message = (
            f"{index.label(weighed.page)} carries {shown} and the cited page {cited} does not; "
            "check that the cite is the right page"
        )
    return Finding(
        claim,
        weighed.status,
        "record_cite_page",
        message,
        page=record,
        excerpt=excerpt_of(record.text, 0, 160),
    )


@dataclass(frozen=True)
class _Term:
    word: str  # as the draft writes it (for messages)
    count: int  # how many pages carry it or a paraphrase of it
    weight: float
    stems: tuple[str, ...] = ()  # a word: its stem and its paraphrases' (none: a value)
    pages: frozenset[int] = frozenset()  # a date or amount: the pages holding it
    holders: Collection[int] = ()  # a word: the pages holding it or a paraphrase
    pair: tuple[str, ...] = ()  # a phrase: its two words' keys (see `_phrase_terms`)
    groups: tuple[tuple[str, ...], ...] = ()  # ... and each word's stems (paraphrases too)
    group_holders: tuple[Collection[int], ...] = ()  # ... and each word's `holders`


@dataclass(frozen=True)
class _Weighed:
    """The wrong-page verdict: unsupported, or needs review when the lead is smaller; the page
    that carries the sentence's content and the draft's words the cited pages lack."""

    status: Status
    page: int
    words: tuple[str, ...]
    together: bool = False  # the other page states them in one sentence, the cited ones apart


def _as_id(finding: Finding) -> Finding:
    """The finding on an Id. or Ibid. of a record cite, saying which cite it was read as."""
    claim = finding.claim
    read = ""
    if claim.bates:  # the first and the last label named (a range is never spelt out)
        first, last = claim.bates[0], claim.bates[-1]
        low = replace(first, last=first.first, last_page=first.first_page).labels()[:1]
        high = replace(last, first=last.last, first_page=last.last_page).labels()[-1:]
        shown = "-".join(low + [label for label in high if label not in low])
        read = f", read as {shown}" if shown != claim.cited_as else ""
    said = f"{claim.text} refers to the record cite before it, {claim.cited_as}{read}"
    return replace(finding, message=f"{said}: {finding.message}")


_TOKEN_TAIL = re.compile(r"(?:[-_/.]?[A-Za-z0-9])+")  # "-07" of "KVN-2021-07", "A" of "...09A"
_RANGE_END = re.compile(r"(?:[A-Za-z]+[ \-_.]?)?\d+\s*$")


def _range_end(claim: Claim) -> Claim:
    """The claim narrowed to the end of its one range ("ACME000020-ACME000099" ->
    "ACME000099", "ACME000020-99" -> "99"); the claim itself when it is not one range."""
    if len(claim.bates) != 1 or claim.bates[0].last <= claim.bates[0].first:
        return claim
    match = _RANGE_END.search(claim.text)
    if match is None or match.start() == 0:
        return claim
    end = match.start() + len(match.group().rstrip())
    return replace(
        claim, start=claim.start + match.start(), end=claim.start + end, text=match.group().rstrip()
    )


def _holding(held: Collection[int], pages: Iterable[int]) -> set[int]:
    """The pages of `pages` that `held` holds: a set, or a list in packet order (ascending,
    `_Context._held_set`) looked up by bisection."""
    if not isinstance(held, list):
        return {page for page in pages if page in held}
    found: set[int] = set()
    end = len(held)
    for page in pages:
        at = bisect.bisect_left(held, page)
        if at < end and held[at] == page:
            found.add(page)
    return found


def _pages_with_any(index: PacketIndex, terms: Sequence[str]) -> set[int]:
    """The pages holding at least one of `terms` (stems): a term and its paraphrases (through
    the index's own look-up, which a bench peer replaces with a scan)."""
    found: set[int] = set()
    for term in terms:
        found.update(index.pages_with_term(term))
    return found


def _weight_of(index: PacketIndex, pages: int) -> float:
    """The IDF weight of a term held by `pages` of the packet's pages: the rarer, the heavier
    (a term on every page still weighs 1)."""
    return math.log((1 + len(index.pages)) / (1 + pages)) + 1.0


def _page_run(numbers: list[int]) -> str:
    """ "1-4", or "1, 3, 7" when they do not run."""
    if not numbers:
        return "none"
    if numbers == list(range(numbers[0], numbers[0] + len(numbers))):
        return f"{numbers[0]}-{numbers[-1]}" if len(numbers) > 1 else str(numbers[0])
    return ", ".join(str(n) for n in numbers)


def pin_numbers(pin: str) -> list[int]:
    """The reporter pages of a pin cite: "1045" -> [1045]; "1045-46" -> [1045, 1046];
    "1045, 1047" -> [1045, 1047]."""
    numbers: list[int] = []
    for match in re.finditer(r"(\d+)(?:\s*[-\u2013]\s*(\d+))?", pin):
        first = int(match.group(1))
        numbers.append(first)
        if match.group(2):
            tail = match.group(2)
            last = (
                int(match.group(1)[: -len(tail)] + tail)
                if len(tail) < len(match.group(1))
                else int(tail)
            )
            numbers.extend(range(first + 1, min(last, first + 50) + 1))
    return numbers


def _same(claim: Claim, found: str) -> bool:
    """A value on a page is the claim's (a year-less date: that month and day, in the
    sentence's years where it gives them)."""
    if claim.kind == "date":
        return same_day(claim.value or "", found, claim.years)
    return found == claim.value


def _one_word_off(quoted: list[str], printed: list[str]) -> bool:
    """The quoted words are the printed ones with one word changed into a form of itself, or
    with one word added or dropped while at least two words stand."""
    if len(quoted) == len(printed):
        changed = [(a, b) for a, b in zip(quoted, printed, strict=True) if a != b]
        return len(changed) == 1 and _forms_of_one_word(*changed[0])
    longer, shorter = (quoted, printed) if len(quoted) > len(printed) else (printed, quoted)
    if len(longer) != len(shorter) + 1 or len(shorter) < 2:
        return False
    return any(longer[:k] + longer[k + 1 :] == shorter for k in range(len(longer)))


def _forms_of_one_word(a: str, b: str) -> bool:
    """Two words that are forms of one ("covered"/"uncovered", "exceeds"/"exceeded")."""
    return a in b or b in a or nz.stem(a) == nz.stem(b) or _edits_apart(a, b) <= 2


def _edits_apart(a: str, b: str) -> int:
    """Levenshtein distance, stopping early at 3."""
    if abs(len(a) - len(b)) > 2:
        return 3
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        row = [i]
        for j, y in enumerate(b, 1):
            row.append(min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (x != y)))
        if min(row) > 2:
            return 3
        previous = row
    return previous[-1]


def _has_words(text: str) -> bool:
    return bool(nz.content_terms(nz.token_list(text)))


def _distance(what: str, wanted: str, found: str) -> tuple[int, float]:
    """How far a value on the page is from the draft's (for naming the nearest)."""
    if what == "date":
        if is_month_day(wanted) or is_month_day(found):  # by month and day, in a leap year
            wanted, found = "2000" + wanted[-6:], "2000" + found[-6:]
        try:
            days = abs((date.fromisoformat(wanted) - date.fromisoformat(found)).days)
        except ValueError:
            return (1, 0.0)
        return (0, float(days))
    return distance(wanted, found)


def shown_text(record: PageRecord, found: Value) -> str:
    """The text of a page where a value was found."""
    return record.text[found.start : found.end]


def _read_as(what: str, drafted: str, value: str, shown: str, found: str | None = None) -> str:
    """Which reading a finding took of a value written in words or an ambiguous numeric date,
    the draft's (`drafted`, read as `value`) and the page's (`shown`, read as `found`; none
    when there is none): " (the page's words read as $4,100,000.00)", or ""."""
    notes = []
    for whose, text, read in (("the draft's", drafted, value), ("the page's", shown, found)):
        if read is None:
            continue
        if what == "amount" and is_in_words(text):
            notes.append(f"{whose} words read as {describe(read)}")
        elif what == "date" and (how := reading(text, read)):
            notes.append(f"{whose} {text.strip()!r} {how}")
    return f" ({'; '.join(notes)})" if notes else ""


@functools.cache
def _edition_years(reporter: str) -> tuple[int, int] | None:
    """The years of the reporter edition (reporters-db), or None when it is not known."""
    for reporters in reporters_db.REPORTERS.values():
        for entry in reporters:
            edition = entry["editions"].get(reporter)
            if edition is None:
                continue
            start, end = edition.get("start"), edition.get("end")
            if start is None:
                return None
            # No end: still published.
            return start.year, (end.year if end is not None else 9999)
    return None
