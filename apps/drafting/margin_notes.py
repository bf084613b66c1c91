"""The adversarial reviewer's points as margin notes of a version (issue 25 req 2, the draft
view): each point quotes the draft's words it attacks; here it is anchored to the span of the
version's text that holds those words.

The reviewer read the draft as it stood when its stage started: the version stored by the last
earlier writing stage of its run (the drafter's or the reasoner's, before the revision), or, for
a run that stored none before it, the draft's newest version at the stage's start. Its points
are anchored on that version (at the offsets the stage stored when they still hold the quote,
else at the quote's first occurrence; a point whose quote is not the text's words is kept and
listed as not found). On a later version of the same draft a point is shown only where its quote
still appears verbatim, "from the review of version N"; the others are counted, never guessed.

The caller has read `version` through a `_for_user` selector: the draft's runs are the case's.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from apps.drafting.models import DraftVersion, Stage

KINDS = {
    "weak_point": "Weak point",
    "counter_argument": "Counter-argument",
    "unsupported_assertion": "Unsupported assertion",
}


@dataclass(frozen=True)
class MarginNote:
    """One reviewer's point as the version page shows it. `number` is its place among the
    page's notes (anchored ones first, in text order); `start`/`end` index the version's text,
    both None when its quote is not found there."""

    number: int
    kind: str
    label: str
    quote: str
    comment: str
    start: int | None
    end: int | None
    run_id: int
    reviewed: int  # the number of the version the reviewer read
    # The quote's other occurrences in the text (start, end): the reviewer gives only the words,
    # so which of them it attacks is not known and each is marked, the note beside `start`.
    also: tuple[tuple[int, int], ...] = ()

    @property
    def anchored(self) -> bool:
        return self.start is not None


@dataclass(frozen=True)
class MarginNotes:
    anchored: list[MarginNote]  # in text order
    not_found: list[MarginNote]  # points of the review of this version whose quote is not here
    gone: int  # points of reviews of earlier versions whose words this version no longer has
    reviewed: list[tuple[int, int]]  # (run id, version number read), the reviews shown

    def __bool__(self) -> bool:
        return bool(self.anchored or self.not_found or self.gone)

    @property
    def all(self) -> list[MarginNote]:
        return [*self.anchored, *self.not_found]


@dataclass(frozen=True)
class _Point:
    kind: str
    quote: str
    comment: str
    start: object
    end: object
    run_id: int
    reviewed: int


def _read_number(
    stage: Stage,
    writers: dict[int, list[tuple[int, int]]],
    numbers: dict[int, int],
    created: list[tuple[datetime, int]],
) -> int | None:
    """The number of the version the adversary `stage` read (see the module docstring)."""
    earlier = [
        (position, vid)
        for position, vid in writers.get(stage.run_id, [])
        if position < stage.position
    ]
    if earlier:
        return numbers.get(max(earlier)[1])
    if stage.started_at is None:
        return None
    before = [number for at, number in created if at <= stage.started_at]
    return max(before) if before else None


def _points(stages: Iterable[Stage], read: dict[int, int | None]) -> list[_Point]:
    points = []
    for stage in stages:
        number = read.get(stage.pk)
        data = stage.output_json if isinstance(stage.output_json, dict) else {}
        found = data.get("findings")
        if number is None or not isinstance(found, list):
            continue
        for item in found:
            if not isinstance(item, dict):
                continue
            quote, comment = item.get("quote"), item.get("comment")
            if not isinstance(quote, str) or not isinstance(comment, str):
                continue
            kind = str(item.get("kind") or "")
            points.append(
                _Point(
                    kind, quote, comment, item.get("start"), item.get("end"), stage.run_id, number
                )
            )
    return points


def _locate(text: str, point: _Point, own: bool) -> tuple[int, int] | None:
    """Where the point's quote is in `text`: on the version the reviewer read, at the offsets
    its stage stored when they still hold the quote; else its first verbatim occurrence."""
    quote = point.quote
    if not quote.strip():
        return None
    start, end = point.start, point.end
    if (
        own
        and isinstance(start, int)
        and isinstance(end, int)
        and 0 <= start < end <= len(text)
        and text[start:end] == quote
    ):
        return start, end
    at = text.find(quote)
    return (at, at + len(quote)) if at >= 0 else None


def _others(text: str, quote: str, span: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """Every other place `quote` occurs in `text` (overlapping ones included), in text order."""
    found = []
    at = text.find(quote)
    while at >= 0:
        if at != span[0]:
            found.append((at, at + len(quote)))
        at = text.find(quote, at + 1)
    return tuple(found)


def margin_notes(version: DraftVersion) -> MarginNotes:
    """The reviewer's points of every review of `version` or of an earlier version of its
    draft, anchored to `version`'s text. Three queries; none when the draft had no review."""
    stages = list(
        Stage.objects.filter(
            run__draft_id=version.draft_id,
            name=Stage.Name.ADVERSARY,
            status=Stage.Status.SUCCEEDED,
        )
        .only("pk", "run_id", "position", "started_at", "output_json")
        .order_by("run_id", "position")
    )
    if not stages:
        return MarginNotes([], [], 0, [])
    writers: dict[int, list[tuple[int, int]]] = {}
    for run_id, position, version_id in Stage.objects.filter(
        run_id__in={s.run_id for s in stages}, version__isnull=False
    ).values_list("run_id", "position", "version_id"):
        writers.setdefault(run_id, []).append((position, version_id))
    versions = list(
        DraftVersion.objects.filter(draft_id=version.draft_id).values_list(
            "pk", "number", "created_at"
        )
    )
    numbers = {pk: number for pk, number, _ in versions}
    created = [(at, number) for _, number, at in versions]
    read = {s.pk: _read_number(s, writers, numbers, created) for s in stages}

    text = version.text
    placed: list[tuple[int, int, _Point, tuple[tuple[int, int], ...]]] = []
    missing: list[_Point] = []
    gone = 0
    reviewed: list[tuple[int, int]] = []
    for point in _points(stages, read):
        if point.reviewed > version.number:
            continue
        own = point.reviewed == version.number
        if (point.run_id, point.reviewed) not in reviewed:
            reviewed.append((point.run_id, point.reviewed))
        span = _locate(text, point, own)
        if span is not None:
            placed.append((span[0], span[1], point, _others(text, point.quote, span)))
        elif own:
            missing.append(point)
        else:
            gone += 1
    placed.sort(key=lambda s: (s[0], s[1]))

    def note(
        number: int,
        point: _Point,
        span: tuple[int, int] | None,
        also: tuple[tuple[int, int], ...] = (),
    ) -> MarginNote:
        return MarginNote(
            number=number,
            kind=point.kind,
            label=KINDS.get(point.kind, point.kind.replace("_", " ").capitalize()),
            quote=point.quote,
            comment=point.comment,
            start=span[0] if span else None,
            end=span[1] if span else None,
            run_id=point.run_id,
            reviewed=point.reviewed,
            also=also,
        )

    anchored = [note(n, p, (a, b), also) for n, (a, b, p, also) in enumerate(placed, start=1)]
    not_found = [note(len(anchored) + n, p, None) for n, p in enumerate(missing, start=1)]
    return MarginNotes(anchored, not_found, gone, reviewed)
