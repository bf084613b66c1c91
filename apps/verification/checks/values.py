"""Dates and amounts: on the pages their cite names, else anywhere in the packet (step 3 of
the package docstring)."""

import bisect
import re
from dataclasses import replace
from datetime import date

from apps.verification.amounts import describe, distance, is_in_words
from apps.verification.checks.context import Context
from apps.verification.checks.record import record_cite
from apps.verification.checks.support import group_pages, same
from apps.verification.claims import Claim
from apps.verification.dates import ambiguous, is_month_day, reading, same_day
from apps.verification.findings import Finding
from apps.verification.index import (
    PacketIndex,
    PageRecord,
    Value,
    pages_label,
)
from apps.verification.spans import excerpt_of

# -- dates and amounts --------------------------------------------------------------


def value(claim: Claim, index: PacketIndex, ctx: Context) -> Finding:
    what = "date" if claim.kind == "date" else "amount"
    if claim.value is None:
        return Finding(claim, "needs_review", f"{what}_unreadable", f"the {what} could not be read")
    cite = ctx.closing_cite(claim)
    pages: list[int] = []
    if cite is not None and cite.kind == "record_cite":
        pages = group_pages(ctx, cite, ctx.cite_pages(cite))
    cited = _sentence_record_pages(ctx, claim)
    if not pages:
        pages = cited
    bounds = _approximate(ctx, claim) if what == "amount" else None
    if bounds is not None:
        within = _amount_within(ctx, claim, bounds, pages)
        if within is not None:
            return within
    if not pages:
        return _value_anywhere(ctx, claim, claim.value, what)
    finding = _value_on_pages(ctx, claim, claim.value, what, pages)
    if finding.status == "supported":
        return _time_of_day(ctx, claim, finding) if what == "date" else finding
    # Every cite of the sentence counts: another one's page may carry the value.
    rest = [p for p in cited if p not in pages]
    if rest:
        other = _value_on_pages(ctx, claim, claim.value, what, rest)
        if other.status == "supported":
            return replace(other, message=f"{other.message} (another cite of the sentence)")
    if is_month_day(claim.value) and cite is not None:
        moved = _under_wrong_cite(ctx, claim, cite)
        if moved is not None:
            return moved
    return _named_elsewhere(ctx, finding, claim, what, [*pages, *rest])


# A time of day written right after a date ("11/9/22 at 01:15", "March 3, 2024, 4:05 p.m."),
# exact (not "at about 2:00"): the date's page must print it too.
_TIME_AFTER = re.compile(
    r"[ \t]*(?:,[ \t]*)?(?:at[ \t]+)?(?P<h>\d{1,2}):(?P<m>\d{2})(?![\d:])"
    r"(?:[ \t]*(?P<half>[AaPp])\.?[ \t]?[Mm]\.?)?"
)
# A time printed on a page ("01:52", "1:55 AM", "16:40:05").
_PAGE_TIME = re.compile(
    r"(?<![\w:/.])(?P<h>\d{1,2}):(?P<m>\d{2})(?::\d{2})?(?![\w:])"
    r"(?:[ \t]*(?P<half>[AaPp])\.?[ \t]?[Mm]\.?)?"
)
HALF_DAY = 12 * 60


def _minutes(match: re.Match[str]) -> tuple[int, bool] | None:
    """Minutes after midnight, and whether a.m. or p.m. says which half of the day."""
    hours, minutes = int(match.group("h")), int(match.group("m"))
    if hours > 23 or minutes > 59:
        return None
    half = match.group("half")
    if half is not None:
        if hours > 12:
            return None
        hours = hours % 12 + (12 if half in "Pp" else 0)
    return hours * 60 + minutes, half is not None or hours > 12 or hours == 0


def _same_time(a: tuple[int, bool], b: tuple[int, bool]) -> bool:
    if a[1] and b[1]:
        return a[0] == b[0]
    return a[0] % HALF_DAY == b[0] % HALF_DAY  # "1:15" is 01:15 or 13:15


def _time_of_day(ctx: Context, claim: Claim, finding: Finding) -> Finding:
    """A date carried by its cited page, written with a time of day: where that page prints
    times but not this one, the time is the sentence's error ("the lactate was called at
    01:15" against "01:55"), and the date's finding says so."""
    written = _TIME_AFTER.match(ctx.text, claim.end)
    page = finding.page
    if written is None or page is None or (wanted := _minutes(written)) is None:
        return finding
    printed = [(m, at) for m in _PAGE_TIME.finditer(page.text) if (at := _minutes(m)) is not None]
    if not printed or any(_same_time(wanted, at) for _, at in printed):
        return finding
    nearest = min(printed, key=lambda item: abs(item[1][0] - wanted[0]))[0]
    shown = ", ".join(dict.fromkeys(m.group() for m, _ in printed[:4]))
    return replace(
        finding,
        status="contradicted",
        message=f"{finding.message}, but not the time {written.group().strip(' ,')!r}: it "
        f"prints {shown}",
        excerpt=excerpt_of(page.text, nearest.start(), nearest.end()),
        match=(nearest.start(), nearest.end()),
    )


def _named_elsewhere(
    ctx: Context, finding: Finding, claim: Claim, what: str, cited: list[int]
) -> Finding:
    """A value not on its cited pages: the finding names the pages of the packet that do
    carry it, if any (the value is there, under another cite)."""
    held = [p for p in ctx.index.value_pages(what, claim.value or "") if p not in cited]
    if claim.years:
        held = [p for p in held if any(same(claim, v.value) for v in ctx.page_values(what, p))]
    if not held:
        return finding
    shown = ", ".join(ctx.index.label(p) for p in held[:3]) + (
        f" and {len(held) - 3} more" if len(held) > 3 else ""
    )
    return replace(finding, message=f"{finding.message}; it stands on {shown}")


def _under_wrong_cite(ctx: Context, claim: Claim, cite: Claim) -> Finding | None:
    """A year-less date ("The November 8 outage (X)") not on its cite's page, where the cite
    is itself flagged (unsupported: another page carries the sentence): the cite says
    nothing of where the date is, so the date is read as one without a cite (some page of
    the packet must carry it), and the one error is flagged once, on the cite. None when
    the cite is not flagged or no page carries the date either."""
    verdict = record_cite(cite, ctx.index, ctx) if cite.kind == "record_cite" else None
    if verdict is None or verdict.status != "unsupported":
        return None
    found = _value_anywhere(ctx, claim, claim.value or "", "date")
    if found.status != "supported":
        return None
    return replace(
        found,
        message=f"{found.message} (the sentence's cite {cite.text} is flagged: {verdict.message})",
    )


def _sentence_record_pages(ctx: Context, claim: Claim) -> list[int]:
    pages: list[int] = []
    for cite in ctx.cites_by_sentence.get(claim.sentence, []):
        if cite.kind == "record_cite":
            pages.extend(p for p in ctx.cite_pages(cite) if p not in pages)
    return pages


def _value_on_pages(ctx: Context, claim: Claim, value: str, what: str, pages: list[int]) -> Finding:
    others: list[tuple[int, Value]] = []
    for page in pages:
        for found in ctx.page_values(what, page):
            if same(claim, found.value):
                record = ctx.index.pages[page]
                return Finding(
                    claim,
                    "supported",
                    f"{what}_on_cited_page",
                    f"{ctx.index.label(page)} reads {record.text[found.start : found.end]!r}"
                    + _read_as(
                        what,
                        claim.text,
                        value,
                        shown_text(record, found),
                        found.value,
                        _page_order(ctx, what, page, shown_text(record, found)),
                    ),
                    page=record,
                    excerpt=excerpt_of(record.text, found.start, found.end),
                    match=(found.start, found.end),
                )
            others.append((page, found))
    label = pages_label(ctx.index, pages)
    if others:
        page, nearest = min(others, key=lambda pv: _distance(what, value, pv[1].value))
        if is_month_day(value) and same_day(value, nearest.value):
            # The month and day are there, in another year than the sentence gives.
            years = "/".join(map(str, claim.years))
            shown = ctx.index.pages[page].text[nearest.start : nearest.end]
            return Finding(
                claim,
                "contradicted",
                f"{what}_on_cited_page",
                f"the cited page {ctx.index.label(page)} gives {shown!r}, not "
                f"{claim.text!r} of {years}",
                page=ctx.index.pages[page],
                excerpt=excerpt_of(ctx.index.pages[page].text, nearest.start, nearest.end),
                match=(nearest.start, nearest.end),
                found_value=nearest.value,
            )
        record = ctx.index.pages[page]
        shown = record.text[nearest.start : nearest.end]
        return Finding(
            claim,
            "contradicted",
            f"{what}_on_cited_page",
            f"the cited page {ctx.index.label(page)} gives {shown!r}, not {claim.text!r}"
            + _read_as(
                what, claim.text, value, shown, nearest.value, _page_order(ctx, what, page, shown)
            ),
            page=record,
            excerpt=excerpt_of(record.text, nearest.start, nearest.end),
            match=(nearest.start, nearest.end),
            found_value=nearest.value,
        )
    return Finding(
        claim,
        "unsupported",
        f"{what}_on_cited_page",
        f"{claim.text!r} is not on the cited page {label}" + _read_as(what, claim.text, value, ""),
    )


def _value_anywhere(ctx: Context, claim: Claim, value: str, what: str) -> Finding:
    held = ctx.index.value_pages(what, value)
    if claim.years:  # a year-less date of the sentence's year: a page of that year
        held = [p for p in held if any(same(claim, v.value) for v in ctx.page_values(what, p))]
    if not held:
        years = f" in {'/'.join(map(str, claim.years))}" if claim.years else ""
        return Finding(
            claim,
            "unsupported",
            f"{what}_in_packet",
            f"{claim.text!r} appears nowhere in the packet{years}",
        )
    page = held[0]
    record = ctx.index.pages[page]
    found = next(v for v in ctx.page_values(what, page) if same(claim, v.value))
    return Finding(
        claim,
        "supported",
        f"{what}_in_packet",
        f"{ctx.index.label(page)} reads {record.text[found.start : found.end]!r}",
        page=record,
        excerpt=excerpt_of(record.text, found.start, found.end),
        match=(found.start, found.end),
    )


# A round amount the draft gives as a bound or an approximation, by the words before it ("more
# than three million dollars", "nearly $3 million", "approximately $40,000"): the amounts it
# admits, as shares of the amount written (low, high; the high end included).
_APPROXIMATE = re.compile(
    r"\b(?P<q>more than|over|in excess of|upwards of|exceeding|nearly|almost|just under"
    r"|close to|about|approximately|approx\.|roughly|around|some)[ \t]+$",
    re.IGNORECASE,
)
_BOUNDS = {
    "more than": (1.0, 1.5),
    "over": (1.0, 1.5),
    "in excess of": (1.0, 1.5),
    "upwards of": (1.0, 1.5),
    "exceeding": (1.0, 1.5),
    "nearly": (0.85, 1.0),
    "almost": (0.85, 1.0),
    "just under": (0.85, 1.0),
    "close to": (0.9, 1.1),
}
_AROUND = (0.9, 1.1)  # about, approximately, roughly, around, some


def _approximate(ctx: Context, claim: Claim) -> tuple[int, int, str] | None:
    """The cents an amount written as a bound or an approximation admits, and the words that
    say so ("more than three million dollars"), or None for an amount written as exact."""
    match = _APPROXIMATE.search(ctx.text, max(0, claim.start - 24), claim.start)
    if match is None or claim.value is None or not claim.value.isdigit():
        return None
    if len(claim.value.rstrip("0")) != 1:
        # "more than $12,492,128", "approximately $998.3 million": a figure as precise as
        # that is the record's own, which a page must print; only a round one ("three million
        # dollars", "$40,000") is the drafter's approximation.
        return None
    low, high = _BOUNDS.get(match.group("q").lower(), _AROUND)
    written = int(claim.value)
    top = round(written * high)
    if low == 1.0:
        # A bound rounds the figure down to its one digit: "more than $80,000" is under
        # $90,000 ("more than $100,000" would be written for $120,000).
        unit = 10 ** (len(claim.value) - len(claim.value.rstrip("0")))
        top = min(top, written + unit - 1)
    return round(written * low), top, ctx.text[match.start() : claim.end]


def _amount_within(
    ctx: Context, claim: Claim, bounds: tuple[int, int, str], pages: list[int]
) -> Finding | None:
    """The first amount the cited pages (with none, the packet) print within `bounds`,
    other than the amount written (read as exact by the checks after this one)."""
    low, high, words = bounds
    written = claim.value

    def fits(value: str) -> bool:
        return value.isdigit() and value != written and low <= int(value) <= high

    if pages:
        holders = pages
    else:
        # The packet's amounts, in cents, sorted once per index: a bisect per claim, not a
        # pass over every amount (a draft may give thousands of round figures).
        ordered = ctx.index.derived("amounts in order", lambda: _amounts_in_order(ctx.index))
        at = bisect.bisect_left(ordered, (low, ""))
        holding: set[int] = set()
        while at < len(ordered) and ordered[at][0] <= high:
            if ordered[at][1] != written:
                holding.update(ctx.index.amount_pages[ordered[at][1]])
            at += 1
        holders = sorted(holding)
    for page in holders:
        for found in ctx.page_values("amount", page):
            if fits(found.value):
                record = ctx.index.pages[page]
                shown = record.text[found.start : found.end]
                return Finding(
                    claim,
                    "supported",
                    "amount_on_cited_page" if pages else "amount_in_packet",
                    f"{ctx.index.label(page)} reads {shown!r}, which {words!r} admits",
                    page=record,
                    excerpt=excerpt_of(record.text, found.start, found.end),
                    match=(found.start, found.end),
                )
    return None


def _amounts_in_order(index: PacketIndex) -> list[tuple[int, str]]:
    return sorted((int(v), v) for v in index.amount_pages if v.isdigit())


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


def _page_order(ctx: Context, what: str, page: int, shown: str) -> str | None:
    """The order the page's document writes its dates in, where the date shown needs it (a
    numeric date either of whose numbers could be the month)."""
    return ctx.index.date_order_of(page) if what == "date" and ambiguous(shown) else None


def _read_as(
    what: str,
    drafted: str,
    value: str,
    shown: str,
    found: str | None = None,
    order: str | None = None,
) -> str:
    """Which reading a finding took of a value written in words or an ambiguous numeric date,
    the draft's (`drafted`, read as `value`) and the page's (`shown`, read as `found`; none
    when there is none; its document's `order` where that document tells one): " (the page's
    words read as $4,100,000.00)", or ""."""
    notes = []
    sides = (("the draft's", drafted, value, None), ("the page's", shown, found, order))
    for whose, text, read, told in sides:
        if read is None:
            continue
        why = "as its document writes its dates" if told else None
        if what == "amount" and is_in_words(text):
            notes.append(f"{whose} words read as {describe(read)}")
        elif what == "date" and (how := reading(text, read, told, why=why)):
            notes.append(f"{whose} {text.strip()!r} {how}")
    return f" ({'; '.join(notes)})" if notes else ""
