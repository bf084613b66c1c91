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
   `support.terms_elsewhere`). Otherwise supported.
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
   a packet opinion by name, volume and reporter (`cases.bind_short`).
6. Not a record cite: unsupported, with the reason taken from the packet (printed on a page
   of it: a number of that document or another production; a file name that is no packet
   document; no number of this production); a reference to the system's own work says so. A
   packet document named by its file name (with a page pin) is checked as a record cite.
7. A supported finding whose words are OCR text below the review confidence: needs review.

The checks are modules of functions over (claim, index, context), each importing only those
before it in this order (`tests/verification/test_checks_layout.py`):

- `context`: `Context`, the draft (text, claims, its sentences and segments, the pages a cite
  names) and what the checks read of it more than once, kept for the draft's other claims;
- `weighing`: a sentence's key terms weighed by rarity, the pages holding them, a page's
  sentences;
- `support`: whether cited pages carry a segment better than any other page (step 2's
  judgement, also of named documents and pins);
- `record` (step 2), `references` (step 6), `values` (step 3), `quotes` (step 4), `cases`
  (step 5): each kind's check, `record_cite(claim, index, ctx)` and so on;
- this module: `verify_text` and `check`, which hands each claim to its kind's check.

`Finding` is in the leaf module `apps.verification.findings`.
"""

import gc
from collections.abc import Sequence
from dataclasses import replace

from apps.verification import authorities, paragraphs
from apps.verification.checks.cases import case_citation
from apps.verification.checks.context import Companion, Context
from apps.verification.checks.quotes import quote
from apps.verification.checks.record import filed_locators, id_page, record_cite
from apps.verification.checks.references import not_a_record_cite
from apps.verification.checks.values import value
from apps.verification.claims import Claim
from apps.verification.findings import Finding
from apps.verification.index import (
    OCR,
    PacketIndex,
)

VERIFIER_VERSION = "1"


def verify_text(
    text: str,
    claims: Sequence[Claim],
    index: PacketIndex,
    *,
    ocr_review_confidence: float | None = None,
    only: Sequence[Claim] | None = None,
    companions: Sequence[Companion] = (),
) -> list[Finding]:
    """One finding per claim (see the module docstring). Reads nothing but its arguments.

    `ocr_review_confidence`: settings.LEXWEB_OCR_REVIEW_CONFIDENCE (0-100), passed in by the
    caller. `only`: check just these claims, each in the context of all of `claims`.
    `companions`: the case's other drafts on the same packet, whose lists of exhibits an
    "Ex. 4" the draft does not list itself may mean (`context.Companion`)."""
    # The index holds millions of small objects; a collection pass over them during the
    # checks costs more than the checks (and no cycle is made here).
    enabled = gc.isenabled()
    gc.disable()
    try:
        context = Context(text, list(claims), index, companions)
        return [
            _review(check(claim, context), ocr_review_confidence)
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


def check(claim: Claim, ctx: Context) -> Finding:
    """The finding of one claim, by its kind's check."""
    if claim.kind == "record_cite":
        from apps.verification import transcripts  # page:line pins (issue 28 req 7)

        finding = transcripts.lined(paragraphs.pinned(record_cite(claim, ctx.index, ctx), ctx), ctx)
        finding = filed_locators(transcripts.stamped(finding, ctx), ctx)
        return _as_id(finding) if claim.cited_as and not claim.designated else finding
    if claim.kind == "not_a_record_cite":
        return not_a_record_cite(claim, ctx.index, ctx)
    if claim.kind == "case_citation":
        if claim.bates and claim.cited_as:  # "Id. at 2" after a Bates cite
            read = id_page(ctx, claim)
            if read is not None:
                return read
            found = authorities.court_fits(case_citation(claim, ctx.index, ctx))
            if found.status == "supported":
                return found
            numbers = ", ".join(str(n) for n in paragraphs.page_numbers(claim.pins)[:3])
            return replace(
                found,
                message=f"{found.message}; nor is page {numbers} a page of the document "
                f"of {claim.cited_as}, the record cite before it",
            )
        return authorities.court_fits(case_citation(claim, ctx.index, ctx))
    if claim.kind == "statute":
        return authorities.statute(claim, ctx.index)
    if claim.kind == "quote":
        return quote(claim, ctx.index, ctx)
    if claim.kind in ("date", "amount"):
        return value(claim, ctx.index, ctx)
    return Finding(claim, "needs_review", "unknown", f"no check for a {claim.kind} claim")


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
