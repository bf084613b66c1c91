"""The adversarial reviewer's points as margin notes of the version page (issue 25 req 2, the
draft view): each point is anchored to the span of the version's text it quotes, on the version
the reviewer read; a point whose quote is not found there is listed at the end, saying so; on a
later version a point is shown only where its words still appear verbatim, "from the review of
version N"."""

import re
from typing import Any

import pytest
from django.test import Client

from apps.accounts.models import User
from apps.cases.models import Case
from apps.drafting import margin_notes
from apps.drafting.models import DraftVersion, Run, Stage
from apps.drafting.pipeline import outputs
from apps.drafting.views.versions import Segment, with_notes
from apps.evidence.models import Packet
from tests.drafting.run_fixtures import frozen_packet, runs_for_tables

pytestmark = pytest.mark.django_db

FIRST = "The tenant paid rent in full.\nThe landlord never repaired the roof.\nRent was late once."
SECOND = "The tenant paid rent in full.\nThe landlord fixed the roof in May.\nRent was late once."
FINDINGS: list[dict[str, Any]] = [
    {
        "kind": "counter_argument",
        "quote": "The landlord never repaired the roof.",
        "comment": "The landlord's invoice says otherwise.",
        "start": 30,
        "end": 67,
    },
    {
        "kind": "weak_point",
        "quote": "paid rent in full",
        "comment": "One receipt only.",
        "start": 11,
        "end": 28,
    },
    {
        "kind": "unsupported_assertion",
        "quote": "words the draft never had",
        "comment": "Invented.",
        "start": None,
        "end": None,
    },
]


@pytest.fixture
def packet(lawyer: User, case: Case) -> Packet:
    return frozen_packet(case=case, user=lawyer)


@pytest.fixture
def reviewed(lawyer: User, case: Case, packet: Packet) -> Run:
    """A motion run whose drafter wrote version 1, whose reviewer read it, and whose revision
    wrote version 2 (the roof sentence changed)."""
    run = runs_for_tables(case=case, user=lawyer, packet=packet, label="Notes")["run"]
    drafter = run.stages.get(name="drafter")
    drafter.version = outputs.version_store(run=run, stage=drafter, text=FIRST)
    drafter.save(update_fields=["version"])
    run.stages.filter(name="adversary").update(
        status="succeeded", output_json={"findings": FINDINGS}
    )
    revision = run.stages.get(name="revision")
    revision.version = outputs.version_store(run=run, stage=revision, text=SECOND)
    revision.save(update_fields=["version"])
    return Run.objects.get(pk=run.pk)


def _page(client: Client, run: Run, number: int) -> str:
    url = f"/cases/{run.case_id}/drafts/{run.draft_id}/versions/{number}/"
    response = client.get(url)
    assert response.status_code == 200
    return str(response.content.decode())


def _marked(html: str, number: int) -> str:
    """The words of the version page's text marked for note `number`, joined (without the
    note's number and its screen-reader label)."""
    start = html.index('id="draft-text"')
    text = html[start : html.index("</section>", start)]
    pieces = re.findall(
        rf'<mark class="note-span" data-notes="(?:[\d ]* )?{number}(?: [\d ]*)?">(.*?)</mark>', text
    )
    joined = re.sub(r'<span class="note-start".*?</span></span>', "", "".join(pieces))
    return re.sub(r"<[^>]+>", "", joined)


def _drafter_version(run: Run) -> DraftVersion:
    stage = run.stages.get(name="drafter")
    assert stage.version is not None
    return stage.version


def test_the_reviewed_version_anchors_each_found_quote_and_lists_the_one_not_found(
    lawyer_client: Client, reviewed: Run
) -> None:
    version = _drafter_version(reviewed)
    notes = margin_notes.margin_notes(version)

    # Anchored in text order: "paid rent in full" (11) before the roof sentence (30).
    assert [(n.number, n.start, n.end) for n in notes.anchored] == [(1, 11, 28), (2, 30, 67)]
    for note in notes.anchored:
        assert version.text[note.start : note.end] == note.quote
        assert note.reviewed == 1
    assert [(n.number, n.quote, n.start) for n in notes.not_found] == [
        (3, "words the draft never had", None)
    ]
    assert notes.gone == 0 and notes.reviewed == [(reviewed.pk, 1)]

    html = _page(lawyer_client, reviewed, 1)
    assert _marked(html, 1) == "paid rent in full"
    assert _marked(html, 2) == "The landlord never repaired the roof."
    assert 'href="#note-at-2"' in html and 'id="note-at-2"' in html
    assert "Point 2: </span>Counter-argument" in html
    assert "The landlord&#x27;s invoice says otherwise." in html
    missing = html[html.index("Not found in this text") :]
    assert "words the draft never had" in missing and "(not found in the text)" in missing
    assert "From the review of version" not in html


def test_a_later_version_shows_only_the_points_whose_words_it_still_has(
    lawyer_client: Client, reviewed: Run
) -> None:
    assert reviewed.draft_id is not None
    later = DraftVersion.objects.get(draft_id=reviewed.draft_id, number=2)
    notes = margin_notes.margin_notes(later)

    # The roof sentence was rewritten: its point is not placed (counted); "paid rent in full"
    # is still there, word for word; the quote never found is not repeated.
    assert [(n.quote, n.start, n.reviewed) for n in notes.anchored] == [
        ("paid rent in full", 11, 1)
    ]
    assert notes.not_found == [] and notes.gone == 2

    html = _page(lawyer_client, reviewed, 2)
    assert _marked(html, 1) == "paid rent in full"
    assert "From the review of version 1" in html
    assert "landlord never repaired" not in html
    assert "2 points of the review of an earlier version quote words not in this version" in html


def test_stored_offsets_that_no_longer_hold_the_quote_fall_back_to_finding_it(
    lawyer: User, reviewed: Run
) -> None:
    stage = reviewed.stages.get(name="adversary")
    moved = [{**FINDINGS[1], "start": 0, "end": 17}]
    Stage.objects.filter(pk=stage.pk).update(output_json={"findings": moved})

    notes = margin_notes.margin_notes(_drafter_version(reviewed))

    assert [(n.start, n.end) for n in notes.anchored] == [(11, 28)]


def test_a_quote_found_twice_is_marked_at_each_occurrence_and_the_note_says_so(
    lawyer_client: Client, reviewed: Run
) -> None:
    # "The" starts the first two sentences; the reviewer gives only the words, so which one it
    # attacks is not known: both are marked, the note stands by the one its stage stored.
    twice = {"kind": "weak_point", "quote": "The", "comment": "Which one?", "start": 0, "end": 3}
    Stage.objects.filter(run=reviewed, name="adversary").update(output_json={"findings": [twice]})

    notes = margin_notes.margin_notes(_drafter_version(reviewed))

    assert [(n.start, n.end, n.also) for n in notes.anchored] == [(0, 3, ((30, 33),))]
    html = _page(lawyer_client, reviewed, 1)
    assert _marked(html, 1) == "TheThe"
    assert html.count('id="note-at-1"') == 1
    assert "These words are in the text 2 times" in html
    # A quote found once says nothing of the kind.
    Stage.objects.filter(run=reviewed, name="adversary").update(
        output_json={"findings": FINDINGS[:1]}
    )
    assert margin_notes.margin_notes(_drafter_version(reviewed)).anchored[0].also == ()
    assert "These words are in the text" not in _page(lawyer_client, reviewed, 1)


def test_a_draft_without_a_review_has_no_notes(lawyer_client: Client, reviewed: Run) -> None:
    Stage.objects.filter(run=reviewed, name="adversary").update(status="failed")

    assert not margin_notes.margin_notes(_drafter_version(reviewed))
    assert 'id="margin-notes"' not in _page(lawyer_client, reviewed, 1)


def test_with_notes_cuts_claims_at_note_bounds_and_keeps_every_character() -> None:
    text = "abcdefghij"
    claim: Any = object()
    pieces = [Segment("abc"), Segment("defg", claim, True), Segment("hij")]
    note = margin_notes.MarginNote(1, "weak_point", "Weak point", "cdef", "", 2, 6, 1, 1)

    out = with_notes(pieces, [note])

    assert "".join(p.text for p in out) == text
    assert [(p.text, p.claim is claim, p.first, p.notes, p.note_starts) for p in out] == [
        ("ab", False, False, (), ()),
        ("c", False, False, (1,), (1,)),
        ("def", True, True, (1,), ()),
        ("g", True, False, (), ()),
        ("hij", False, False, (), ()),
    ]


def test_with_notes_marks_a_quotes_other_occurrences_without_a_second_start() -> None:
    pieces = [Segment("ab ab ab")]
    note = margin_notes.MarginNote(
        1, "weak_point", "Weak point", "ab", "", 3, 5, 1, 1, also=((0, 2), (6, 8))
    )

    out = with_notes(pieces, [note])

    assert [(p.text, p.notes, p.note_starts) for p in out] == [
        ("ab", (1,), ()),
        (" ", (), ()),
        ("ab", (1,), (1,)),
        (" ", (), ()),
        ("ab", (1,), ()),
    ]


def test_without_an_earlier_writing_stage_the_version_newest_at_the_reviews_start_is_read(
    reviewed: Run,
) -> None:
    first = _drafter_version(reviewed)
    later = DraftVersion.objects.get(draft_id=first.draft_id, number=2)
    Stage.objects.filter(run=reviewed, name="drafter").update(version=None)
    between = first.created_at + (later.created_at - first.created_at) / 2
    Stage.objects.filter(run=reviewed, name="adversary").update(started_at=between)

    assert [n.reviewed for n in margin_notes.margin_notes(first).anchored] == [1, 1]
    # Started after version 2 was stored: the review read version 2, and version 1 shows none.
    Stage.objects.filter(run=reviewed, name="adversary").update(started_at=later.created_at)
    assert not margin_notes.margin_notes(first)
    notes = margin_notes.margin_notes(later)
    assert [(n.quote, n.reviewed) for n in notes.anchored] == [("paid rent in full", 2)]
    assert len(notes.not_found) == 2 and notes.gone == 0
