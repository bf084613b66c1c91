"""Whether cited pages carry what a sentence attributes to them, better than any other page:
the judgement every record cite, named document and pin ends in (see the package docstring,
step 2)."""

import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from apps.verification import normalise as nz
from apps.verification.checks.context import Context, has_words
from apps.verification.checks.weighing import (
    Term,
    carried_otherwise,
    carries,
    named,
    neighbour,
    ocr_pair,
    ocr_slip,
    page_passages,
    page_scores,
    phrase_in,
    phrase_terms,
    sentence_runs,
    sentence_share,
    term_holders,
    weighed_terms,
)
from apps.verification.claims import Claim
from apps.verification.dates import is_month_day, same_day
from apps.verification.findings import Finding, Status
from apps.verification.index import (
    PacketIndex,
    PageRecord,
    QuoteHit,
    pages_label,
)
from apps.verification.quoting import quote_segments, quote_words
from apps.verification.spans import excerpt_of

SHORT_QUOTE = 4  # words; a shorter quoted term not found is left for review
MISQUOTE_RATIO = 0.5  # share of a quotation's words in order in the closest passage
NEAR_PASSAGE = 0.8  # a misquote this close to a passage of another page: the cite is wrong too
MISQUOTE_WORDS = 1  # ... and no more of its words missing from that passage
WRONG_PAGE_OTHER = 0.6
WRONG_PAGE_GAIN = 0.4
WRONG_PAGE_KEPT = 0.1
WRONG_PAGE_KEPT_RATIO = 1 / 3  # or up to a third of what the other page adds
REVIEW_GAIN = 0.3
PASSAGE_GAIN = 0.2  # another page's one sentence carries this much more (see _passage_lead)
WRONG_PAGE_ALONE = 0.5  # the cited pages carry none of it and another page half of it
RARE_CANDIDATES = 4  # the other pages considered hold one of the heaviest lacking terms...
CANDIDATE_PAGES = 50  # ... held by at most this many pages (or a 20th of the packet's)


_LIST_ITEM = re.compile(r"\n[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]")


def judge_pages(ctx: Context, claim: Claim, pages: list[int]) -> Finding:
    """Whether the cited `pages` carry what the cite's segment attributes to them."""
    if not any(ctx.index.pages[p].text.strip() for p in pages):
        return Finding(
            claim,
            "needs_review",
            "record_cite_page",
            f"{pages_label(ctx.index, pages)} is in the packet but has no text "
            "to check the sentence against",
            page=ctx.index.pages[pages[0]],
        )
    span = ctx.segment(claim)
    # Every page of the run of cites the words share vouches for them ("(A; B)"): the
    # sentence is supported when any of them carries it.
    group = group_pages(ctx, claim, pages)
    moved = _quote_elsewhere(ctx, span, group)
    if moved is not None:
        return moved_finding(claim, moved, ctx.index)
    evidence = _evidence_on(ctx, span, group)
    # A quotation of the segment decides for the cite (found elsewhere: moved, above; a
    # misquote or an invented one is flagged on its own). Otherwise the segment's words,
    # and its dates and amounts where some page carries them, must be carried by the
    # cited pages better than by any other page, their neighbours included: a wrong value
    # under a right cite leaves the cite supported (the value is flagged on its own),
    # while a value that stands with the sentence's words on another page moves the cite.
    quoted = any(len(quote_words(q)) >= SHORT_QUOTE for q in ctx.members(span, ("quote",)))
    if evidence is None and not quoted and not _altered_here(ctx, span, group):
        weighed = terms_elsewhere(ctx, span, group)
        if weighed is not None and not _introduces(ctx, weighed.page, group):
            return wrong_finding(claim, weighed, group, ctx.index)
    page, match, what = evidence or _best_cited(ctx, span, group)
    excerpt = excerpt_of(page.text, *match) if match else excerpt_of(page.text, 0, 160)
    label = pages_label(ctx.index, pages)
    where = ctx.index.label(ctx.index.page_index(page))
    if len(group) > len(pages) and page not in [ctx.index.pages[p] for p in pages]:
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


def _introduces(ctx: Context, page: int, pages: list[int]) -> bool:
    """Whether `page` is the first page of a document and the cited `pages` are a run of two or
    more of its pages straight after it: a cover, a notice of reliance or an exhibit's slip
    sheet describing the pages it introduces, in the words a brief uses of them. A cite of
    the pages described is no wrong cite of their description."""
    if len(pages) < 2 or pages != list(range(pages[0], pages[0] + len(pages))):
        return False
    document = ctx.index.document_pages(ctx.index.pages[page].document_id)
    return document[0] == page and document[1 : 1 + len(pages)] == pages


def _altered_here(ctx: Context, span: tuple[int, int], pages: list[int]) -> bool:
    """A date or amount of the segment that no page of the packet carries, while the cited
    pages carry values of its kind (what it may have been altered from) and no other value
    of the segment stands elsewhere: the error is the value's (flagged on its own, naming
    the nearest value on the page), not the cite's."""
    altered = False
    stems: frozenset[str] | None = None
    for claim in ctx.members(span, ("date", "amount")):
        if claim.value is None or is_month_day(claim.value):
            continue
        what = "date" if claim.kind == "date" else "amount"
        elsewhere = ctx.index.value_pages(what, claim.value)
        if stems is None:
            stems = frozenset(ctx.key_terms(span))
        if elsewhere and (
            any(_value_beside(ctx, page, what, stems, claim.value) for page in elsewhere)
            or not any(_value_beside(ctx, page, what, stems) for page in pages)
        ):
            # Another value of the sentence stands elsewhere in the packet, in a line with
            # the sentence's words (or the cited pages print no value of its kind so): that
            # page may be the one the sentence is about (the word check decides). Printed
            # there apart from them ("Final 11/10/2022" on a lab sheet) while a cited page
            # prints a value of its kind beside them ("ICU transfer: 11/09/2022"), it is the
            # cited page's value altered.
            return False
        altered = altered or any(ctx.page_values(what, page) for page in pages)
    return altered


def _value_beside(
    ctx: Context, page: int, what: str, stems: frozenset[str], value: str | None = None
) -> bool:
    """Whether `page` prints a value of the kind (`value` itself, where given) in a line that
    holds one of `stems` (the sentence's key words)."""
    text = ctx.index.pages[page].text
    for found in ctx.page_values(what, page):
        if value is not None and found.value != value:
            continue
        start = text.rfind("\n", 0, found.start) + 1
        end = text.find("\n", found.end)
        line = text[start : end if end >= 0 else len(text)]
        if any(nz.stem(word) in stems for word in nz.token_list(line)):
            return True
    return False


def group_pages(ctx: Context, cite: Claim, pages: list[int]) -> list[int]:
    """`pages` and those of the record cites run together with `cite` (no words between
    them), in the sentence's order: the pages that vouch for one segment."""
    cites = ctx.cites_by_sentence.get(cite.sentence, [cite])
    at = ctx.place_of(cite)
    if at is None or len(cites) == 1:
        return pages
    first = last = at
    while first > 0 and not has_words(ctx.text[cites[first - 1].end : cites[first].start]):
        first -= 1
    while last + 1 < len(cites) and not has_words(
        ctx.text[cites[last].end : cites[last + 1].start]
    ):
        last += 1
    group = list(pages)
    for other in cites[first : last + 1]:
        if other is not cite and other.kind == "record_cite":
            group.extend(p for p in ctx.cite_pages(other) if p not in group)
    return group


def _best_cited(
    ctx: Context, span: tuple[int, int], pages: list[int]
) -> tuple[PageRecord, tuple[int, int] | None, str]:
    """The cited page that carries most of the segment's key terms (the first on a tie)."""
    best = pages[0]
    if len(pages) > 1:
        terms = [t for t in weighed_terms(ctx, span).values() if t.count]
        scores = [sum(t.weight for t in terms if carries(ctx, p, t)) for p in pages]
        best = pages[max(range(len(pages)), key=lambda k: (scores[k], -k))]
    return ctx.index.pages[best], None, "is in the packet"


def _evidence_on(
    ctx: Context, span: tuple[int, int], pages: list[int]
) -> tuple[PageRecord, tuple[int, int], str] | None:
    """A quotation, date or amount of the segment found on the cited pages."""
    for claim in ctx.members(span, ("quote", "date", "amount")):
        if claim.kind == "quote":
            hit = ctx.index.find_quote(quote_segments(claim.quote or claim.text), within=pages)
            if hit is not None:
                return hit.page, hit.span, "carries the quotation"
            continue
        what = "date" if claim.kind == "date" else "amount"
        for page in pages:
            for found in ctx.page_values(what, page):
                if same(claim, found.value):
                    record = ctx.index.pages[page]
                    return record, (found.start, found.end), f"carries the {what}"
    return None


def _quote_elsewhere(ctx: Context, span: tuple[int, int], pages: list[int]) -> QuoteHit | None:
    """A quotation of the segment that stands elsewhere but not on `pages`: verbatim, or
    (a misquote) nearly so on another page while the cited pages hold nothing like it."""
    for quote in ctx.members(span, ("quote",)):
        segments = quote_segments(quote.quote or quote.text)
        words = [w for segment in segments for w in segment]
        if len(words) < SHORT_QUOTE:
            continue
        if ctx.index.find_quote(segments, within=pages) is not None:
            return None
        hit = ctx.index.find_quote(segments)
        if hit is not None:
            return hit
        here = ctx.index.closest_passage(words, within=pages)
        if here is not None and here.ratio >= MISQUOTE_RATIO:
            continue  # a misquote of the cited page: the quotation's finding says so
        near = ctx.index.closest_passage(words)
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


def terms_elsewhere(
    ctx: Context,
    span: tuple[int, int],
    pages: list[int],
    *,
    within: set[int] | None = None,
    own: AbstractSet[str] = frozenset(),
) -> "_Weighed | None":
    """Whether the cited pages carry what the segment attributes to them (see `_Weighed`).

    The segment's key terms are weighed by how distinctive they are in the packet (IDF
    over its pages; a number counts double) and a term is carried by a page that holds
    it or a paraphrase of it (`PARAPHRASES`). A segment with too few key terms of its own
    ("Nothing after that") is read with the sentence before it, whose dates and amounts
    count as terms too. The best other page is compared with the cited pages on what one
    carries and the other lacks."""
    terms = weighed_terms(ctx, span, values=True, own=own)
    context = False
    if sum(1 for t in terms.values() if t.count) < 2:
        sentence = ctx.sentence_of(span)
        earlier = ctx.previous_sentence(sentence)
        # Another item of a list is not the sentence this one continues.
        if earlier is None or _LIST_ITEM.search(ctx.text[earlier[1] : sentence[1]]):
            return None
        terms = {**weighed_terms(ctx, earlier, values=True), **terms}
        context = True
    terms = {k: t for k, t in terms.items() if t.count}
    if len(terms) < 2:
        return None
    on_cited = {k for k, t in terms.items() if any(carries(ctx, p, t) for p in pages)}
    if len(on_cited) < len(terms):
        also = carried_otherwise(ctx, span, pages)
        on_cited |= {
            k
            for k, t in terms.items()
            if k not in on_cited
            and (k in also or (t.stems and ocr_slip(ctx, pages, (*t.stems, t.word))))
        }
    total = sum(t.weight for t in terms.values())
    # Candidates: the pages holding the heaviest terms the cited pages lack (a term held
    # by many pages is no sign of the right one).
    lacking = sorted((k for k in terms if k not in on_cited), key=lambda k: (-terms[k].weight, k))
    common = max(CANDIDATE_PAGES, len(ctx.index.pages) // 20)
    candidates: set[int] = set()
    for k in lacking[:RARE_CANDIDATES]:
        if terms[k].count <= common:
            candidates.update(term_holders(ctx, terms[k]))
    candidates.difference_update(pages)
    if within is not None:
        candidates &= within
    scores = page_scores(ctx, candidates, terms)
    best = _best_scored(scores)
    law = law_documents(ctx)
    if (
        best is not None
        and ctx.index.pages[best].document_id in law
        and not any(ctx.index.pages[p].document_id in law for p in pages)
    ):
        # A record page's facts are the case's; an opinion the draft cites as authority states
        # the law in the words a brief argues with ("preference period", "ordinary course"),
        # never this case's facts: it does not lead against a cite of the record. Only where
        # the cited pages carry none of the sentence, while the opinion does, does it say so.
        lawful = _law_lead(ctx, terms, on_cited, best, context)
        if lawful is not None:
            return lawful
        best = _best_scored(
            {p: v for p, v in scores.items() if ctx.index.pages[p].document_id not in law}
        )
    phrases = {} if context else phrase_terms(ctx, span, terms)
    if best is None:
        return None if context else _passage_lead(ctx, span, terms, pages, within, phrases)
    # A phrase of the segment that the other page prints whole, and whose words the cited
    # pages hold apart or in part, is a fact they lack (one they print whole adds nothing
    # to its words, nor one whose words they lack: those count already).
    apart = {
        k: t
        for k, t in phrases.items()
        if any(part in on_cited for part in t.pair)
        and carries(ctx, best, t)
        and not ocr_pair(ctx, pages, t, on_cited)
        and not any(carries(ctx, p, t) for p in pages)
    }
    if apart:
        terms = {**terms, **apart}
        total = sum(t.weight for t in terms.values())
    on_best = {k for k, t in terms.items() if carries(ctx, best, t)}
    gained = on_best - on_cited  # what the other page carries and the cited ones lack
    kept = on_cited - on_best  # what only the cited pages carry
    if neighbour(ctx, best, pages):
        # Against a page of the cited document, shares of what either side carries: a word of
        # the sentence that neither prints (an adverb or a verb of the draft's own) decides
        # nothing between two pages of one document.
        total = sum(terms[k].weight for k in on_best | on_cited) or total
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
    values_gained = [k for k in gained if ":" in k]
    if (
        not context
        and len(values_gained) >= 2
        and not any(":" in k for k in on_cited)
        and neighbour(ctx, best, pages)
    ):
        # The sentence's figures (its dates, amounts, quantities, readings), two or more,
        # stand together on a page of the cited document, and none of them on the cited page:
        # the words they share are the document's, the figures the page's.
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
        and neighbour(ctx, best, pages)
        and named(ctx, terms[next(iter(gained))], span)
    ):
        # The sentence names someone the cited pages never print, and a neighbour prints
        # the name with all that the cited pages carry of the sentence: the name is a fact
        # (one word, but a person's), and the neighbour's page is the sentence's.
        return _Weighed("unsupported", best, words)
    if len(gained) >= 2 and share_gained >= REVIEW_GAIN and share_gained > share_kept:
        # A lead on words alone; stated together in one sentence of a neighbour, it is
        # the neighbour's fact.
        together = None if context else _passage_lead(ctx, span, terms, pages, within, phrases)
        return together or _Weighed("needs_review", best, words)
    return None if context else _passage_lead(ctx, span, terms, pages, within, phrases)


def _best_scored(scores: Mapping[int, float]) -> int | None:
    """The page of the highest score (the first page on a tie), None for none above 0."""
    best: int | None = None
    best_key: tuple[float, int] = (0.0, 0)
    for page, score in scores.items():
        if (score, -page) > best_key:
            best, best_key = page, (score, -page)
    return best


def _law_lead(
    ctx: Context, terms: Mapping[str, "Term"], on_cited: set[str], page: int, context: bool
) -> "_Weighed | None":
    """Against a record cite whose pages carry none of the sentence's terms, an opinion's page
    that carries WRONG_PAGE_ALONE of them: the cite is unsupported (read with the sentence
    before, on its words alone, for review); the opinion is named as law, not as the page."""
    if on_cited:
        return None
    held = {k for k, t in terms.items() if carries(ctx, page, t)}
    plain = [k for k, t in terms.items() if not t.pair]
    share = sum(terms[k].weight for k in held if not terms[k].pair) / (
        sum(terms[k].weight for k in plain) or 1.0
    )
    if share < WRONG_PAGE_ALONE:
        return None
    strong = not context or any(":" in k for k in held)
    words = tuple(terms[k].word for k in sorted(held, key=lambda k: (-terms[k].weight, k)))
    return _Weighed("unsupported" if strong else "needs_review", page, words, law=True)


def law_documents(ctx: Context) -> frozenset[int]:
    """The packet's documents that the draft cites as opinions (by volume, reporter and
    page), read once per draft."""
    if ctx.law_documents is None:
        found: set[int] = set()
        for claim in ctx.claims:
            cite = claim.citation if claim.kind == "case_citation" else None
            if cite is None or not cite.resolved:
                continue
            opinion = ctx.index.opinion(cite.volume, cite.reporter, cite.page)
            if opinion is not None:
                found.add(opinion.document_id)
        ctx.law_documents = frozenset(found)
    return ctx.law_documents


def _passage_lead(
    ctx: Context,
    span: tuple[int, int],
    terms: Mapping[str, "Term"],
    pages: list[int],
    within: set[int] | None,
    phrases: Mapping[str, "Term"],
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
    # print whole counting as a fact it lacks (`phrase_terms`).
    also = carried_otherwise(ctx, span, pages)
    cited_weight, cited, lacking = max(
        (
            sentence_share(ctx, terms, words, values, phrases, also, page, stems, runs)
            for page in pages
            for stems, runs in zip(page_passages(ctx, page), sentence_runs(ctx, page), strict=True)
        ),
        key=lambda b: (b[0] / (b[3] or 1.0), b[0]),
        default=(0.0, frozenset(), {}, 0.0),
    )[:3]
    terms = {**terms, **lacking}
    total = sum(t.weight for t in terms.values())

    def best_sentence(page: int) -> tuple[float, frozenset[str]]:
        page_values = frozenset(k for k in values if page in terms[k].pages)
        runs = sentence_runs(ctx, page) if lacking else None
        return best_sentence_of(
            terms, {**words, **lacking}, page_passages(ctx, page), page_values, runs
        )

    common = max(CANDIDATE_PAGES, len(ctx.index.pages) // 20)
    heaviest = sorted(words, key=lambda k: (-words[k].weight, k))[:RARE_CANDIDATES]
    candidates: set[int] = set()
    for k in heaviest:
        if words[k].count <= common:
            candidates.update(term_holders(ctx, words[k]))
    # Its neighbours: the other pages of the cited pages' documents, which share their
    # letterhead, parties and defined terms (a page of another document is told apart by
    # its words, `terms_elsewhere`).
    documents = {ctx.index.pages[p].document_id for p in pages}
    in_documents = [ctx.document_set(d) for d in documents]
    neighbours = in_documents[0] if len(in_documents) == 1 else frozenset().union(*in_documents)
    candidates = (candidates & neighbours).difference(pages)
    if within is not None:
        candidates &= within
    # A page whose words, even all in one sentence, could not lead is not read by sentence.
    floor = max(WRONG_PAGE_OTHER, PASSAGE_GAIN) * total
    scores = {
        p: score for p, score in page_scores(ctx, candidates, terms).items() if score >= floor
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
    gained = leads_together(terms, (cited_weight, cited), (weight, held))
    if gained is None:
        return None
    return _Weighed("unsupported", page, gained, True)


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


def best_sentence_of(
    terms: Mapping[str, "Term"],
    words: Mapping[str, "Term"],
    sentences: Sequence[frozenset[str]],
    values: frozenset[str] = frozenset(),
    runs: Sequence[list[str]] | None = None,
) -> tuple[float, frozenset[str]]:
    """The weight and the keys of the terms that one of `sentences` (each a set of stems)
    carries at most (a word term by its stem or a paraphrase's; a phrase by the sentence's
    `runs`, `phrase_in`), with `values` (the dates and amounts its page holds) counted in
    each."""
    best: tuple[float, frozenset[str]] = (0.0, frozenset())
    runs = runs or [[] for _ in sentences]
    for at, stems in enumerate(sentences):
        held = (
            frozenset(
                k
                for k, t in words.items()
                if (phrase_in(stems, runs[at], t) if t.pair else any(x in stems for x in t.stems))
            )
            | values
        )
        weight = sum(terms[k].weight for k in held)
        if weight > best[0]:
            best = (weight, held)
    return best


def leads_together(
    terms: Mapping[str, "Term"],
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


def wrong_finding(
    claim: Claim, weighed: "_Weighed", pages: list[int], index: PacketIndex
) -> Finding:
    record = index.pages[weighed.page]
    shown = ", ".join(repr(w) for w in weighed.words[:4])
    cited = pages_label(index, pages)
    if weighed.law:
        message = (
            f"the cited page {cited} carries none of the sentence's words ({shown}); only "
            f"{index.label(weighed.page)}, a page of an opinion the draft cites, does, and it "
            "states the law, not this case's facts"
        )
    elif weighed.together:
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
class _Weighed:
    """The wrong-page verdict: unsupported, or needs review when the lead is smaller; the page
    that carries the sentence's content and the draft's words the cited pages lack."""

    status: Status
    page: int
    words: tuple[str, ...]
    together: bool = False  # the other page states them in one sentence, the cited ones apart
    law: bool = False  # the other page is an opinion's: only the cited pages' silence is told


def same(claim: Claim, found: str) -> bool:
    """A value on a page is the claim's (a year-less date: that month and day, in the
    sentence's years where it gives them)."""
    if claim.kind == "date":
        return same_day(claim.value or "", found, claim.years)
    return found == claim.value
