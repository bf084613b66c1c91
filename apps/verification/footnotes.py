"""Footnote pins of case citations (pure, no Django): "123 F.3d 800, 813 n.4", "Id. at 813
nn.4-5", "(Id. at p. 641, fn. 3.)".

A pin naming notes holds when every note exists in the opinion in the packet and sits on one
of the pin's reporter pages (`check`):

1. The notes of a page are read from its foot: the lines after a separator ("____", "---",
   "Footnotes") that start with a note number ("4 The court...", "4. The...", "[4] ...",
   "FN4 ...", "n.4 ..."), or, with no separator, the run of such lines at the page's end whose
   numbers go up by one (a numbered list higher on the page is no note). Text between a
   separator and a page's first note continues the previous page's last note.
2. A note sits on the reporter page where its text starts, each page it continues onto, and
   the page of its call in the opinion's text ("costs.[4]", "costs.4 "). In a star-paged
   opinion a called note sits on its call's page only: its text stands wherever the file
   printed it (at the file page's foot, after the next page's marker, or at the end).
3. A note that does not exist (n.0, n.999): unsupported, naming the notes the opinion has; a
   note on another page: unsupported, naming the page where it is. An opinion in which no
   note can be read: needs review (its notes may be printed in a form not read here).
4. Every note on the pin's page: supported, with the note as the match, when each quotation
   of the sentence stands in the notes (a note's text may be printed on a later page than its
   call; the page check would look for it on the call's page); otherwise the page check of
   `checks` decides, as for a pin without a note.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from apps.verification.claims import Claim
from apps.verification.findings import Finding
from apps.verification.index import Opinion, PacketIndex
from apps.verification.spans import excerpt_of

QUOTE_WORDS = 4  # words: a shorter quotation is not looked for in the notes
NOTES_FROM = 0.5  # with no separator, notes stand in the page's lower half
_SEPARATOR = re.compile(r"(?im)^[ \t]*(?:_{3,}|-{3,}|\u2014{2,}|\u2500{3,}|footnotes?:?)[ \t]*$")
_NOTE_START = re.compile(
    r"(?m)^[ \t]*(?:\[(?P<a>\d{1,3})\]|(?:FN|fn\.?|n\.)[ \t]*(?P<b>\d{1,3})\.?"
    r"|\((?P<d>\d{1,3})\)|(?P<c>\d{1,3})\.?)[ \t]+(?=\S)"
)
# A call in the text: a bracketed number glued to a word or a mark ("costs.[4]"), or a number
# glued to a word's closing punctuation ("costs.4 ", as a superscript is extracted).
_CALL = re.compile(
    r"(?<=[\w.,;:\"'\u201d)])\[(\d{1,3})\](?!\w)|(?<=[a-z][.,;:\"\u201d)])(\d{1,2})(?=[\s\u201d\"]|$)"
    # (or in parentheses glued to a sentence's stop: "prescribed.(1)")
    r"|(?<=[a-z][.,;:])\((\d{1,3})\)(?=[\s\u201d\"]|$)"
)


@dataclass
class Note:
    number: int
    page: int  # packet page index where its text starts
    span: tuple[int, int]  # in that page's text
    reporter_pages: set[int] = field(default_factory=set)
    called: bool = False
    call_pages: set[int] = field(default_factory=set)


def _foot(text: str) -> tuple[int, list[tuple[int, int, int]]]:
    """Where a page's note region starts (len(text): none) and its notes: (number, start,
    end) in the text."""
    separators = list(_SEPARATOR.finditer(text))
    starts = [
        (m.start(), int(m.group("a") or m.group("b") or m.group("c") or m.group("d")))
        for m in _NOTE_START.finditer(text)
    ]
    if separators:
        region = separators[-1].end()
        notes = [(at, n) for at, n in starts if at >= region]
    else:
        notes = []
        for at, n in reversed(starts):
            if notes and n != notes[0][1] - 1:
                break
            notes.insert(0, (at, n))
        if not notes or notes[0][0] < len(text) * NOTES_FROM:
            return len(text), []  # (a numbered line high on the page, "358 So. 3d 1042": none)
        region = notes[0][0]
    found = [
        (n, at, notes[k + 1][0] if k + 1 < len(notes) else len(text))
        for k, (at, n) in enumerate(notes)
    ]
    return region, found


def notes_of(index: PacketIndex, opinion: Opinion) -> dict[int, Note]:
    """The notes of `opinion` by number, with the reporter pages each sits on (read once per
    packet index and opinion)."""
    return index.derived(
        ("notes", opinion.document_id, opinion.first_page), lambda: _read_notes(index, opinion)
    )


def _read_notes(index: PacketIndex, opinion: Opinion) -> dict[int, Note]:
    # (packet page index, start, end, reporter page) for each part of the opinion's text.
    parts: list[tuple[int, int, int, int]] = []
    if opinion.spans:
        for number, pieces in opinion.spans.items():
            parts.extend((i, a, b, number) for i, a, b in pieces)
    else:
        for number, record in opinion.pages.items():
            i = index.page_index(record)
            parts.append((i, 0, len(record.text), number))
    parts.sort()

    def reporter_page(i: int, at: int) -> int | None:
        for p, a, b, number in parts:
            if p == i and a <= at < max(b, a + 1):
                return number
        return None

    notes: dict[int, Note] = {}
    regions: dict[int, int] = {}
    last: Note | None = None
    for i in dict.fromkeys(p for p, _, _, _ in parts):
        text = index.pages[i].text
        region, found = _foot(text)
        regions[i] = region
        head = text[region : found[0][1]] if found else ""
        if last is not None and region < len(text) and head.strip() and _SEPARATOR.search(text):
            page = reporter_page(i, region)
            if page is not None:
                last.reporter_pages.add(page)  # the previous page's last note goes on here
        for number, start, end in found:
            page = reporter_page(i, start)
            note = notes.setdefault(number, Note(number, i, (start, end)))
            if page is not None:
                note.reporter_pages.add(page)
            last = note
    for i, region in regions.items():
        body = index.pages[i].text[:region]
        for match in _CALL.finditer(body):
            number = int(match.group(1) or match.group(2) or match.group(3))
            if match.group(2) and body[max(0, match.start() - 3) : match.start()].endswith(
                (" n.", "nn.")
            ):
                continue  # "n.4" written in the text: a reference, not a call
            called = notes.get(number)
            page = reporter_page(i, match.start())
            if called is not None and page is not None:
                called.call_pages.add(page)
                called.called = True
    for note in notes.values():
        if opinion.spans and note.call_pages:
            # Star-paged: the note's text stands wherever the file printed it (often after
            # the next page's marker); it belongs to the page of its call.
            note.reporter_pages = set(note.call_pages)
        else:
            note.reporter_pages |= note.call_pages
    return notes


def check(
    claim: Claim,
    pin: str,
    numbers: list[int],
    opinion: Opinion,
    index: PacketIndex,
    quotes: Sequence[list[list[str]]] = (),
) -> Finding | None:
    """The finding on a pin that names notes (see the module): unsupported when a note is
    missing or on another page; supported, with the note as the match, when every note is on
    the pin's pages and each of the sentence's `quotes` (their segments) stands in a note;
    None when the pin names no note, or a quotation is not in the notes (the page check
    decides then)."""

    cite = claim.citation
    if cite is None or not cite.notes:
        return None
    notes = notes_of(index, opinion)
    first = opinion.pages[opinion.first_page]
    label = _label(cite.notes)
    if not notes:
        return Finding(
            claim,
            "needs_review",
            "case_pin_note",
            f"no footnote could be read in the opinion in the packet; {label} at {pin} is not "
            "checked",
            page=first,
        )
    have = sorted(notes)
    for number in cite.notes:
        note = notes.get(number)
        if note is None:
            return Finding(
                claim,
                "unsupported",
                "case_pin_note",
                f"the opinion has no footnote {number} (its footnotes: {_runs(have)})",
                page=first,
            )
        if not note.reporter_pages & set(numbers):
            record = index.pages[note.page]
            where = ", ".join(str(p) for p in sorted(note.reporter_pages)) or "another page"
            return Finding(
                claim,
                "unsupported",
                "case_pin_note",
                f"footnote {number} is on page {where} of the opinion, not at the pin cite {pin}",
                page=record,
                excerpt=excerpt_of(record.text, *note.span),
                match=note.span,
            )
    named = [notes[n] for n in cite.notes]
    for segments in quotes:
        if sum(len(s) for s in segments) < QUOTE_WORDS:
            continue
        hit = index.find_quote(segments, within=sorted({n.page for n in named}))
        inside = hit is not None and any(
            index.page_index(hit.page) == n.page
            and n.span[0] <= hit.span[0]
            and hit.span[1] <= n.span[1]
            for n in named
        )
        if not inside:
            return None
    note = named[0]
    record = index.pages[note.page]
    return Finding(
        claim,
        "supported",
        "case_pin_note",
        f"the opinion is in the packet and footnote {note.number} is on page "
        f"{', '.join(str(p) for p in sorted(note.reporter_pages & set(numbers)))}",
        page=record,
        excerpt=excerpt_of(record.text, *note.span),
        match=note.span,
    )


def _label(numbers: tuple[int, ...]) -> str:
    return f"n.{numbers[0]}" if len(numbers) == 1 else f"nn.{_runs(list(numbers))}"


def _runs(numbers: list[int]) -> str:
    runs: list[list[int]] = []
    for n in numbers:
        if runs and runs[-1][-1] + 1 == n:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


__all__ = ["Note", "check", "notes_of"]
