"""Record cites: Bates numbers, ranges, exhibits and named documents resolved to packet pages
and judged (step 2 of the package docstring)."""

import bisect
import re
from dataclasses import replace

from apps.verification import exhibits, filed, paragraphs, patents
from apps.verification.checks.context import Context
from apps.verification.checks.support import judge_pages
from apps.verification.claims import Claim
from apps.verification.findings import Finding
from apps.verification.index import (
    PacketIndex,
    pages_label,
    split_label,
)

# -- record cites -------------------------------------------------------------------


def record_cite(claim: Claim, index: PacketIndex, ctx: Context) -> Finding:
    if not claim.bates and (claim.exhibit is not None or claim.title is not None):
        return named_cite(ctx, claim)
    if not claim.bates and any(pin.startswith(filed.PAGE_ID) for pin in claim.pins):
        return _page_id_cite(ctx, claim)
    if not claim.bates and (entry_cite := _filed_entry_cite(ctx, claim)) is not None:
        return entry_cite
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
        found, missing = index.bates_indexes(ref)
        gap = index.page_suffix_gap(ref) if missing and ref.paged else None
        if gap is not None:
            # The document is in the packet; the page its suffix names is not.
            return Finding(
                claim,
                "unsupported",
                "bates_in_packet",
                f"{claim.text} is not in the packet: {gap}",
            )
        if missing:
            return _out_of_range(ctx, claim, ref.prefix, missing, bool(found))
        pages.extend(p for p in found if p not in pages)
    if claim.exhibit is not None:
        return _in_exhibit(ctx, claim, pages, judge_pages(ctx, claim, pages))
    return judge_pages(ctx, claim, pages)


# -- a filed record's pages, by its filing headers (apps.verification.filed) ----------


def _page_id_cite(ctx: Context, claim: Claim) -> Finding:
    """ "ECF No. 9-4, PageID.271": the packet page whose filing header prints PageID.271 (of
    docket entry 9-4, where the header names its entry), judged as a Bates page is."""
    written = next(pin for pin in claim.pins if pin.startswith(filed.PAGE_ID))[len(filed.PAGE_ID) :]
    numbers = filed.page_id_numbers(written)
    printed = filed.page_ids(ctx.index)
    if numbers is None or not printed:
        reason = (
            "no page of the packet prints a filing header's PageID"
            if numbers is not None
            else f"PageID.{written} is no range of pages"
        )
        return Finding(claim, "needs_review", "record_cite_unstamped", f"{claim.text!r}: {reason}")
    missing = [n for n in numbers if n not in printed]
    if missing:
        return Finding(
            claim,
            "unsupported",
            "bates_in_packet",
            f"no page of the packet prints PageID.{missing[0]} (its filed pages: "
            f"{_page_id_runs(printed)})",
        )
    cited = filed.CITED_ENTRY.match(claim.text)
    other = [
        n for n in numbers if cited and printed[n][1] and printed[n][1] != cited.group("entry")
    ]
    if other and cited is not None:
        page, entry = printed[other[0]]
        return Finding(
            claim,
            "unsupported",
            "record_cite_page",
            f"PageID.{other[0]} is a page of ECF No. {entry}, not of ECF No. "
            f"{cited.group('entry')} ({ctx.index.label(page)})",
            page=ctx.index.pages[page],
        )
    return judge_pages(ctx, claim, list(dict.fromkeys(printed[n][0] for n in numbers)))


def _filed_entry_cite(ctx: Context, claim: Claim) -> Finding | None:
    """ "Doc. 45-3 at 7": the page of entry 45-3 whose filing header says "Page 7 of N" ("14
    TTABVUE 6": page 6 of the Board's entry 14), judged as a Bates page is. None where no page
    prints a filing header (a person checks the cite) or the cite is no entry pinned by its
    page."""
    cited = filed.cited_entry(claim.text)
    numbers = paragraphs.page_numbers(claim.pins)
    entries = filed.entry_pages(ctx.index) if cited is not None and numbers else {}
    if not entries or cited is None:
        return None
    entry = entries.get(cited)
    if entry is None:
        shown = ", ".join(sorted(entries)[:12])
        return Finding(
            claim,
            "unsupported",
            "bates_in_packet",
            f"no page of the packet is of docket entry {cited} (the packet's filed entries: "
            f"{shown})",
        )
    missing = [n for n in numbers if n not in entry]
    if missing:
        return Finding(
            claim,
            "unsupported",
            "bates_in_packet",
            f"the packet holds no page {missing[0]} of docket entry {cited} "
            f"(its pages: {', '.join(str(n) for n in sorted(entry))})",
            page=ctx.index.pages[entry[min(entry)]],
        )
    return judge_pages(ctx, claim, list(dict.fromkeys(entry[n] for n in numbers)))


_LOCATOR_AFTER = re.compile(r"[ \t]*,[ \t]*")
_BATES_AFTER = re.compile(r"[ \t]*\([ \t]*")


def filed_locators(finding: Finding, ctx: Context) -> Finding:
    """A page given beside another cite of the same source names the same page:
    - "Varga Decl. ¶ 20, 15 TTABVUE 6", "Okafor Decl. ¶ 10, Appx1021": the page (filed or
      stamped) says where those paragraphs are; one that holds none of them (its document
      holds them elsewhere) is the wrong page, whatever its words;
    - "'417 patent col. 7 ll. 20-22, Appx1016": the page must print that column;
    - "14 TTABVUE 12 (APP-0435)": the Bates page in parentheses is the filed page's own stamp;
      a Bates page that is not the filed page is the wrong page.
    The finding names the page the other cite names."""
    claim = finding.claim
    if finding.status == "unsupported":
        return finding
    before = _record_cite_before(ctx, claim)
    if before is None:
        return finding
    if claim.bates and _BATES_AFTER.fullmatch(ctx.text, before.end, claim.start):
        return _stamp_of_filed(finding, ctx, before)
    if not _LOCATOR_AFTER.fullmatch(ctx.text, before.end, claim.start):
        return finding
    if claim.bates:
        located = [p for ref in claim.bates for p in ctx.index.bates_indexes(ref)[0]]
    else:
        located = _filed_pages(ctx, claim)
    if not located:
        return finding
    if patents.pinned_columns(before.pins) is not None:
        return _located_columns(finding, ctx, before, located)
    return _located_paragraphs(finding, ctx, before, located)


def _located_columns(finding: Finding, ctx: Context, before: Claim, located: list[int]) -> Finding:
    index = ctx.index
    first, last = patents.pinned_columns(before.pins) or (0, 0)
    named = ctx.cite_pages(before)  # the patent's pages (the cite names it by its number)
    if not named:
        return finding
    printed = patents.columns(index, index.document_pages(index.pages[named[0]].document_id))
    wanted = [printed[n] for n in range(first, last + 1) if n in printed]
    if not wanted or set(wanted) & set(located):
        return finding
    return Finding(
        finding.claim,
        "unsupported",
        "record_cite_page",
        f"column {first} is on {index.label(wanted[0])}, not on {finding.claim.text}",
        page=index.pages[wanted[0]],
    )


def _record_cite_before(ctx: Context, claim: Claim) -> Claim | None:
    """The record cite just before `claim` in the draft (None when another claim stands
    between them that is no record cite, or there is none)."""
    at = bisect.bisect_left(ctx.starts, claim.start) - 1
    while at >= 0 and ctx.ordered[at].end > claim.start:
        at -= 1  # (a claim inside this one's span, or overlapping it)
    if at < 0 or ctx.ordered[at].kind != "record_cite":
        return None
    return ctx.ordered[at]


def _filed_pages(ctx: Context, cite: Claim) -> list[int]:
    if filed.cited_entry(cite.text) is None:
        return []
    numbers = paragraphs.page_numbers(cite.pins)
    return filed.cite_pages(ctx.index, cite.text, cite.pins, numbers)


def _stamp_of_filed(finding: Finding, ctx: Context, locator: Claim) -> Finding:
    index, claim = ctx.index, finding.claim
    filed_pages = _filed_pages(ctx, locator)
    stamped = [p for ref in claim.bates for p in index.bates_indexes(ref)[0]]
    if not filed_pages or not stamped or set(stamped) & set(filed_pages):
        return finding
    return Finding(
        claim,
        "unsupported",
        "record_cite_page",
        f"{claim.text} is not {locator.text}, which is {pages_label(index, filed_pages)}",
        page=index.pages[filed_pages[0]],
    )


def _located_paragraphs(finding: Finding, ctx: Context, before: Claim, cited: list[int]) -> Finding:
    index, claim = ctx.index, finding.claim
    numbers = paragraphs.paragraph_numbers(before.pins)
    if not numbers:
        return finding
    document = index.document_pages(index.pages[cited[0]].document_id)
    numbered = {p.number: p for p in reversed(paragraphs.paragraphs_on(index, document))}
    held = [numbered[n] for n in numbers if n in numbered]
    if len(held) < len(numbers) or any(
        i in cited and re.search(r"\w{3}", filed.without_headers(index.pages[i].text[a:b]))
        for p in held
        for i, a, b in p.parts
    ):
        return finding  # (a paragraph's run onto the page over only its filing header: none)
    page, start, end = held[0].parts[0]
    return Finding(
        claim,
        "unsupported",
        "record_cite_page",
        f"{before.text} is on {index.label(page)}, not on {claim.text} "
        f"({pages_label(index, cited)})",
        page=index.pages[page],
        match=(start, end),
    )


def _page_id_runs(printed: dict[int, tuple[int, str]]) -> str:
    """The PageIDs the packet prints, as runs ("PageID.500-505, 561-565")."""
    runs: list[list[int]] = []
    for n in sorted(printed):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    shown = ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in runs[:8])
    return f"PageID.{shown}" + (", ..." if len(runs) > 8 else "")


def id_page(ctx: Context, claim: Claim) -> Finding | None:
    """ "Id. at 2" / "(Id. at p. 2.)" after a Bates cite: page 2 of the document that Bates
    page is in, judged as a record cite's pages are. None where that document has no such
    page: then the pin is read as a case's Id. (drafters put a record cite between a case
    and its Id.; claims.record.record_id)."""
    numbers = paragraphs.page_numbers(claim.pins)
    cited: list[int] = []
    for ref in claim.bates:
        cited.extend(ctx.index.bates_indexes(ref)[0])
    documents = {ctx.index.pages[p].document_id for p in cited}
    if not numbers or len(documents) != 1:
        return None
    pages = [
        p
        for p in ctx.index.document_pages(documents.pop())
        if ctx.index.pages[p].page_number in numbers
    ]
    if len({ctx.index.pages[p].page_number for p in pages}) != len(numbers):
        return None
    finding = judge_pages(ctx, claim, pages)
    name = ctx.index.pages[pages[0]].filename
    said = (
        f"{claim.text} refers to the record cite before it, {claim.cited_as}: page "
        f"{'-'.join(str(n) for n in numbers[:: max(1, len(numbers) - 1)])} of {name}"
    )
    return replace(finding, message=f"{said}; {finding.message}")


def _in_exhibit(ctx: Context, claim: Claim, pages: list[int], finding: Finding) -> Finding:
    """ "Ex. 3 at ACME000022": the Bates page must be in exhibit 3. Where the packet's
    documents carry exhibit labels, a page of another document is unsupported (of one that
    carries another label, or when another document carries the one cited); where the
    exhibits are read from the packet's order, the finding only says where the page is."""
    if ctx.documents is None:
        ctx.documents = exhibits.catalogue(ctx.index)
    resolved = exhibits.exhibit(ctx.documents, claim.exhibit or "")
    document = resolved.document
    if document is not None and all(p in document.pages for p in pages):
        return finding
    where = ", ".join(dict.fromkeys(ctx.index.pages[p].filename for p in pages))
    said = resolved.how if document is not None else resolved.reason
    # No document is labelled so, and the cited page's own carries no label: the packet
    # prints only some of the draft's exhibit labels, and the Bates number says which page.
    held = {ctx.index.pages[p].document_id for p in pages}
    unlabelled = document is None and not any(
        d.label for d in ctx.documents.documents if d.id in held
    )
    if not ctx.documents.labelled or finding.status != "supported" or unlabelled:
        return replace(finding, message=f"{finding.message} ({said}; the cited page is in {where})")
    return replace(
        finding,
        status="unsupported",
        check="record_cite_exhibit",
        message=f"{pages_label(ctx.index, pages)} is in {where}, not in the exhibit cited: {said}",
    )


def named_cite(ctx: Context, claim: Claim) -> Finding:
    """A cite naming its document by exhibit or title ("Ex. 3 at 2", "Subcontract at 3"):
    resolved through the packet's documents (apps.verification.exhibits), then its pages
    judged as a Bates cite's are."""
    pages, failed, how = ctx.named_pages(claim)
    if failed is not None:
        return failed
    finding = judge_pages(ctx, claim, pages)
    return replace(finding, message=f"{how}; {finding.message}")


def _out_of_range(
    ctx: Context, claim: Claim, prefix: str, missing: list[int], partly: bool
) -> Finding:
    span = ctx.index.bates_span(prefix)
    if span is None:
        message = f"{prefix or 'this label'} is not a Bates prefix of this packet"
    else:
        what = "runs past the packet's pages" if partly else "is not in the packet"
        message = f"{claim.text} {what} ({span[0]}-{span[1]})"
        tail = _TOKEN_TAIL.match(ctx.text, claim.end)
        written = claim.bates[0].digits if claim.bates else 0
        parts = split_label(span[0])
        produced = len(parts[1]) if parts else 0
        if tail is not None or (written and written != produced and not partly):
            if tail is not None:
                claim = replace(claim, end=tail.end(), text=ctx.text[claim.start : tail.end()])
            message = (
                f"{claim.text} starts with this production's prefix but is not one of its "
                f"numbers ({span[0]}-{span[1]}, {produced} digits)"
            )
    if partly:
        # The range's first pages are in the packet: the finding marks its end, the part
        # of the cite that names no page of the packet.
        claim = _range_end(claim)
    return Finding(claim, "unsupported", "bates_in_packet", message)


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
