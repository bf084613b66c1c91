"""Case citations: the opinion in the packet, its name and year, short forms bound by name,
volume and reporter, and pins checked against its reporter pages (step 5 of the package
docstring)."""

import bisect
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import reporters_db

from apps.verification import authorities, paragraphs
from apps.verification import normalise as nz
from apps.verification.checks.context import CITES, Context
from apps.verification.checks.support import (
    SHORT_QUOTE,
    WRONG_PAGE_ALONE,
    WRONG_PAGE_GAIN,
    WRONG_PAGE_KEPT,
    WRONG_PAGE_KEPT_RATIO,
    WRONG_PAGE_OTHER,
    best_sentence_of,
    leads_together,
    terms_elsewhere,
)
from apps.verification.checks.weighing import Term, page_scores, page_sentences, weighed_terms
from apps.verification.claims import CaseCite, Claim
from apps.verification.findings import Finding
from apps.verification.index import (
    Opinion,
    PacketIndex,
    PageRecord,
)
from apps.verification.quoting import quote_segments, quote_words
from apps.verification.spans import excerpt_of

NOT_IN_EVIDENCE = "not in the evidence (this does not mean it is fabricated)"
# The name a short form gives its case: "Halloran, 341 P.3d at 883", "See Halloran, supra".
_SHORT_NAME = re.compile(
    r"(?:(?:see|see also|cf\.|accord|but see)\s+)?(?P<name>[A-Z][^,]{0,80}?),", re.IGNORECASE
)

# -- case citations -----------------------------------------------------------------


def case_citation(claim: Claim, index: PacketIndex, ctx: Context) -> Finding:
    cite = claim.citation
    if cite is None:
        return Finding(claim, "unsupported", "case_in_packet", "the citation could not be read")
    parallel = _parallel(ctx, claim)
    if parallel is not None:
        return parallel
    if cite.short and not cite.resolved:
        opinion = bind_short(ctx, claim)
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
            return _on_opinion(
                claim, "case_in_packet", "the short form names an opinion of the packet", first
            )
        return _pin(ctx, claim, cite.pin, opinion)
    years = _edition_years(cite.reporter)
    if cite.year is not None and years is not None and not (years[0] <= cite.year <= years[1]):
        return Finding(
            claim,
            "unsupported",
            "case_reporter_year",
            f"{cite.reporter} was published {years[0]}-{years[1]}; a {cite.year} "
            "decision cannot be reported there",
        )
    opinion = index.opinion(cite.volume, cite.reporter, cite.page)
    if opinion is None and cite.short and _ID_WORD.match(claim.text):
        # An Id. eyecite bound to a parallel the packet lacks ("Id." after "352 Ga. App. 414,
        # 416 (873 SE2d 201)", Georgia's form): the case, in the reporter the packet holds.
        opinion = bind_short(ctx, claim)
        if opinion is not None and cite.pin is None:
            first = opinion.pages[opinion.first_page]
            return _on_opinion(claim, "case_in_packet", "Id. names an opinion of the packet", first)
        if opinion is not None:
            return _pin(ctx, claim, cite.pin or "", opinion)
    if opinion is None:
        held = _parallel_held(ctx, claim)
        if held is not None:
            return held
        name = f"{cite.name}, " if cite.name else ""
        return Finding(
            claim,
            "unsupported",
            "case_in_packet",
            f"{name}{cite.volume} {cite.reporter} {cite.page}: {NOT_IN_EVIDENCE}",
        )
    first = opinion.pages[opinion.first_page]
    if cite.name and not _name_fits(ctx, cite.name, first):
        return Finding(
            claim,
            "unsupported",
            "case_name",
            f"the opinion at {cite.volume} {cite.reporter} {cite.page} in the "
            f"packet is not {cite.name}",
            page=first,
        )
    if cite.pin is None:
        return _on_opinion(claim, "case_in_packet", "the opinion is in the packet", first)
    return _pin(ctx, claim, cite.pin, opinion)


def _claim_before(ctx: Context, claim: Claim) -> Claim | None:
    """The claim just before `claim` in the draft's order (claims may share a start: a
    parallel citation eyecite spans whole twice)."""
    at = bisect.bisect_left(ctx.starts, claim.start)
    while at < len(ctx.ordered) and ctx.ordered[at] is not claim:
        at += 1
    return ctx.ordered[at - 1] if 0 < at < len(ctx.ordered) else None


def _first_of_parallels(ctx: Context, claim: Claim) -> Claim:
    """The first citation of a run of parallel citations that `claim` ends (itself if none):
    an Id. after "315 Ga. at 209, 892 S.E.2d at 645" is the case's, in its first reporter."""
    while True:
        before = _claim_before(ctx, claim)
        if (
            before is None
            or before.kind != "case_citation"
            or not (
                before.start == claim.start
                or _PARALLEL_GAP.fullmatch(ctx.text, before.end, claim.start)
            )
        ):
            return claim
        claim = before


def _parallel_held(ctx: Context, claim: Claim) -> Finding | None:
    """A citation whose parallel right after it names an opinion of the packet ("2018-1127
    (La. App. 1 Cir. 5/31/19), 278 So. 3d 611": a public-domain or docket citation, the copy
    paged by the reporter): that opinion, in the packet (the pin is the parallel's to check)."""
    at = bisect.bisect_left(ctx.starts, claim.start)
    after = None
    for other in ctx.following(at):
        if other is claim or other.start < claim.start:
            continue
        # (eyecite may span the parallel whole from the same start)
        same = other.start == claim.start and other.end > claim.end
        if same and _PARALLEL_GAP.match(ctx.text, claim.end):
            after = other
            break
        if other.start >= claim.end:
            if _PARALLEL_GAP.fullmatch(ctx.text, claim.end, other.start):
                after = other
            break
    if (
        after is None
        or after.kind != "case_citation"
        or after.citation is None
        or not after.citation.volume
        or not after.citation.page
    ):
        return None
    later = after.citation
    opinion = ctx.index.opinion(later.volume, later.reporter, later.page)
    if opinion is None:
        return None
    return _on_opinion(
        claim,
        "case_in_packet",
        f"a parallel citation of {later.volume} {later.reporter} {later.page}, whose opinion "
        "the packet holds",
        opinion.pages[opinion.first_page],
    )


# An Id. or Ibid., after a signal or not.
_ID_WORD = re.compile(r"(?i)(?:see\s+)?(?:id\.|ibid)")
# What stands between a citation and its parallel citation in another reporter: a comma.
_PARALLEL_GAP = re.compile(r"[ \t]*,[ \t]*")


def _parallel(ctx: Context, claim: Claim) -> Finding | None:
    """A parallel citation ("315 Ga. 207, 208, 892 S.E.2d 644, 645"; "Cotterell, 315 Ga. at
    209, 892 S.E.2d at 645") names the opinion its first reporter names. Where the packet reads
    it in this reporter too (a print of it in this reporter, or a copy marking this reporter's
    pages in its text, holding the pin), the citation is checked as any other (None); else it
    is that opinion, its pin left for a person (the copy is paged by the first reporter)."""
    cite = claim.citation
    before = _claim_before(ctx, claim)
    if (
        cite is None
        or not cite.volume
        or before is None
        or before.kind != "case_citation"
        or before.citation is None
        or (before.citation.volume, before.citation.reporter) == (cite.volume, cite.reporter)
    ):
        return None
    same_span = before.start == claim.start
    if not same_span and not _PARALLEL_GAP.fullmatch(ctx.text, before.end, claim.start):
        return None
    first = before.citation
    partner = (
        ctx.index.opinion(first.volume, first.reporter, first.page)
        if first.volume and first.page
        else bind_short(ctx, before)
    )
    if partner is None:
        return None
    own = ctx.index.opinion(cite.volume, cite.reporter, cite.page) if cite.page else None
    pins = pin_numbers(cite.pin or "")
    # Read in this reporter: a print of its own, or the same copy marking this reporter's pages
    # in its text ("**645"); a copy paged by the first reporter does not give them.
    if (
        own is not None
        and (own.document_id != partner.document_id or own.spans)
        and all(n in own.pages for n in pins)
    ):
        return None
    page = partner.pages[partner.first_page]
    named = f"a parallel citation of {first.volume} {first.reporter} {first.page or ''}".strip()
    if not pins:
        return _on_opinion(
            claim, "case_in_packet", f"{named}, whose opinion the packet holds", page
        )
    return Finding(
        claim,
        "needs_review",
        "case_pin",
        f"{named}, whose opinion the packet holds paged as {first.reporter}: its "
        f"{cite.reporter} page {cite.pin} cannot be checked there",
        page=page,
    )


def _on_opinion(claim: Claim, check: str, message: str, page: PageRecord) -> Finding:
    """A supported case citation, shown on the opinion's page that carries it."""
    return Finding(
        claim, "supported", check, message, page=page, excerpt=excerpt_of(page.text, 0, 200)
    )


def bind_short(ctx: Context, claim: Claim) -> Opinion | None:
    """The packet opinion a short form the draft could not bind names (cached):

    1. "Id."/"Ibid.": the opinion of the citation just before it in the draft, when that is
       a case citation (after a record cite, "Id." is that record; an "Id. at 403" whose page
       that record's document lacks is the case's cited before the record cite; a thing used
       as a cite is passed over);
    2. a name with a volume and reporter ("Halloran, 341 P.3d at 883"): an opinion of the
       packet reported in that volume whose caption holds the name and whose pages hold
       the pin;
    3. a name with "supra": the opinion of the packet whose caption holds the name."""
    if claim.start in ctx.bound:
        return ctx.bound[claim.start]
    ctx.bound[claim.start] = None  # a chain never loops
    cite = claim.citation
    opinion: Opinion | None = None
    words = claim.text.strip()
    if cite is not None and _ID_WORD.match(words):
        before = bisect.bisect_left(ctx.starts, claim.start) - 1
        # An Id. that carries the record cite before it (its page is no page of that
        # record's document, `check`) is the case's cited before that record cite.
        # A thing that stood where a cite belongs but is no record cite of this case
        # ("(MCR-22-077140 at 3)") is no authority an Id. can mean: it is passed over.
        passed = ("not_a_record_cite", "record_cite") if claim.bates else ("not_a_record_cite",)
        while before >= 0 and (
            ctx.ordered[before].kind not in CITES or ctx.ordered[before].kind in passed
        ):
            before -= 1
        if before >= 0 and ctx.ordered[before].kind == "case_citation":
            opinion = _opinion_of(ctx, _first_of_parallels(ctx, ctx.ordered[before]))
    elif cite is not None:
        name = _SHORT_NAME.match(words)
        named = name.group("name") if name else ""
        if cite.volume and cite.reporter:
            pins = pin_numbers(cite.pin or "")
            fitting = [
                found
                for found in ctx.index.opinions_citing(cite.volume, cite.reporter)
                if not named or _name_fits(ctx, named, found.pages[found.first_page])
            ]
            # The one whose pages hold the pin; else the pin is checked against the first.
            opinion = next(
                (o for o in fitting if all(n in o.pages for n in pins)),
                next(iter(fitting), None),
            )
        elif named:
            opinion = next(iter(ctx.index.opinions_named(named)), None)
    ctx.bound[claim.start] = opinion
    return opinion


def _opinion_of(ctx: Context, claim: Claim) -> Opinion | None:
    cite = claim.citation
    if cite is None:
        return None
    if cite.short and not cite.resolved:
        return bind_short(ctx, claim)
    return ctx.index.opinion(cite.volume, cite.reporter, cite.page)


def _name_fits(ctx: Context, name: str, first: PageRecord) -> bool:
    """Whether the opinion's first page prints the name's first word: its first word written
    out, for a caption prints its words whole ("Attorneys" of the Bluebook's "Att'ys", "Office"
    of "Off."); a name of abbreviations alone fits."""
    index = ctx.index.page_index(first)
    whole = [w for w in name.split() if not _ABBREVIATED.search(w)]
    words = [w for w in nz.token_list(" ".join(whole)) if w not in nz.STOPWORDS and len(w) >= 3]
    if not words:
        return True
    return ctx.index.has_term(index, nz.stem(words[0]))


# A word the Bluebook abbreviates (its table T6): a contraction ("Att'ys", "Dep't", "Ass'n",
# not a possessive "'s") or a word ending in a stop ("Exec.", "Off.").
_ABBREVIATED = re.compile(r"[A-Za-z]['\u2019](?![sS]\b)[A-Za-z]|[A-Za-z]\.,?$")


def _caption_terms(ctx: Context, claim: Claim, opinion: Opinion) -> frozenset[str]:
    """The words of a cited opinion's caption that a sentence may name it by: its court's
    ("The Ninth Circuit has held") and its judges' ("Judge Okonjo applied"). No fact a pinned
    page must print."""
    cite = claim.citation
    own = authorities.court_terms(cite.court_text, cite.court) if cite else frozenset()
    first = ctx.index.document_pages(opinion.document_id)
    if first:
        own |= authorities.judge_terms(ctx.index.pages[first[0]].text)
    return own


def _pin(ctx: Context, claim: Claim, pin: str, opinion: Opinion) -> Finding:
    if isinstance(claim.citation, CaseCite) and claim.citation.paragraphs:
        # A public-domain citation's pin names the opinion's numbered paragraphs ("2019 IL
        # App (1st) 181734, ¶ 29"), not its pages.
        document = ctx.index.document_pages(opinion.document_id)
        found = _on_opinion(claim, "case_pin", "", ctx.index.pages[document[0]])
        return paragraphs.in_paragraphs(
            found, ctx, document, pin_numbers(pin), "the opinion", check="case_pin", pilcrow=True
        )
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
        quote_segments(q.quote or q.text) for q in ctx.members(ctx.segment(claim), ("quote",))
    ]
    on_note = footnotes.check(claim, pin, numbers, opinion, ctx.index, quoted_segments)
    if on_note is not None:
        return on_note
    if opinion.spans:
        return _star_pin(ctx, claim, pin, numbers, opinion)
    pin_pages = [ctx.index.page_index(pages[n]) for n in numbers]
    opinion_pages = [ctx.index.page_index(p) for p in pages.values()]
    span = ctx.segment(claim)
    for quote in ctx.members(span, ("quote",)):
        segments = quote_segments(quote.quote or quote.text)
        if ctx.index.find_quote(segments, within=pin_pages) is None:
            elsewhere = ctx.index.find_quote(segments, within=opinion_pages)
            if elsewhere is not None:
                label = _reporter_page(pages, elsewhere.page)
                return Finding(
                    claim,
                    "unsupported",
                    "case_pin",
                    f"the quotation is at {label}, not at the pin cite {pin}",
                    page=elsewhere.page,
                    match=elsewhere.span,
                )
    quoted = any(len(quote_words(q)) >= SHORT_QUOTE for q in ctx.members(span, ("quote",)))
    if not quoted:
        # The pin must carry the proposition: its words, weighed as a record cite's are,
        # against the opinion's other pages.
        # The words naming the opinion's own court ("The Ninth Circuit has held") or its
        # judge are its caption's, no fact a pinned page must print.
        own = _caption_terms(ctx, claim, opinion)
        weighed = terms_elsewhere(ctx, span, pin_pages, within=set(opinion_pages), own=own)
        if weighed is not None and weighed.status == "unsupported":
            other = ctx.index.pages[weighed.page]
            shown = ", ".join(repr(w) for w in weighed.words[:4])
            return Finding(
                claim,
                "unsupported",
                "case_pin",
                f"page {pin} of the opinion does not carry {shown}; page "
                f"{_reporter_page(pages, other)} does",
                page=other,
                excerpt=excerpt_of(other.text, 0, 200),
            )
    # A range ("640-41") holds the proposition on any of its pages: the finding names the
    # one that carries most of it.
    number = _carrying_page(ctx, span, numbers, pin_pages)
    page = pages[number]
    return _on_opinion(
        claim,
        "case_pin",
        f"the opinion is in the packet and page {number} carries the proposition",
        page,
    )


def _carrying_page(
    ctx: Context, span: tuple[int, int], numbers: list[int], pin_pages: list[int]
) -> int:
    """The reporter page of a pin's `numbers` (printed on `pin_pages`, in order) that
    carries most of the segment's key terms; the first on a tie."""
    if len(numbers) < 2:
        return numbers[0]
    terms = {k: t for k, t in weighed_terms(ctx, span).items() if t.count}
    scores = page_scores(ctx, set(pin_pages), terms) if terms else {}
    best = max(range(len(numbers)), key=lambda k: (scores.get(pin_pages[k], 0.0), -k))
    return numbers[best]


def _star_pin(
    ctx: Context, claim: Claim, pin: str, numbers: list[int], opinion: Opinion
) -> Finding:
    """A pin into an opinion whose reporter pages are marked in its text: the quotation
    must stand in (or run over into) the pin's pages, and its words be carried there
    better than on the opinion's other reporter pages."""
    parts = opinion.spans
    span = ctx.segment(claim)
    files = sorted({i for number in parts for i, _, _ in parts[number]})
    pinned = sorted({i for number in numbers for i, _, _ in parts[number]})
    for quote in ctx.members(span, ("quote",)):
        if len(quote_words(quote)) < SHORT_QUOTE:
            continue  # a word or two ("pristine"): a term the opinion may print anywhere
        segments = quote_segments(quote.quote or quote.text)
        # On a packet page the pin shares with other reporter pages, or printed twice (a
        # synopsis repeating the holding): where it stands within the pin, if it does.
        hit = ctx.index.find_quote(segments, within=pinned) or ctx.index.find_quote(
            segments, within=files
        )
        if hit is None:
            continue
        where = ctx.index.page_index(hit.page)
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
    quoted = any(len(quote_words(q)) >= SHORT_QUOTE for q in ctx.members(span, ("quote",)))
    first = parts[numbers[0]][0]
    record = ctx.index.pages[first[0]]
    if not quoted:
        own = _caption_terms(ctx, claim, opinion)
        better = _better_reporter_page(ctx, span, numbers, opinion, own)
        if better is not None:
            number, words = better
            where_part = parts[number][0]
            other = ctx.index.pages[where_part[0]]
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
    ctx: Context,
    span: tuple[int, int],
    numbers: list[int],
    opinion: Opinion,
    own: AbstractSet[str] = frozenset(),
) -> tuple[int, tuple[str, ...]] | None:
    """Another reporter page of a star-paged opinion that carries the segment's key
    terms clearly better than the pin's pages (the thresholds of a wrong record page),
    with the words it adds; None when the pin holds its own."""
    terms = {k: t for k, t in weighed_terms(ctx, span, own=own).items() if t.count}
    if len(terms) < 2:
        return None
    read = ctx.index.derived(
        ("reporter pages", opinion.document_id, opinion.first_page),
        lambda: _reporter_pages_read(ctx.index, opinion),
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
        words = tuple(terms[k].word for k in sorted(gained, key=lambda k: (-terms[k].weight, k)))
        return best, words
    # Support is specific: another reporter page that states the proposition in one
    # sentence, where the pin's pages hold its words only apart (see `_passage_lead`).
    on_pin_sentence = max(
        (best_sentence_of(terms, terms, sentences[n]) for n in numbers if n in sentences),
        key=lambda b: b[0],
        default=(0.0, frozenset()),
    )
    sentence_keys = [k for k, t in terms.items() if t.stems and not t.pair]
    leader = max(
        (
            (n, best_sentence_of(terms, terms, sentences[n]))
            for n in _reaching(read, terms, sentence_keys, WRONG_PAGE_OTHER)
            if n not in numbers
        ),
        key=lambda item: (item[1][0], -item[0]),
        default=None,
    )
    if leader is None:
        return None
    together = leads_together(terms, on_pin_sentence, leader[1])
    return (leader[0], together) if together is not None else None


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
        sentences[number] = [stemmed(part) for part in page_sentences(text)]
        for stem in stems[number].union(*sentences[number]):
            pages_with.setdefault(stem, set()).add(number)
    return _ReporterPages(stems, sentences, pages_with)


def _reaching(
    read: _ReporterPages, terms: Mapping[str, "Term"], keys: Sequence[str], share: float
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
