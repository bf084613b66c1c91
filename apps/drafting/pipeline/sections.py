"""Long drafts reviewed in sections (docs/architecture/drafting.md, "Long drafts reviewed in
sections"): where a draft does not fit the window of a stage that reads it (heavy reasoner,
adversarial reviewer, revision), it is cut into sections of at most S tokens (pipeline.budget
`section_tokens`), the stage runs once per section (pipeline.execute), and the outputs are
merged here.

1. Blocks (`blocks`): the draft is cut after every run of blank lines and before every Markdown
   heading line. A block over S tokens is halved at the sentence end nearest its middle, or
   else the white space nearest it, or else (a word over S) the middle character, until every
   piece fits (`_pieces`): so any draft can be sectioned once S is at least a few tokens.
2. Sections (`pack`): the pieces are packed greedily, in order, into sections of at most S
   tokens, each piece counted on its own (plus one token for where it meets the next); a
   section does not end with a heading that has text after it (the heading opens the next
   section instead). Sections are spans of the draft: they cover it whole, in order.
3. Merging: a reviewer's finding anchored in its section moves to the whole draft's offsets
   (`findings_moved`); a writing stage's section replies are joined with a blank line between
   them (`joint`) and share what the stage may write in all (`stage_limit`, `reply_room`); a
   revision of a section is given the findings in that section and those anchored nowhere
   (`in_section`).
"""

import asyncio
import itertools
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

Count = Callable[[str], Awaitable[int]]
# How much longer than the draft it reads a writing stage's sections may make it in all, where
# that is over the run's draft limit (`stage_limit`).
LENGTHEN_FRACTION = 0.25
# Pieces counted at once.
COUNT_BATCH = 8


@dataclass(frozen=True)
class Section:
    """A section of the draft: draft[start:end], `tokens` as counted."""

    start: int
    end: int
    tokens: int

    def text(self, draft: str) -> str:
        return draft[self.start : self.end]


_BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]", re.MULTILINE)
# A sentence's end: its stop, any closing quotes or brackets (U+201D, U+2019), white space.
_SENTENCE_END = re.compile("[.!?;:][\"'\u201d\u2019)\\]]*\\s+")
_SPACE = re.compile(r"\s+")


def blocks(draft: str) -> list[tuple[int, int]]:
    """The draft's paragraphs and headings as spans (module docstring, 1), covering it whole."""
    cuts = {match.end() for match in _BLANK_LINES.finditer(draft)}
    cuts |= {match.start() for match in _HEADING.finditer(draft)}
    bounds = [0, *sorted(cut for cut in cuts if 0 < cut < len(draft)), len(draft)]
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def _halve(draft: str, start: int, end: int) -> int:
    """Where to cut draft[start:end] in two: after the sentence end nearest its middle, else
    after the white space nearest it, else at its middle."""
    middle = (start + end) // 2
    for pattern in (_SENTENCE_END, _SPACE):
        cuts = [m.end() for m in pattern.finditer(draft, start, end) if start < m.end() < end]
        if cuts:
            return min(cuts, key=lambda cut: abs(cut - middle))
    return middle


async def _pieces(
    draft: str, span: tuple[int, int], tokens: int, limit: int, count: Count
) -> list[tuple[int, int, int]]:
    """(start, end, tokens) pieces of `span` (of `tokens` tokens), each within `limit`."""
    start, end = span
    if tokens <= limit or end - start <= 1:
        return [(start, end, tokens)]
    cut = _halve(draft, start, end)
    left, right = (start, cut), (cut, end)
    counts = await asyncio.gather(count(draft[start:cut]), count(draft[cut:end]))
    return [
        *await _pieces(draft, left, counts[0], limit, count),
        *await _pieces(draft, right, counts[1], limit, count),
    ]


def _is_heading(draft: str, start: int, end: int) -> bool:
    text = draft[start:end].strip()
    return bool(_HEADING.match(text)) and "\n" not in text


def pack(draft: str, pieces: Sequence[tuple[int, int, int]], limit: int) -> list[Section]:
    """The pieces packed into sections of at most `limit` tokens (module docstring, 2)."""
    groups: list[list[tuple[int, int, int]]] = []
    current: list[tuple[int, int, int]] = []

    def size(group: list[tuple[int, int, int]]) -> int:
        return sum(tokens + 1 for _, _, tokens in group)

    for piece in pieces:
        if current and size(current) + piece[2] + 1 > limit:
            carried: list[tuple[int, int, int]] = []
            while len(current) > 1 and _is_heading(draft, current[-1][0], current[-1][1]):
                carried.insert(0, current.pop())
            groups.append(current)
            current = carried
            if current and size(current) + piece[2] + 1 > limit:
                groups.append(current)
                current = []
        current.append(piece)
    if current:
        groups.append(current)
    return [
        Section(start=group[0][0], end=group[-1][1], tokens=sum(t for _, _, t in group))
        for group in groups
    ]


async def sections_plan(draft: str, limit: int, count: Count) -> list[Section]:
    """The draft cut into sections of at most `limit` tokens as `count` counts them."""
    spans = blocks(draft)
    counts: list[int] = []
    for at in range(0, len(spans), COUNT_BATCH):
        batch = spans[at : at + COUNT_BATCH]
        counts += await asyncio.gather(*(count(draft[a:b]) for a, b in batch))
    pieces: list[tuple[int, int, int]] = []
    for span, tokens in zip(spans, counts, strict=True):
        pieces += await _pieces(draft, span, tokens, limit, count)
    return pack(draft, pieces, limit)


def stage_limit(draft_limit: int, draft_tokens: int) -> int:
    """What a writing stage reading a draft of `draft_tokens` in sections may write in all: the
    run's draft limit, or the draft lengthened by LENGTHEN_FRACTION where that is more (a
    draft written to the limit may still be strengthened; a model rewriting a part in as many
    words may count a token or two more)."""
    return max(draft_limit, draft_tokens + math.ceil(draft_tokens * LENGTHEN_FRACTION))


def reply_room(draft_limit: int, *, written: int, rest: int, own: int) -> int:
    """What a writing stage's section may write: what the draft limit leaves after the sections
    written (`written` tokens) and the length of those still to come (`rest`), never less than
    its own length (`own`)."""
    return max(draft_limit - written - rest, own)


def joint(previous: str) -> str:
    """What joins a section's reply to the next one's: line breaks enough for a blank line."""
    trailing = len(previous) - len(previous.rstrip("\n"))
    return "\n" * max(2 - trailing, 0)


def in_section(item: Mapping[str, object], section: Section) -> bool:
    """Whether a finding belongs to the section's revision: anchored in it, or nowhere."""
    start = item.get("start")
    if not isinstance(start, int) or isinstance(start, bool):
        return True
    return section.start <= start < section.end


def findings_moved(findings: Sequence[Mapping[str, object]], section: Section) -> list[dict]:
    """A section's findings with their anchors moved from the section to the whole draft."""
    moved = []
    for item in findings:
        start, end = item.get("start"), item.get("end")
        shifted = dict(item)
        if isinstance(start, int) and isinstance(end, int):
            shifted |= {"start": start + section.start, "end": end + section.start}
        moved.append(shifted)
    return moved
