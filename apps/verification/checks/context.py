"""The draft a check reads: its text, claims and packet index, and what the checks look up
in them more than once (sentences, segments, the pages a cite names), read when first asked
and kept for the draft's other claims."""

import bisect
import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from apps.verification import exhibits, filed, paragraphs, patents, transcripts
from apps.verification import normalise as nz
from apps.verification.claims import DEFINITION, Claim, Spans, defined_terms, sentences
from apps.verification.findings import Finding, Status
from apps.verification.index import (
    Opinion,
    PacketIndex,
    Value,
    pages_label,
)

CITES = ("record_cite", "not_a_record_cite", "case_citation")


@dataclass(frozen=True)
class Companion:
    """Another draft of the case on the same packet, whose list of exhibits a draft's "Ex. 4"
    may mean: a brief cites the exhibits of the declaration filed with it ("Attached as
    Exhibit 4 is ..., produced at HCSO002012-HCSO002014"). `claims` extracts its claims, called
    only when a cite needs its list."""

    name: str
    text: str
    claims: Callable[[], Sequence[Claim]]


# A draft that may list exhibits (a cheap test before a companion's claims are extracted).
_LISTS_EXHIBITS = re.compile(r"\b(?:Ex|Exh|Exhibit)s?\.?[ \t*_]*(?:\d{1,4}|[A-Z]{1,2})\b")


def companions_listing_exhibits(companions: Sequence[Companion]) -> list[Companion]:
    """The companions whose text names an exhibit at all."""
    return [c for c in companions if _LISTS_EXHIBITS.search(c.text)]


# A defined term's parenthetical just before a cite ('U.S. Patent No. 11,206,482 (the "'482
# patent") (QLN_00004410-16) against ...'): the cite names the document the term names, and
# the words after it are the sentence's, not the document's.
_DEFINED_BEFORE = re.compile(DEFINITION + r"[ \t]*\(?[ \t]*$")


class Context:
    """One draft's claims against one packet index, for every check of the draft. Its caches
    (`passages`, `held`, `named`, ...) are filled by the checks' functions as they first need
    them; nothing in it outlives the draft's `verify_text`."""

    def __init__(
        self,
        text: str,
        claims: list[Claim],
        index: PacketIndex,
        companions: Sequence[Companion] = (),
    ) -> None:
        self.text = text
        self.companions = companions
        # Each companion's list of exhibits, by label, when first needed (`_companion_exhibit`).
        self.companion_lists: list[tuple[str, dict[str, list[int]]]] | None = None
        self.claims = claims
        self.claim_spans: Spans | None = None  # their spans' union, when first needed
        self.index = index
        self.cites_by_sentence: dict[tuple[int, int], list[Claim]] = {}
        for claim in sorted(claims, key=lambda c: c.start):
            if claim.kind in CITES:
                self.cites_by_sentence.setdefault(claim.sentence, []).append(claim)
        self.cite_places: dict[Claim, int] | None = None  # `place_of`, when first asked
        self.all_sentences: list[tuple[int, int]] | None = None  # read when first needed
        self.sentence_ends: list[int] = []
        self.sentence_starts: list[int] = []
        self.forms: dict[int, tuple[frozenset[str], frozenset[str]]] = {}
        self.passages: dict[int, list[frozenset[str]]] = {}  # a page's sentences, as stems
        self.stems_of: dict[
            str, str
        ] = {}  # a word's stem, and its form in runs (`weighing._stemmed`)
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
        self.exhibit_list: dict[str, list[int]] | None = None  # the draft's own, when read
        self.law_documents: frozenset[int] | None = None  # opinions it cites (`support`)
        self.definitions: dict[str, str] | None = None  # its defined names ("IR-2"), when read

    # -- segments -----------------------------------------------------------------------

    def segment(self, cite: Claim) -> tuple[int, int]:
        """The words `cite` vouches for: back to the previous citation of its sentence; a cite
        with no words of its own shares the previous one's; the last cite of its sentence also
        takes the words after it; a citation sentence takes the previous sentence, after that
        sentence's last citation."""
        cites = self.cites_by_sentence.get(cite.sentence, [cite])
        position = self.place_of(cite) or 0
        own = _PARENTHETICAL.match(self.text, cite.end)
        if (
            own is not None
            and position > 0
            and not has_words(self.text[cites[position - 1].end : cite.start])
            and has_words(own.group("words"))
            and not self.members(own.span("words"), CITES)  # "Ex. 4 (ACME000123)": a cite
        ):
            # "...; see id. at 884 n.2 (ADEA provision "materially identical")": a cite in a
            # string of cites with its own parenthetical vouches for that, not for the words
            # the cite before it vouches for.
            return own.span("words")
        start = cite.sentence[0]
        k = position
        while k > 0:
            previous = cites[k - 1]
            if _has_own_words(self.text[previous.end : cites[k].start]):
                start = previous.end
                break
            k -= 1
        end = cite.start
        if (
            position == len(cites) - 1
            and _has_own_words(self.text[cite.end : cite.sentence[1]])
            and not _DEFINED_BEFORE.search(self.text, max(start, cite.start - 80), cite.start)
            and not _DECLARANT_AFTER.match(self.text, cite.end)
        ):
            end = cite.sentence[1]
        elif _EXPLAINS.match(self.text, cite.end):
            # "..., 719 F. Supp. 3d 505, 511 (S.D.N.Y. 2024), holding that ...": the clause
            # after the cite states what it is cited for, up to the next cite.
            end = cites[position + 1].start if position + 1 < len(cites) else cite.sentence[1]
        if not has_words(self.text[start:end]) and k == 0:
            earlier = self.previous_sentence(cite.sentence)
            if earlier is not None:
                # The words of that sentence after its last citation: those before it are
                # the citation's ("... an offer to "lead the build" (NOVA-005017), he
                # mirrored the repository. See Ex. 4 at NOVA-005011.").
                theirs = self.members(earlier, CITES)
                if theirs and has_words(self.text[theirs[-1].end : earlier[1]]):
                    return theirs[-1].end, earlier[1]
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
        """The cite the claim's sentence gives it (the first after it, else the last before);
        with none, the record cite of a citation sentence right after the sentence ("On
        November 22 the Committee agreed. BRT-00031778.")."""
        cites = self.cites_by_sentence.get(claim.sentence, [])
        after = [c for c in cites if c.start >= claim.end]
        if after:
            return after[0]
        before = [c for c in cites if c.end <= claim.start]
        if before:
            return before[-1]
        at = bisect.bisect_left(self.starts, claim.sentence[1])
        following = self.ordered[at] if at < len(self.ordered) else None
        if (
            following is not None
            and following.kind == "record_cite"
            and _SIGNAL_ONLY.fullmatch(self.text, claim.sentence[1], following.start)
            and not has_words(self.text[following.end : following.sentence[1]])
        ):
            return following
        return None

    def place_of(self, cite: Claim) -> int | None:
        """`cite`'s place among the cites of its sentence (`cites_by_sentence`), or None when
        it is none of them. (Looked up, not searched for: a hostile sentence of thousands of
        cites would cost their square.)"""
        if self.cite_places is None:
            self.cite_places = {}
            for cites in self.cites_by_sentence.values():
                for k, each in enumerate(cites):
                    self.cite_places.setdefault(each, k)
        return self.cite_places.get(cite)

    def following(self, first: int) -> Iterator[Claim]:
        """The claims in order of position from the `first`th on, read in place: a copy of the
        list's tail, for each question, costs a draft of thousands of claims their square."""
        ordered = self.ordered
        for i in range(first, len(ordered)):
            yield ordered[i]

    def members(self, span: tuple[int, int], kinds: tuple[str, ...]) -> list[Claim]:
        """The claims of these kinds inside `span`."""
        first = bisect.bisect_left(self.starts, span[0])
        last = bisect.bisect_left(self.starts, span[1], lo=first)
        return [
            claim
            for claim in self.ordered[first:last]
            if claim.kind in kinds and claim.end <= span[1]
        ]

    def key_terms(self, span: tuple[int, int]) -> list[str]:
        """Content words of the span outside every claim in it."""
        if self.claim_spans is None:
            self.claim_spans = Spans([(c.start, c.end) for c in self.claims])
        # (the claims' spans met by bisection: read for each cite, a scan of every claim made
        # a draft of thousands of cites cost the square of their count)
        pieces, at = [], span[0]
        for a, b in self.claim_spans.within(*span):
            pieces.append(self.text[at:a])
            pieces.append(" " * (b - a))
            at = b
        pieces.append(self.text[at : span[1]])
        words = [w for w in nz.token_list("".join(pieces)) if not (w.isdigit() and len(w) < 4)]
        return nz.content_terms(words)

    def cite_pages(self, cite: Claim) -> list[int]:
        if not cite.bates and (cite.exhibit is not None or cite.title is not None):
            return self.named_pages(cite)[0]
        if not cite.bates:
            # "ECF No. 9-4, PageID.271", "Doc. 45-3 at 7": the filed pages; "Voss Dep. 45:3-9"
            numbers = paragraphs.page_numbers(cite.pins)
            return filed.cite_pages(
                self.index, cite.text, cite.pins, numbers
            ) or transcripts.cited_pages(cite, self.index)
        found: list[int] = []
        for ref in cite.bates:
            pages, _missing = self.index.bates_indexes(ref)
            found.extend(p for p in pages if p not in found)
        return found

    def named_pages(self, claim: Claim) -> tuple[list[int], Finding | None, str]:
        """The pages a cite by exhibit or title names, or the finding saying why it names
        none, and how the document was read."""
        key = (claim.start, claim.end)
        cached = self.named.get(key)
        if cached is not None:
            return cached
        if self.documents is None:
            self.documents = exhibits.catalogue(self.index)
        listed = _listed_exhibit(self, claim) if claim.exhibit is not None else None
        if listed is None and claim.exhibit is not None and not self.documents.labelled:
            listed = _companion_exhibit(self, claim)
        if listed is not None:
            result = listed
        elif claim.exhibit is not None:
            resolved = exhibits.exhibit(self.documents, claim.exhibit)
        else:
            resolved = exhibits.titled(self.documents, self.index, claim.title or "")
            if resolved.document is None and not resolved.ambiguous:
                resolved = _by_definition(self, claim, resolved)
            tab = exhibits.tab_label(claim.title or "")
            if resolved.document is None and not resolved.ambiguous and tab is not None:
                # "Tab 7" that no document prints or is named: the binder's seventh document
                resolved = exhibits.exhibit(self.documents, tab)
        if listed is not None:
            pass
        elif (document := resolved.document) is None:
            # A citation sentence of its own ("Subcontract at 3.") may be no document's cite
            # at all (a short form of a case, a time): one naming no document is for a
            # person to read; an exhibit's label ("JX 52.") is a cite whatever stands around it.
            bare = claim.exhibit is None and not self.text[claim.sentence[0] : claim.start].strip(
                " \t\n-*\u2022"
            )
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
        elif (cited_columns := _columns_pinned(self, claim, document)) is not None:
            # "'482 patent at 5:19-22": the pages printing those columns.
            pages, why = patents.column_pages(self.index, document.pages, *cited_columns)
            failed = None
            if why is not None:
                failed = Finding(
                    claim,
                    "unsupported",
                    "record_cite_page",
                    f"{resolved.how}; {why}",
                    page=self.index.pages[document.pages[0]],
                )
            result = (pages, failed, resolved.how)
        else:
            numbers = paragraphs.page_numbers(claim.pins)
            pages = list(document.pages)
            if numbers:
                pages = exhibits.pinned_pages(self.index, document, numbers)
            held = [self.index.pages[p].page_number for p in document.pages]
            missing = [n for n in numbers if n not in held]
            printed = (
                exhibits.printed_pages(self.index, document.pages, numbers) if missing else None
            )
            stamped = (
                exhibits.bates_numbered_pages(self.index, document.pages, numbers, claim.text)
                if missing and printed is None
                else None
            )
            opinion = _opinion_pages(self, claim, document.id, numbers) if missing else None
            if stamped is not None:
                # "AR Tab 14 at 1210": the tab's page whose Bates number is 1210.
                result = (
                    stamped,
                    None,
                    f"{resolved.how}, its page {', '.join(self.index.label(p) for p in stamped)}",
                )
            elif printed is None and opinion is not None:
                # "(Ishikawa-Dunne, at p. 304.)": an opinion named alone, pinned by its
                # reporter's page.
                result = (
                    opinion,
                    None,
                    f"{resolved.how}, an opinion, its reporter page {_page_run(numbers)}",
                )
            elif printed is not None:
                # "Proxy at 58": the page of the excerpt that prints 58 as its number.
                result = (
                    printed,
                    None,
                    f"{resolved.how}, its page {_page_run(numbers)} as printed",
                )
            elif missing:
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

    def document_set(self, document_id: int) -> frozenset[int]:
        """The pages of a document, as a set made once a run."""
        known = self.document_sets.get(document_id)
        if known is None:
            known = self.document_sets[document_id] = frozenset(
                self.index.document_pages(document_id)
            )
        return known

    def sentence_of(self, span: tuple[int, int]) -> tuple[int, int]:
        """The sentence of the draft that `span` starts in."""
        if self.all_sentences is None:
            self.previous_sentence((0, 0))
        found = self.all_sentences or []
        if len(self.sentence_starts) != len(found):
            self.sentence_starts = [start for start, _ in found]
        at = bisect.bisect_right(self.sentence_starts, span[0]) - 1
        return found[at] if at >= 0 else span

    def page_values(self, what: str, page: int) -> list[Value]:
        return self.index.dates[page] if what == "date" else self.index.amounts[page]


def _opinion_pages(
    ctx: Context, claim: Claim, document_id: int, numbers: list[int]
) -> list[int] | None:
    """The packet pages of reporter pages `numbers` of the opinion a cite names by its party
    alone ("Ishikawa-Dunne, at p. 304", a short form the California Style Manual allows),
    where `document_id` is that opinion; None otherwise."""
    for opinion in ctx.index.opinions_named(claim.title or ""):
        if opinion.document_id == document_id and all(n in opinion.pages for n in numbers):
            return [ctx.index.page_index(opinion.pages[n]) for n in numbers]
    return None


_LINE_PIN = re.compile(
    r"(?:at[ \t]+)?(?P<c1>\d{1,3}):\d+(?:[ \t]*[-\u2013][ \t]*(?:(?P<c2>\d{1,3}):)?\d+)?"
)


def _columns_pinned(
    ctx: Context, claim: Claim, document: exhibits.Document
) -> tuple[int, int] | None:
    """The columns a cite pins: "col. 5" ("'482 patent at 5:19-22" is read so), and for an
    exhibit that prints a patent's column numbers, "Ex. 1001, 6:13-17" (a patent exhibit is
    cited by column and line, as the Board's papers cite it; another exhibit's "4:5-8" is
    a page and its lines)."""
    found = patents.pinned_columns(claim.pins)
    if found is not None or claim.exhibit is None:
        return found
    for pin in claim.pins:
        match = _LINE_PIN.fullmatch(pin)
        if match is not None and patents.columns(ctx.index, document.pages):
            first = int(match.group("c1"))
            return first, max(first, int(match.group("c2") or first))
    return None


def _by_definition(ctx: Context, claim: Claim, unresolved: exhibits.Resolved) -> exhibits.Resolved:
    """A cite by a name the draft defined ('Interim Report No. 2 ("IR-2")' ... "IR-2 at 1"):
    the document the defined name's words name, else `unresolved`."""
    if ctx.definitions is None:
        ctx.definitions = defined_terms(ctx.text)
    long = ctx.definitions.get(claim.title or "")
    if long is None or ctx.documents is None:
        return unresolved
    found = exhibits.titled(ctx.documents, ctx.index, long)
    if found.document is None:
        return unresolved
    return exhibits.Resolved(
        found.document, f"{claim.title!r} is the draft's name for {long!r}: {found.how}"
    )


def _page_run(numbers: list[int]) -> str:
    """ "1-4", or "1, 3, 7" when they do not run."""
    if not numbers:
        return "none"
    if numbers == list(range(numbers[0], numbers[0] + len(numbers))):
        return f"{numbers[0]}-{numbers[-1]}" if len(numbers) > 1 else str(numbers[0])
    return ", ".join(str(n) for n in numbers)


def _listed_exhibit(ctx: "Context", claim: Claim) -> tuple[list[int], Finding | None, str] | None:
    """ "Ex. 3 at 2" where the draft lists its exhibits, by their Bates numbers ("- Ex. 3:
    discussion materials, Oct. 18, 2023 (LZRD 004410-004412)") or by a title that names one
    packet document ("Ex. 7, Test Report TR-2019-044"): that exhibit's pages, in order, page
    2 the second (or the page that prints 2 as its number, where it has fewer). None where the
    draft lists no such exhibit."""
    if ctx.exhibit_list is None:
        ctx.exhibit_list = _exhibit_list(ctx.text, ctx.ordered, ctx)
    label = exhibits.normal_label(claim.exhibit or "")
    pages = ctx.exhibit_list.get(label)
    if pages is None:
        return None
    how = (
        f"Exhibit {label} is {pages_label(ctx.index, pages)}, as the draft's list of exhibits says"
    )
    return _exhibit_pages(ctx, claim, pages, how)


def _companion_exhibit(
    ctx: "Context", claim: Claim
) -> tuple[list[int], Finding | None, str] | None:
    """ "Ex. 4 at 2" in a draft that lists no exhibit 4, on a packet whose documents carry no
    exhibit labels: exhibit 4 of the companion drafts' lists (a brief's exhibits are those of
    the declaration filed with it), where they list it as one run of pages. None where no
    companion lists it, or two list it as different pages (the packet's order is read then)."""
    if ctx.companion_lists is None:
        ctx.companion_lists = []
        for companion in companions_listing_exhibits(ctx.companions):
            ordered = sorted(companion.claims(), key=lambda c: c.start)
            listed = _exhibit_list(companion.text, ordered, ctx)
            if listed:
                ctx.companion_lists.append((companion.name, listed))
    label = exhibits.normal_label(claim.exhibit or "")
    found = [(name, listed[label]) for name, listed in ctx.companion_lists if label in listed]
    if not found or any(pages != found[0][1] for _, pages in found):
        return None
    pages = found[0][1]
    names = " and ".join(repr(name) for name, _ in found)
    run = pages_label(ctx.index, pages)
    how = f"Exhibit {label} is {run}, as the list of exhibits of {names} says"
    return _exhibit_pages(ctx, claim, pages, how)


def _exhibit_pages(
    ctx: "Context", claim: Claim, pages: list[int], how: str
) -> tuple[list[int], Finding | None, str]:
    """The pages "Ex. N at 2" pins of exhibit N's `pages` (see `_listed_exhibit`)."""
    numbers = paragraphs.page_numbers(claim.pins)
    if any(not 1 <= n <= len(pages) for n in numbers):
        printed = exhibits.printed_pages(ctx.index, pages, numbers)
        if printed is not None:
            return printed, None, f"{how}, its page {_page_run(numbers)} as printed"
        wanted = next(n for n in numbers if not 1 <= n <= len(pages))  # "at 0" is none either
        message = f"{how}; it has {len(pages)} pages, no page {wanted}"
        finding = Finding(
            claim, "unsupported", "record_cite_page", message, page=ctx.index.pages[pages[0]]
        )
        return [], finding, how
    return ([pages[n - 1] for n in numbers] if numbers else pages), None, how


# A line of a draft's list of its exhibits: "- Ex. 3: discussion materials (LZRD 004410-12)",
# "Exhibit B - The lease (ACME000101-ACME000120)".
_EXHIBIT_LINE = re.compile(
    r"(?m)^[ \t]*(?:[-*+\u2022][ \t]+)?(?:Ex|Exh|Exhibit)s?\.?[ \t]*(?P<n>\d{1,4}|[A-Z]{1,2})"
    r"[ \t]*[:.\u2013\u2014-][ \t]+(?P<what>[^\n]+)$"
)


MAX_LISTED = 200  # entries of a draft's list of exhibits read (each is a look-up of titles)
_EXHIBIT_NAMED = re.compile(
    r"\b(?:Ex|Exh|Exhibit)\.?[ \t]*(?P<n>\d{1,4}|[A-Z]{1,2})(?:[ \t]*[,:][ \t]*|[ \t]*\([ \t]*)"
    r"(?P<what>[A-Z][^;()\n]{2,100}?)[ \t]*(?=[;)]|\.(?:\s|$)|$)",
    re.MULTILINE,
)


# The words a declaration attaches an exhibit with: "Attached (hereto) as Exhibit 4 is ...",
# "Exhibit 4 is a true and correct copy of ...".
_ATTACHED = re.compile(
    r"(?i:attached(?:[ \t]+hereto)?[ \t]+as)[ \t*_]+(?:Ex|Exh|Exhibit)\.?[ \t]*"
    r"(?P<n>\d{1,4}|[A-Z]{1,2})\b"
    r"|\b(?:Ex|Exh|Exhibit)\.?[ \t]*(?P<m>\d{1,4}|[A-Z]{1,2})\b[*_]*[ \t]+(?i:is|are)[ \t]+"
    r"(?i:(?:a[ \t]+)?true\b)"
)


def _exhibit_list(text: str, ordered: list[Claim], ctx: "Context") -> dict[str, list[int]]:
    """The exhibits a draft lists, by label: the pages of the record cites on each line of a
    list of them, else the pages of the one packet document a title in a list in prose names.
    A label listed twice as different pages is not kept."""
    found: dict[str, list[int]] = {}
    seen: set[str] = set()
    twice: set[str] = set()
    starts = [c.start for c in ordered]
    for line in itertools.islice(_EXHIBIT_LINE.finditer(text), MAX_LISTED):
        label = exhibits.normal_label(line.group("n"))
        pages: list[int] = []
        first = bisect.bisect_left(starts, line.start("what"))
        last = bisect.bisect_left(starts, line.end(), lo=first)
        for cite in ordered[first:last]:
            if cite.kind == "record_cite" and cite.bates:
                pages.extend(p for p in ctx.cite_pages(cite) if p not in pages)
        if label in seen:
            twice.add(label)
        seen.add(label)
        if pages:
            found[label] = pages
    # A declaration's exhibits, each in its own sentence: "Attached as Exhibit 4 is a true and
    # correct copy of the kiosk log, produced at HCSO002012-HCSO002014."
    for attached in itertools.islice(_ATTACHED.finditer(text), MAX_LISTED):
        label = exhibits.normal_label(attached.group("n") or attached.group("m"))
        pages = []
        for cite in ordered:
            inside = cite.sentence[0] <= attached.start() < cite.sentence[1]
            if inside and cite.kind == "record_cite" and cite.bates:
                pages.extend(p for p in ctx.cite_pages(cite) if p not in pages)
        if not pages:
            continue
        if found.get(label, pages) != pages:
            twice.add(label)
        found[label] = pages
    # A list in prose, by title: "Ex. 7, Test Report TR-2019-044; Ex. 8, ...", "Ex. 3 (Q3
    # 2023 earnings call transcript)": the one packet document every word of the title names.
    named: dict[str, list[int]] = {}
    for entry in itertools.islice(_EXHIBIT_NAMED.finditer(text), MAX_LISTED):
        label = exhibits.normal_label(entry.group("n"))
        if label in found or label in twice or ctx.documents is None:
            continue
        what = entry.group("what").strip()
        if text.startswith(".", entry.end("what")):
            what += "."  # "Ex. G, Hollis-Marr Rpt. at 2": the abbreviation's stop
        document = exhibits.titled(ctx.documents, ctx.index, what, names_only=True).document
        if document is None:
            continue
        if named.get(label, list(document.pages)) != list(document.pages):
            twice.add(label)
        named[label] = list(document.pages)
    # ... and with the title before the label: "the Llano Crude Marketing run tickets (Ex. C);
    # Mr. Renfro's internal email (Ex. E)", the title after the list's last separator. Only
    # in a list (an entry next to another): a sentence's own "(Ex. 3)" after its words is a
    # cite, which its words must not define.
    entries = list(itertools.islice(_TITLE_THEN_EXHIBIT.finditer(text), MAX_LISTED))
    lookups = 0  # titles looked up for these entries: MAX_LISTED in all, as for the others
    for k, entry in enumerate(entries):
        beside = [entries[j] for j in (k - 1, k + 1) if 0 <= j < len(entries)]
        if not any(
            not text[min(e.end(), entry.end()) : max(e.start(), entry.start())].strip()
            for e in beside
        ):
            continue
        label = exhibits.normal_label(entry.group("n"))
        if label in found or label in named or label in twice or ctx.documents is None:
            continue
        # The title is the longest run of the last words that names one document ("The
        # Appendix holds the Llano run tickets (Ex. C)": "the Llano run tickets").
        words = entry.group("what").split()
        document = None
        for k in range(len(words)):
            if (k and len(words) - k < 2) or lookups >= MAX_LISTED:
                break
            lookups += 1
            document = exhibits.titled(ctx.documents, ctx.index, " ".join(words[k:])).document
            if document is not None:
                break
        if document is None:
            continue
        if named.get(label, list(document.pages)) != list(document.pages):
            twice.add(label)
        named[label] = list(document.pages)
    found.update(named)
    return {label: pages for label, pages in found.items() if label not in twice}


_TITLE_THEN_EXHIBIT = re.compile(
    r"(?:^|[;,:(]|\band\b)[ \t]*(?P<what>[^;,:()\n]{3,80}?)[ \t]*\([ \t]*(?:Ex|Exh|Exhibit)"
    r"\.?[ \t]*(?P<n>\d{1,4}|[A-Z]{1,2})[ \t]*\)",
    re.MULTILINE,
)


# What may stand between a sentence and the citation sentence after it: space, emphasis and a
# signal ("See", "See also", "Cf.").
_SIGNAL_ONLY = re.compile(r"[\s*_]*(?:(?:see(?:,?\s+also)?|cf\.|accord)[\s,*_]*)?", re.IGNORECASE)


# A parenthetical right after a cite: what that cite is cited for.
_PARENTHETICAL = re.compile(r"[ \t]*\((?P<words>[^()\n]{3,300})\)")


# A participle clause after a citation, saying what the cited authority held (Bluebook 1.5).
# After a cite, a clause of the declarant's own ("(EST-000104-105), which I marked as
# Exhibit 4 at the examination"): what the witness did with the document, told from their own
# knowledge, not what the cited pages say.
_DECLARANT_AFTER = re.compile(r"[)\]]?[ \t]*,[ \t]*(?:which|that|who|whom)[ \t]+(?:I|we)\b")
_EXPLAINS = re.compile(
    r"[ \t]*,[ \t]*(?:holding|explaining|noting|finding|reasoning|concluding|observing"
    r"|recognizing|recognising|stating|ruling)\b"
)


def has_words(text: str) -> bool:
    return bool(nz.content_terms(nz.token_list(text)))


# A rule of procedure or evidence cited beside a record cite ("1-ER-7-8; see Fed. R. App. P.
# 4(a)(1)(A)."): a citation, no words of the sentence.
_RULE_CITE = re.compile(
    r"\b(?:Fed|[A-Z][a-z]{1,4})\.[ \t]*R\.[ \t]*(?:Civ|App|Crim|Evid|Bankr)\.(?:[ \t]*P\.)?"
    r"[ \t]*\d+(?:\([A-Za-z0-9]{1,4}\))*"
)


def _has_own_words(text: str) -> bool:
    """Whether `text` between or after cites has words of its own (`has_words`), a rule's
    citation taken out."""
    return has_words(_RULE_CITE.sub(" ", text))
