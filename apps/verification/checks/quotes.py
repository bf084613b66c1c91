"""Quotations: verbatim in the packet, or the closest passage named (step 4 of the package
docstring)."""

from apps.verification import normalise as nz
from apps.verification.checks.context import Context
from apps.verification.checks.support import MISQUOTE_RATIO, SHORT_QUOTE
from apps.verification.claims import Claim
from apps.verification.findings import Finding
from apps.verification.index import (
    PacketIndex,
    QuoteHit,
)
from apps.verification.quoting import quote_segments
from apps.verification.spans import excerpt_of

SHORT_VARIANT_PAGES = 10  # cited pages read word by word for a short term's altered form

# -- quotations ---------------------------------------------------------------------


def quote(claim: Claim, index: PacketIndex, ctx: Context) -> Finding:
    segments = quote_segments(claim.quote if claim.quote is not None else claim.text)
    words = [w for s in segments for w in s]
    if not words:
        return Finding(claim, "unsupported", "quote_verbatim", "the quotation has no words")
    cite = ctx.closing_cite(claim)
    cited = ctx.cite_pages(cite) if cite is not None and cite.kind == "record_cite" else []
    hit = (index.find_quote(segments, within=cited) if cited else None) or (
        index.find_quote(segments)
    )
    if hit is not None:
        how = "verbatim" if hit.exact else "verbatim up to OCR slips"
        label = index.label(index.page_index(hit.page))
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
        variant = _short_variant(ctx, words, cited)
        if variant is not None:
            passage = variant.page.text[variant.span[0] : variant.span[1]]
            label = index.label(index.page_index(variant.page))
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
    closest = index.closest_passage(words, within=cited) if cited else None
    if closest is None or closest.ratio < MISQUOTE_RATIO:
        closest = index.closest_passage(words)
    if closest is not None and closest.ratio >= MISQUOTE_RATIO:
        passage = closest.page.text[closest.span[0] : closest.span[1]]
        label = index.label(index.page_index(closest.page))
        return Finding(
            claim,
            "unsupported",
            "quote_verbatim",
            f"misquote: the closest passage, on {label}, reads {' '.join(passage.split())!r}",
            page=closest.page,
            excerpt=excerpt_of(closest.page.text, *closest.span),
            match=closest.span,
        )
    return Finding(claim, "unsupported", "quote_verbatim", "no such passage anywhere in the packet")


def _short_variant(ctx: Context, words: list[str], cited: list[int]) -> QuoteHit | None:
    """A short quoted term (two or three words) that a cited page prints with one word
    changed into a form of itself ("mortar covered" for "mortar uncovered"), or with one
    word added or dropped around two that stand: a misquote. A term that changes a word
    for an unrelated one, or shares less, may be the drafter's own: left for review."""
    n = len(words)
    if n < 2 or len(cited) > SHORT_VARIANT_PAGES:
        return None
    for page in cited:
        detail = ctx.index.detail(page)
        body = detail.body_words
        for start in range(len(body)):
            for size in (n, n - 1, n + 1):
                window = body[start : start + size]
                if len(window) != size or not _one_word_off(words, window):
                    continue
                first, last = detail.body[start], detail.body[start + size - 1]
                span = (detail.spans[first][0], detail.spans[last][1])
                return QuoteHit(ctx.index.pages[page], span, False, (n - 1) / n)
    return None


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
