"""A patent cited by column and line ("'482 patent at 5:19-22", "'482 patent, col. 5, ll.
19-22", "'482 patent at 5:25-6:3"), as patent cases cite the specification (pure, no Django).

A patent's columns are numbered through its text, 1, 2, 3 ..., two to a printed page, each
number printed above its column (alone on a line, or at the ends of the running head: "5
US 11,206,482 B2 6"); the margin between them counts lines by fives (`index.margin_count`),
which are no column numbers. The pages of a column cite are the pages printing its columns;
the cite's sentence is then judged against them as a Bates cite's is. The lines are not
checked yet (a wrong line of the right column passes)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from apps.verification.index import PacketIndex, margin_count

# A column pin as the extractor writes it (claims.record): "col. 5", "cols. 5-6".
_COLUMN_PIN = re.compile(r"cols?\. (?P<c1>\d{1,3})(?:-(?P<c2>\d{1,3}))?")
# A column's number printed alone on its line, or at the edges of a running head.
_ALONE = re.compile(r"(?m)^[ \t]*(?P<n>\d{1,3})[ \t]*$")
_HEAD = re.compile(r"^[ \t]*(?P<a>\d{1,3})[ \t]{2,}\S.*\S[ \t]{2,}(?P<b>\d{1,3})[ \t]*$")
HEAD_LINES = 3  # lines at a page's top where a running head with column numbers stands


def pinned_columns(pins: Sequence[str]) -> tuple[int, int] | None:
    """The first and last columns a column pin names, or None for a pin of another kind."""
    for pin in pins:
        match = _COLUMN_PIN.fullmatch(pin)
        if match is not None:
            first = int(match.group("c1"))
            return first, max(first, int(match.group("c2") or first))
    return None


def columns(index: PacketIndex, pages: Sequence[int]) -> dict[int, int]:
    """Column number -> the page (index) printing it, for a document's `pages` in order: the
    numbers that continue the count from 1, read once per index and document."""
    return index.derived(("patent columns", tuple(pages)), lambda: _read_columns(index, pages))


def _read_columns(index: PacketIndex, pages: Sequence[int]) -> dict[int, int]:
    found: dict[int, int] = {}
    following = 1
    for page in pages:
        text = index.pages[page].text
        margin = {start for start, _ in margin_count(text)}
        numbers: list[tuple[int, int]] = [
            (m.start("n"), int(m.group("n")))
            for m in _ALONE.finditer(text)
            if m.start("n") not in margin
        ]
        for line in text.splitlines()[:HEAD_LINES]:
            head = _HEAD.match(line)
            if head is not None:
                numbers.extend([(-2, int(head.group("a"))), (-1, int(head.group("b")))])
        for _, number in sorted(numbers):
            if number == following:
                found[number] = page
                following += 1
    return found


def column_pages(
    index: PacketIndex, pages: Sequence[int], first: int, last: int
) -> tuple[list[int], str | None]:
    """The pages printing columns `first` to `last`, or no pages and why."""
    printed = columns(index, pages)
    if not printed:
        return [], "it prints no column numbers"
    missing = [c for c in range(first, last + 1) if c not in printed]
    if missing:
        return [], f"it prints no column {missing[0]} (its columns 1-{max(printed)})"
    return list(dict.fromkeys(printed[c] for c in range(first, last + 1))), None
