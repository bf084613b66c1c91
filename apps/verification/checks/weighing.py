"""How much of a sentence a page carries: the sentence's key terms (words, names, phrases,
values) weighed by how rare they are in the packet, the pages that hold them (paraphrases
and OCR slips counted), and a page's sentences read as runs of stems."""

import bisect
import itertools
import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from apps.verification import figures
from apps.verification import normalise as nz
from apps.verification.checks.context import Context
from apps.verification.dates import is_month_day
from apps.verification.index import (
    OCR,
    PacketIndex,
    ocr_read,
)

# Wrong page (support.terms_elsewhere), in shares of the key terms' weight: another page
# carries at least WRONG_PAGE_OTHER, of which at least WRONG_PAGE_GAIN (two terms or more) is
# missing from the cited pages, while what only the cited pages carry is at most
# WRONG_PAGE_KEPT. A smaller lead (REVIEW_GAIN, more than what only the cited pages carry)
# asks for review. Against another page of the cited document (a neighbour, where a wrong
# cite's fact most often is), the shares are of what either side carries; against a page of
# another document, the sentence's words that neither prints stay in the whole (two common
# words of time, "days" and "later", in an opinion had outweighed a cited checklist).
# Verbs whose meaning is their object's ("put a name to", "made a payment", "took delivery",
# "gave notice"): no fact of a sentence, however rare they are in a small packet.
LIGHT_VERBS = frozenset(
    """
    put puts putting get gets got gotten getting make makes made making take takes took taken
    taking give gives gave given giving go goes went gone going come comes came coming
    """.split()  # noqa: SIM905
)
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
    r"[A-Za-z'\u2019]+:"
    # The declarant's own act of reading ("I have reviewed", "We then compared"): how the
    # writer came to the facts, not a fact of the record.
    r"|(?:I|We)(?:\s+(?:have|had|also|then|further|first|next|carefully|independently))*"
    r"\s+[a-z]+ed\b)"
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


# An abbreviation on a page standing for a run of the draft's words ("SLA"): three capitals or
# more (two initials match too many pairs of words).
_ACRONYM = re.compile(r"(?=[A-Z])\b[A-Z]{3,5}\b")  # (the lookahead first: tried at capitals only)
_MONTHS = [
    *("january", "february", "march", "april", "may", "june"),
    *("july", "august", "september", "october", "november", "december"),
]


def sentence_share(
    ctx: Context,
    terms: Mapping[str, "Term"],
    words: Mapping[str, "Term"],
    values: Collection[str],
    phrases: Mapping[str, "Term"],
    also: Collection[str],
    page: int,
    stems: frozenset[str],
    runs: list[str],
) -> tuple[float, frozenset[str], dict[str, "Term"], float]:
    """What one sentence of a cited page carries of the segment: the weight and keys of
    its terms (the page's dates and amounts counted in it), the phrases whose words it holds
    apart or in part (`phrase_terms`; a phrase whose words the page carries in another
    form, or an OCR page's, is given it) and the whole weight they make together."""
    held = frozenset(k for k, t in words.items() if any(x in stems for x in t.stems))
    held |= frozenset(k for k in values if page in terms[k].pages)
    ocr = ctx.index.pages[page].source == OCR
    lacking = {
        k: t
        for k, t in phrases.items()
        if any(part in held for part in t.pair)
        and not phrase_in(stems, runs, t)
        and not (
            all(part in held or part in also for part in t.pair)
            and (ocr or any(part in also for part in t.pair))
        )
    }
    weight = sum(terms[k].weight for k in held)
    whole = sum(t.weight for t in terms.values()) + sum(t.weight for t in lacking.values())
    return weight, held, lacking, whole


def page_passages(ctx: Context, page: int) -> list[frozenset[str]]:
    """The page's sentences, each as the stems of its words (cached)."""
    cached = ctx.passages.get(page)
    if cached is None:
        _read_sentences(ctx, page)
        cached = ctx.passages[page]
    return cached


def sentence_runs(ctx: Context, page: int) -> list[list[str]]:
    """The page's sentences (as `page_passages` has them), each as its runs of words: cut
    where a phrase breaks (a comma, a colon, a bracket), each its words' stems between
    spaces, a word that is no key word as "|" (cached; see `phrase_in`)."""
    cached = ctx.sentence_runs.get(page)
    if cached is None:
        _read_sentences(ctx, page)
        cached = ctx.sentence_runs[page]
    return cached


def _read_sentences(ctx: Context, page: int) -> None:
    """Reads the page's sentences once for `page_passages` and `sentence_runs`."""
    record = ctx.index.pages[page]
    text = ocr_read(record.text) if record.source == OCR else record.text
    stem_of, shown_of = ctx.stems_of, ctx.shown_of
    passages: list[frozenset[str]] = []
    runs: list[list[str]] = []
    for part in page_sentences(text):
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
    ctx.passages[page] = passages
    ctx.sentence_runs[page] = runs


def phrase_terms(
    ctx: Context, span: tuple[int, int], terms: Mapping[str, "Term"]
) -> dict[str, "Term"]:
    """The span's phrases: two key words that stand side by side in it, both capitalised
    (a name: "Kasimir Whitcombe") or neither (a term: "discharge summary", "royalty
    report"), no claim, comma or bracket between them ("Northcott recorded" is a name and
    a verb, no phrase). A page
    carries a phrase when it prints the two words side by side (either in a paraphrase's
    form), in that order: a name or a term of art is one fact, and a page that holds its
    words apart ("Kasimir wrote", "the minimum royalty ... a report") holds less of it. A
    phrase weighs as its lighter word and is a term of its own beside its words."""
    masked = list(ctx.text[span[0] : span[1]])
    first = max(0, bisect.bisect_left(ctx.starts, span[0]) - 3)
    for claim in ctx.following(first):
        if claim.start >= span[1]:
            break
        for k in range(max(claim.start, span[0]), min(claim.end, span[1])):
            masked[k - span[0]] = "|"
    out: dict[str, Term] = {}
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
            out[key] = Term(
                f"{a} {b}",
                min(left.count, right.count),
                min(left.weight, right.weight),
                pair=(stems[k], stems[k + 1]),
                groups=(left.stems, right.stems),
                group_holders=(left.holders, right.holders),
            )
    return out


def weighed_terms(
    ctx: Context,
    span: tuple[int, int],
    *,
    values: bool = False,
    own: AbstractSet[str] = frozenset(),
) -> dict[str, "Term"]:
    """The span's key terms (outside its claims), each with the pages that carry it or a
    paraphrase and its weight; with `values`, its dates and amounts as terms too. Terms of
    `own` (the cited source's own words, printed where it names itself) are none."""
    out: dict[str, Term] = {}
    masked = list(ctx.text[span[0] : span[1]])
    first = max(0, bisect.bisect_left(ctx.starts, span[0]) - 3)
    for claim in ctx.following(first):
        if claim.start >= span[1]:
            break
        if is_month_day(claim.value):
            continue  # a year-less date: its month is a word of the segment, as before
        for k in range(max(claim.start, span[0]), min(claim.end, span[1])):
            masked[k - span[0]] = " "
    frame = _FRAME.match(ctx.text, span[0], span[1])
    if frame is not None and _is_frame(frame.group("frame")):
        for k in range(frame.start("frame"), frame.end("frame")):
            masked[k - span[0]] = " "
    for word in nz.token_list("".join(masked)):
        if word in nz.STOPWORDS or len(word) < 3 or (word.isdigit() and len(word) < 4):
            continue
        if word in LIGHT_VERBS:
            continue
        term = nz.stem(word)
        if term in out or term in own:
            continue
        group = PARAPHRASE_OF.get(term, (term,))
        if len(group) == 1:
            holders: Collection[int] = ctx.index.pages_with_term(term)
        else:
            holders = _pages_with_any(ctx.index, group)
        count = len(holders)
        factor = 2.0 if word.isdigit() else 1.0
        weight = factor * _weight_of(ctx.index, count)
        out[term] = Term(word, count, weight, stems=group, holders=holders)
    if values:
        for key, written, held in figures.figure_pages(ctx.index, ctx.text, span, "".join(masked)):
            weight = 2.0 * _weight_of(ctx.index, len(held))
            out[key] = Term(written, len(held), weight, pages=held)
        for claim in ctx.members(span, ("date", "amount")):
            if claim.value is None or is_month_day(claim.value):
                continue
            what = "date" if claim.kind == "date" else "amount"
            held = frozenset(ctx.index.value_pages(what, claim.value))
            weight = 2.0 * _weight_of(ctx.index, len(held))
            out[f"{what}:{claim.value}"] = Term(claim.text, len(held), weight, pages=held)
    return out


def carries(ctx: Context, page: int, term: "Term") -> bool:
    """The page holds the term (a date or amount: that value), or a paraphrase of it."""
    if term.pair:
        if not _holds_words(ctx, page, term):
            return False
        sentences = zip(page_passages(ctx, page), sentence_runs(ctx, page), strict=True)
        return any(phrase_in(stems, runs, term) for stems, runs in sentences)
    if not term.stems:
        return page in term.pages
    stems = ctx.index.stems[page]
    return any(s in stems for s in term.stems)


def neighbour(ctx: Context, page: int, pages: Sequence[int]) -> bool:
    """Whether `page` is another page of a cited page's document."""
    return any(page in ctx.document_set(ctx.index.pages[p].document_id) for p in pages)


def named(ctx: Context, term: "Term", span: tuple[int, int]) -> bool:
    """Whether the term is a name: one word that the segment writes with a capital and the
    packet prints with one wherever it prints it in lower case letters too (on up to
    NAME_PAGES of its pages; a heading's capitals tell nothing), as "Castellanos". A
    sentence's first word has a capital whatever it is: the packet's pages tell a name
    from a word."""
    if not term.stems or term.pair:
        return False
    pattern = re.compile(rf"\b{re.escape(term.word)}\b", re.IGNORECASE)
    if not any(m.group()[:1].isupper() for m in pattern.finditer(ctx.text, *span)):
        return False
    printed = False
    for page in sorted(term.holders)[:NAME_PAGES]:
        for match in pattern.finditer(ctx.index.pages[page].text):
            word = match.group()
            if word.isupper():
                continue
            if not word[:1].isupper():
                return False
            printed = True
    return printed


def _holds_words(ctx: Context, page: int, term: "Term") -> bool:
    """The page holds both words of the phrase `term` (or their paraphrases), anywhere."""
    stems = ctx.index.stems[page]
    return all(any(s in stems for s in group) for group in term.groups)


def term_holders(ctx: Context, term: "Term") -> Collection[int]:
    """The pages holding the term or a paraphrase (few: see CANDIDATE_PAGES)."""
    if not term.stems:
        return term.pages
    return term.holders


def page_scores(
    ctx: Context, candidates: set[int], terms: Mapping[str, "Term"]
) -> dict[int, float]:
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
                _holding(_held_set(ctx, stems, held), scores)
                for stems, held in zip(term.groups, term.group_holders, strict=True)
            )
            for page in left.intersection(right):
                scores[page] += term.weight
            continue
        held = term_holders(ctx, term)
        if isinstance(held, Collection) and len(held) <= len(scores):
            for page in held:
                if page in scores:
                    scores[page] += term.weight
            continue
        if term.stems:
            # A common word recurs in many claims' sentences: its pages, once as a set.
            held = _held_set(ctx, term.stems, held)
        for page in _holding(held, scores):
            scores[page] += term.weight
    return scores


def _held_set(
    ctx: Context, stems: tuple[str, ...], held: Iterable[int]
) -> "AbstractSet[int] | list[int]":
    """`held`, the pages holding a word of `stems` (a `Term`'s holders), as a set made
    once a run; a word's own pages (`PacketIndex.pages_with_term`, a list in packet order)
    as they are, asked by bisection (`_holding`): a common word's thousands of pages made
    a set cost more than the look-ups."""
    if isinstance(held, list):
        return held
    known = ctx.held.get(stems)
    if known is None:
        known = ctx.held[stems] = frozenset(held)
    return known


def carried_otherwise(ctx: Context, span: tuple[int, int], pages: list[int]) -> set[str]:
    """Key terms of the span the cited pages carry in another form: the month of a
    year-month figure ("2023-11", "11/2023": November), and a run of the span's words
    that an abbreviation on the page stands for ("SLA": "Service Level")."""
    carried: set[str] = set()
    acronyms: set[str] = set()
    for page in pages:
        months, shorts = _page_forms(ctx, page)
        carried |= months
        acronyms |= shorts
    words = [w for w in nz.token_list(ctx.text[span[0] : span[1]]) if w.isalpha()]
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


def _page_forms(ctx: Context, page: int) -> tuple[frozenset[str], frozenset[str]]:
    """The page's months of year-month figures (stems) and its abbreviations (cached)."""
    cached = ctx.forms.get(page)
    if cached is None:
        text = ctx.index.pages[page].text
        months = frozenset(
            nz.stem(_MONTHS[int(m.group("m1") or m.group("m2")) - 1])
            for m in _YEAR_MONTH.finditer(text)
        )
        shorts = frozenset(m.group().lower() for m in _ACRONYM.finditer(text))
        cached = ctx.forms[page] = (months, shorts)
    return cached


def ocr_pair(ctx: Context, pages: list[int], term: "Term", carried: set[str]) -> bool:
    """An OCR page among `pages` holds both words of the phrase `term` (OCR may break the
    line or the spacing between them: the benefit of the doubt is the page's)."""
    return all(part in carried for part in term.pair) and any(
        ctx.index.pages[p].source == OCR for p in pages
    )


def ocr_slip(ctx: Context, pages: list[int], group: Sequence[str]) -> bool:
    """An OCR page among `pages` holds a stem of `group` one slip away."""
    return any(
        ctx.index.pages[p].source == OCR and ctx.index.has_term(p, t) for p in pages for t in group
    )


def page_sentences(text: str) -> list[str]:
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
    """A word `weighed_terms` keeps as a key term."""
    return not (word in nz.STOPWORDS or len(word) < 3 or (word.isdigit() and len(word) < 4))


def phrase_in(stems: frozenset[str], runs: list[str], term: "Term") -> bool:
    """A sentence (its `stems`, and its `runs`, `Context._sentence_runs`) prints the phrase
    `term`: its two words (or their paraphrases) side by side, in order."""
    left, right = term.groups
    if not (any(s in stems for s in left) and any(s in stems for s in right)):
        return False
    pairs = [f" {first} {second} " for first in left for second in right]
    return any(pair in run for run in runs for pair in pairs)


def _stemmed(word: str) -> tuple[str, str]:
    """The word's stem, and its form in a sentence's runs (`Context._sentence_runs`): its
    stem for a key word, "|" for another."""
    stem = nz.stem(word)
    return stem, stem if _key_word(word) else "|"


@dataclass(frozen=True)
class Term:
    word: str  # as the draft writes it (for messages)
    count: int  # how many pages carry it or a paraphrase of it
    weight: float
    stems: tuple[str, ...] = ()  # a word: its stem and its paraphrases' (none: a value)
    pages: frozenset[int] = frozenset()  # a date or amount: the pages holding it
    holders: Collection[int] = ()  # a word: the pages holding it or a paraphrase
    pair: tuple[str, ...] = ()  # a phrase: its two words' keys (see `phrase_terms`)
    groups: tuple[tuple[str, ...], ...] = ()  # ... and each word's stems (paraphrases too)
    group_holders: tuple[Collection[int], ...] = ()  # ... and each word's `holders`


def _holding(held: Collection[int], pages: Iterable[int]) -> set[int]:
    """The pages of `pages` that `held` holds: a set, or a list in packet order (ascending,
    `Context._held_set`) looked up by bisection."""
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
