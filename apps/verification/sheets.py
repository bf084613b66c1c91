"""Condensed transcript sheets (pure, a leaf module): a page that prints several transcript
pages ("min-U-script": four to a sheet, two by two, each under its own "Page 45" header, its
lines numbered 1 to 25) is read as those transcript pages, each with its numbered lines.

A page is a sheet when at least two of its lines are page headers ("Page 45", "Page 46" alone
on a line; a footer's "Page 2 of 9" is none) naming different pages. A text layer gives a
sheet's mini-pages one after another (a header, then its lines) or row by row across the
sheet (the headers of a row of mini-pages, then line 1 of each, line 2 of each, ...), and both
are read by one rule: a run of headers (one after another) opens that many mini-pages, and
each numbered line goes to the first open one, in header order, whose last line number is
below its own (a page's lines count up); the next header after other lines opens the next
run. Headers printed under their mini-pages (after their lines) are read the same way from the
sheet's end, where that leaves fewer lines under no header. Numbered lines that no open
mini-page takes are kept as a mini-page with no number (its header is missing); a header
whose mini-page has fewer than MIN_LINES numbered lines has no lines. Where whose lines are
whose cannot be told from the text (lines under no header among a run's; a run of several
headers, one with too few lines), none of the run's lines are read: a person looks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

LAST_LINE = 25
MIN_LINES = 5  # a page with fewer numbered lines has none (as a full-size transcript page)
_HEADER = re.compile(r"[ \t]*page[ \t]+(\d{1,5})[ \t]*", re.IGNORECASE)
_NUMBERED = re.compile(r"[ \t]*(?P<n>\d{1,2})(?:[ \t]+(?P<text>.*?))?[ \t]*")
# Cheap test before the line-by-line read: two header lines at least (anchored on the line
# break, a tenth of the time of a multiline "^" on a page that is no sheet).
_HEADERS = re.compile(r"\n[ \t]*[Pp][Aa][Gg][Ee][ \t]+(\d{1,5})[ \t]*(?=\r?\n|$)")


@dataclass(frozen=True)
class SheetLine:
    number: int  # 1 to LAST_LINE
    start: int  # where the line (its number) starts in the page's text
    span: tuple[int, int]  # its text after the number (empty at the line's end when none)


@dataclass(frozen=True)
class _Header:
    number: int
    span: tuple[int, int]


_TEXT = None  # a line with words that is neither a header nor a numbered line
_Event = _Header | SheetLine | None


@dataclass
class MiniPage:
    number: int | None  # its transcript page number; None: numbered lines under no header
    header: tuple[int, int] | None  # the header's span in the page's text
    lines: list[SheetLine] = field(default_factory=list)

    @property
    def numbered(self) -> bool:
        """Whether the mini-page has numbered lines (MIN_LINES of them at least)."""
        return len(self.lines) >= MIN_LINES


def is_sheet(text: str) -> bool:
    """Whether the page prints two transcript pages or more (two headers of different pages)."""
    if "age" not in text and "AGE" not in text:
        return False
    return len(set(_HEADERS.findall("\n" + text))) >= 2


def sheet_pages(text: str) -> list[MiniPage] | None:
    """The transcript pages a condensed sheet prints, in reading order (each header's page,
    then any numbered lines under no header); None for a page that is no sheet."""
    if not is_sheet(text):
        return None
    events: list[_Event] = []
    position = 0
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        header = _HEADER.fullmatch(line)
        numbered = _NUMBERED.fullmatch(line) if header is None else None
        if header is not None:
            events.append(_Header(int(header.group(1)), (position, position + len(line))))
        elif numbered is not None and 1 <= int(numbered.group("n")) <= LAST_LINE:
            if numbered.group("text"):
                span = (position + numbered.start("text"), position + numbered.end("text"))
            else:
                span = (position + numbered.end(), position + numbered.end())
            events.append(SheetLine(int(numbered.group("n")), position, span))
        elif line.strip():
            events.append(_TEXT)
        position += len(raw) + 1
    if not any(isinstance(event, SheetLine) for event in events):
        return [MiniPage(e.number, e.span) for e in events if isinstance(e, _Header)]
    # Headers above their mini-pages (as printed) or under them (read from the sheet's end,
    # lines counting down): the reading that leaves fewer lines under no header.
    down, up = _read(events, upward=False), _read(events[::-1], upward=True)
    if _unplaced(up) < _unplaced(down):
        up.reverse()
        for page in up:
            page.lines.reverse()
        return _kept(up)
    return _kept(down)


def _read(events: list[_Event], *, upward: bool) -> list[MiniPage]:
    labelled: list[MiniPage] = []
    unlabelled: list[MiniPage] = []
    runs: list[list[MiniPage]] = []
    after_header = False  # the last line with words was a header: a header joins its run
    for item in events:
        if isinstance(item, _Header):
            page = MiniPage(item.number, item.span)
            if after_header:
                runs[-1].append(page)
            else:
                runs.append([page])
            labelled.append(page)
            after_header = True
            continue
        after_header = False
        if item is None:
            continue
        run = runs[-1] if runs else []
        home = _first_fit(run, item.number, upward) or _first_fit(unlabelled, item.number, upward)
        if home is None:
            home = MiniPage(None, None)
            unlabelled.append(home)
        home.lines.append(item)
    # Whose lines are whose cannot be told, so none of a run's is read, where a run of several
    # headers has one with too few lines (a mini-page printed without line numbers beside one
    # with them), or lines under no header stand among the run's (a header missing from a row
    # of mini-pages printed row by row).
    stray = sorted(line.start for page in unlabelled for line in page.lines)
    for run in runs:
        starts = [line.start for page in run for line in page.lines]
        among = bool(starts) and any(min(starts) < at < max(starts) for at in stray)
        if among or (len(run) > 1 and any(not page.numbered for page in run)):
            lines = sorted((line for page in run for line in page.lines), key=lambda x: x.start)
            for page in run:
                page.lines = []
            if lines:
                unlabelled.append(MiniPage(None, None, lines[::-1] if upward else lines))
    return labelled + unlabelled


def _unplaced(pages: list[MiniPage]) -> int:
    return sum(len(page.lines) for page in pages if page.number is None)


def _kept(pages: list[MiniPage]) -> list[MiniPage]:
    for page in pages:
        if not page.numbered:
            page.lines = []
    return [page for page in pages if page.number is not None or page.numbered]


def _first_fit(pages: list[MiniPage], number: int, upward: bool) -> MiniPage | None:
    for page in pages:
        if not page.lines:
            return page
        last = page.lines[-1].number
        if (number < last) if upward else (number > last):
            return page
    return None


__all__ = ["LAST_LINE", "MIN_LINES", "MiniPage", "SheetLine", "is_sheet", "sheet_pages"]
