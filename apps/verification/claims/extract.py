"""`extract_claims`: the claims of a draft in the order of work that the package's docstring
gives."""

from __future__ import annotations

import bisect
import re
import time
from collections.abc import Sequence

from apps.verification.claims.base import (
    ODD_SPACES,
    WORD,
    CaseCite,
    Claim,
    Spans,
    StatuteCite,
)
from apps.verification.claims.cases import case_citations, prepare_eyecite
from apps.verification.claims.quotations import Quote, find_quotes, is_defined_term
from apps.verification.claims.record import RecordCite, record_cites
from apps.verification.claims.sentences import block_sentence, sentence_spans, shared_sentences
from apps.verification.claims.values import value_claims

# "Id. at " just before a record cite ("Id. at QZR0000041"): the cite is Id.'s pin.
_ID_AT = re.compile(r"(?<![\w.])(?:[Ii]d|[Ii]bid)\.[ \t,]*(?:at[ \t]+)?\Z")
# ... read over this many characters before the cite, not from its sentence's start: a hostile
# "sentence" of thousands of cites would be read once for each.
_ID_AT_CHARS = 64


def _mask(text: str, spans: Sequence[tuple[int, int]]) -> str:
    chars = list(text)
    for a, b in spans:
        for i in range(a, b):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


# A declarant's oath: "under penalty of perjury", or the declarant declaring in the first
# person ("I, Kendrick L. Savoie, declare as follows under 28 U.S.C. § 1746:").
_OATH = re.compile(r"(?i)\bpenalty\s+of\s+perjury\b|\bI\b,?[^;\n]{0,80}?\bdeclare\b")


def extract_claims(
    text: str, *, bates_prefixes: Sequence[str] = (), timeout_s: float = 5.0
) -> list[Claim]:
    """Every checkable claim in `text`, in order of position (see the module's docstring)."""
    if not text or not text.strip():
        return []
    if isinstance(bates_prefixes, str):
        bates_prefixes = (bates_prefixes,)
    prepare_eyecite()  # once per process, outside the limit
    deadline = time.monotonic() + max(timeout_s, 0.0)
    plain = ODD_SPACES.sub(" ", text)
    quotes = find_quotes(plain)
    record, quotes = record_cites(plain, bates_prefixes, quotes)
    bounds = sentence_spans(plain, quotes)
    masked = _mask(plain, [(c.start, c.end) for c in record] + [(q.start, q.end) for q in quotes])
    # A citation wrapped over lines is one citation: a soft line break reads as a space (not the
    # break before a blank line, a list item, a heading or a block quote).
    masked = re.sub(r"(?<!\n)\n(?![ \t]*(?:\n|[-*+\u2022>#][ \t]|\d{1,3}[.)][ \t]))", " ", masked)
    record_ids: list[RecordCite] = []
    cases = case_citations(plain, masked, record, deadline, record_ids)
    case_spans = sorted((a, b) for a, b, _ in cases)
    # A case citation is never split: the sentences it runs over (a stop of an abbreviation
    # the splitter took for an end, "In re Halcyne Bio, Inc. Sec. Litig., 719 F. Supp. 3d
    # 505, 511 (S.D.N.Y. 2024), holding ...") are one.
    bounds = _joined(bounds, case_spans)
    starts = [s for s, _ in bounds]

    def sentence(start: int, end: int) -> tuple[int, int]:
        if not bounds:
            return (start, end)
        i = max(bisect.bisect_right(starts, start) - 1, 0)
        a, b = bounds[i]
        # A claim that runs past its sentence's end (a cite split over a line) takes the rest.
        while b < end and i + 1 < len(bounds):
            i += 1
            b = bounds[i][1]
        return (min(a, start), max(b, end))

    def with_previous(start: int, end: int, cites: Sequence[tuple[int, int]]) -> tuple[int, int]:
        """A citation sentence ("Id. at 4.", "See X, 1 F.3d 2.") supports the sentence before."""
        if citations_only(start, end, cites):
            i = bisect.bisect_right(starts, start) - 2
            if i >= 0:
                return (bounds[i][0], end)
        return (start, end)

    # Whether a sentence is citations only, by sentence, for the case citations: a hostile
    # draft of one "sentence" holding thousands of them asks it of each (once, not each time).
    of_cases: dict[tuple[int, int], bool] = {}

    def citations_only(start: int, end: int, cites: Sequence[tuple[int, int]]) -> bool:
        if cites is not case_spans:
            return _citations_only(plain, start, end, cites)
        if (start, end) not in of_cases:
            of_cases[(start, end)] = _citations_only(plain, start, end, cites)
        return of_cases[(start, end)]

    claims: list[Claim] = []
    short_quoted: list[tuple[Quote, tuple[int, int]]] = []
    quote_spans: list[tuple[int, int]] = []
    record_sentences = {sentence(c.start, c.end) for c in record}
    for q in quotes:
        if is_defined_term(plain, q):
            continue
        words = len(WORD.findall(q.quote))
        if words == 0:
            continue
        span = block_sentence(plain, bounds, starts, q) if q.block else sentence(q.start, q.end)
        if words < 4 and span not in record_sentences:
            short_quoted.append((q, span))  # a quoted term; a quotation only if a cite follows
            continue
        quote_spans.append((q.start, q.end))
        claims.append(Claim("quote", q.start, q.end, text[q.start : q.end], span, quote=q.quote))

    for c in record:
        span = sentence(c.start, c.end)
        lead = _ID_AT.search(plain, max(span[0], c.start - _ID_AT_CHARS), c.start)
        if lead is not None:  # "Id. at QZR0000041." vouches for the sentence before
            span = with_previous(*span, [(lead.start(), c.end)])
        claims.append(
            Claim(
                c.kind,
                c.start,
                c.end,
                text[c.start : c.end],
                span,
                c.bates,
                c.pins,
                exhibit=c.exhibit,
                title=c.title,
                cited_as=c.cited_as,
            )
        )

    case_sentences = Spans()
    for start, end, cite in cases:
        span = with_previous(*sentence(start, end), case_spans)
        if isinstance(cite, StatuteCite):
            if _OATH.search(text, sentence(start, end)[0], start):
                continue  # "I declare under penalty of perjury under 28 U.S.C. § 1746": the
                # declaration's own oath, which the law allows it to take, states no fact
            claims.append(Claim("statute", start, end, text[start:end], span, statute=cite))
        else:
            claims.append(Claim("case_citation", start, end, text[start:end], span, citation=cite))
        if not case_sentences.overlaps(*span):
            case_sentences.add(*span)
    # An Id. or Ibid. of a record cite is a record cite; standing as a citation sentence of
    # its own ("(Id. at p. 41.)"), it vouches for the sentence before, as a case's Id. does.
    # A page pin after a Bates cite ("Id. at 2") is a case's Id. carrying that record: the
    # checks read it as a page of the Bates page's document where the packet has that page.
    for c in record_ids:
        citation = None
        id_span = with_previous(*sentence(c.start, c.end), [(c.start, c.end)])
        if c.kind == "case_citation":
            pages = re.search(r"\d+(?:[-\u2013]\d+)?", c.pins[0]) if c.pins else None
            pin = pages.group() if pages else None
            citation = CaseCite("", "", "", pin, None, None, None, True, False)
            if not case_sentences.overlaps(*id_span):
                case_sentences.add(*id_span)
        claims.append(
            Claim(
                c.kind,
                c.start,
                c.end,
                text[c.start : c.end],
                id_span,
                c.bates,
                c.pins,
                citation=citation,
                exhibit=c.exhibit,
                title=c.title,
                cited_as=c.cited_as,
            )
        )
    # A short quoted term is a quotation of a source where an authority is cited for it.
    for q, span in short_quoted:
        if case_sentences.covers(q.start, q.end):
            quote_spans.append((q.start, q.end))
            claims.append(
                Claim("quote", q.start, q.end, text[q.start : q.end], span, quote=q.quote)
            )

    taken = Spans(quote_spans + [(c.start, c.end) for c in [*record, *record_ids]] + case_spans)
    claims.extend(value_claims(text, plain, taken, sentence))
    claims.sort(key=lambda c: (c.start, c.end))
    return shared_sentences(claims)


# What may stand between the citations of a sentence of citations: stops, commas, brackets and
# spaces, and once in the sentence a signal ("Id. at 4.", "See X, 1 F.3d 2; Y, 3 F.4th 5.").
_BETWEEN_CITES = re.compile(r"[\s.,;:()]*")
_SIGNAL_BETWEEN = re.compile(
    r"[\s.,;:()]*(?:see|see also|cf\.|accord|but see)[\s.,;:()]*", re.IGNORECASE
)


def _citations_only(text: str, start: int, end: int, cites: Sequence[tuple[int, int]]) -> bool:
    """Whether `text[start:end]` is nothing but the `cites` that start inside it (in order),
    with what may stand between them. Reads the gaps in place, stopping at the first that holds
    a word: a sentence's length is no cost."""
    pos, signalled = start, False
    for k in range(bisect.bisect_left(cites, (start, -1)), len(cites) + 1):
        a, b = cites[k] if k < len(cites) and cites[k][0] < end else (end, end)
        if a > pos and not _BETWEEN_CITES.fullmatch(text, pos, a):
            if signalled or not _SIGNAL_BETWEEN.fullmatch(text, pos, a):
                return False
            signalled = True
        pos = max(pos, min(b, end))
        if pos >= end:
            return True
    return True


def _joined(
    bounds: list[tuple[int, int]], spans: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """`bounds` (sentences, in order) with those that one of `spans` runs across made one."""
    if not spans or len(bounds) < 2:
        return bounds
    ends = [b for _, b in bounds]
    joined = list(bounds)
    for start, end in spans:
        first = bisect.bisect_right(ends, start)  # the sentence holding `start`
        last = bisect.bisect_left(ends, end)  # ... and the one holding `end`
        if first < last < len(joined) and joined[first][0] <= start:
            for k in range(first, last + 1):
                joined[k] = (joined[first][0], joined[last][1])
    return sorted(set(joined))
