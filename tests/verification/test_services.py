"""The verification run (the job's body) end to end on real frozen pages: claims extracted,
checked against the packet's snapshot only, findings stored tied to FrozenPage rows, progress
published to the case's stream; and the request's job on the `cpu` queue."""

import asyncio
import gc
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import User
from apps.cases.events import case_group
from apps.cases.models import Case
from apps.documents.models import Page
from apps.evidence.models import FrozenPage
from apps.verification import boxes, services
from apps.verification.models import Finding, Verification
from tests.drafting.makers import draft_of, packet_of, read_pdf

pytestmark = pytest.mark.django_db

RECORD = ["The tenant paid $12,450.00 on March 3, 2024.", "Signed at Springfield."]
DRAFT = "The tenant paid USD 12,450 on 03/03/2024. The landlord then paid $99.00 on June 9, 2021."


@pytest.fixture
def draft(lawyer: User, case: Case) -> Any:
    document = read_pdf(case=case, user=lawyer, lines=RECORD)
    packet = packet_of(case=case, user=lawyer, documents=[document])
    return draft_of(case=case, user=lawyer, packet=packet, text=DRAFT)


def _request(lawyer: User, draft: Any) -> Verification:
    return services.verification_request(
        user=lawyer, case_id=draft.case_id, draft_id=draft.pk, number=1
    )


def test_request_queues_one_cpu_job_by_name_and_asking_again_answers_the_same_run(
    lawyer: User, draft: Any
) -> None:
    first = _request(lawyer, draft)
    again = _request(lawyer, draft)

    assert first.pk == again.pk and first.status == Verification.Status.QUEUED
    job = ProcrastinateJob.objects.get(task_name="verification.verify")
    assert (job.queue_name, job.args, job.status) == ("cpu", {"verification_id": first.pk}, "todo")


def test_run_checks_claims_against_the_frozen_pages_and_ties_findings_to_them(
    lawyer: User, draft: Any
) -> None:
    verification = _request(lawyer, draft)

    services.verification_run(verification_id=verification.pk)

    verification.refresh_from_db()
    assert verification.status == Verification.Status.DONE, verification.error
    assert verification.second_opinion == Verification.SecondOpinion.NOT_OBTAINED
    findings = {f.text: f for f in Finding.objects.filter(verification=verification)}
    assert verification.claim_count == verification.claims_done == len(findings)
    frozen = FrozenPage.objects.get(packet=draft.packet)
    for text in ("USD 12,450", "03/03/2024"):
        assert findings[text].status == Finding.Status.SUPPORTED, findings[text].message
        assert findings[text].page == frozen
        # The matched words of the text-layer page, boxed in points where the PDF drew line 1
        # (inserted at x=72, baseline y=72, 11 pt).
        assert findings[text].boxes, findings[text].match_start
        for x0, y0, x1, y1 in findings[text].boxes:
            assert 72 <= x0 < x1 < 612 and 55 < y0 < y1 < 80
    for text in ("$99.00", "June 9, 2021"):
        assert findings[text].status in Finding.BLOCKING, findings[text].message
    for finding in findings.values():
        assert DRAFT[finding.start : finding.end] == finding.text
        assert finding.verifier_version == verification.verifier_version != ""


def test_run_reads_the_snapshot_not_the_live_page(lawyer: User, draft: Any) -> None:
    # The live page changes after freezing; the packet (and so the verifier) keeps the old text.
    Page.objects.filter(document=draft.packet.frozen_pages.get().document).update(
        text="The tenant paid $99.00 on June 9, 2021."
    )
    verification = _request(lawyer, draft)

    services.verification_run(verification_id=verification.pk)

    statuses = dict(Finding.objects.filter(verification=verification).values_list("text", "status"))
    assert statuses["$99.00"] in Finding.BLOCKING
    assert statuses["USD 12,450"] == Finding.Status.SUPPORTED


def test_a_run_is_idempotent_and_a_missing_one_is_a_no_op(lawyer: User, draft: Any) -> None:
    verification = _request(lawyer, draft)
    services.verification_run(verification_id=verification.pk)
    count = Finding.objects.filter(verification=verification).count()

    services.verification_run(verification_id=verification.pk)
    services.verification_run(verification_id=987_654_321)

    assert Finding.objects.filter(verification=verification).count() == count > 0


def test_progress_goes_to_the_case_group_until_done(
    lawyer: User, draft: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    layer = get_channel_layer()
    assert layer is not None
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(case_group(draft.case_id), channel)

    with django_capture_on_commit_callbacks(execute=True):
        verification = _request(lawyer, draft)
    with django_capture_on_commit_callbacks(execute=True):
        services.verification_run(verification_id=verification.pk)

    async def drain() -> list[dict[str, Any]]:
        events = []
        while True:
            try:
                events.append(await asyncio.wait_for(layer.receive(channel), timeout=0.5))
            except TimeoutError:
                return events

    received = async_to_sync(drain)()
    # The draft's documents were stored in this test's transaction too: their progress events,
    # in the case's feed unnumbered until then, are numbered and sent with the first commit
    # hook that runs (apps/cases/events.py), ahead of the verification's.
    assert {e["type"] for e in received} == {"verification.progress", "documents.progress"}
    assert [e["seq"] for e in received] == list(range(1, len(received) + 1))
    events = [e for e in received if e["type"] == "verification.progress"]
    assert events[0]["status"] == "queued"
    assert events[-1]["status"] == "done"
    assert "running" in {e["status"] for e in events}
    assert {(e["case_id"], e["draft_id"], e["version"]) for e in events} == {
        (draft.case_id, draft.pk, 1)
    }
    assert events[-1]["claim_count"] == events[-1]["claims_done"] > 0
    assert (
        events[-1]["blocking"]
        == Finding.objects.filter(verification=verification, status__in=Finding.BLOCKING).count()
    )


def test_boxes_are_those_of_the_words_overlapping_the_match_in_order() -> None:
    text = "Paid $12,450.00 on\nMarch 3, 2024. Paid again."
    words = [
        (token, 10.0 * n, 5.0, 10.0 * n + 8, 9.0)
        for n, token in enumerate(
            ["Paid", "$12,450.00", "on", "March", "3,", "2024.", "Paid", "again."]
        )
    ]
    start = text.index("March")

    boxed = boxes.boxes_in(text, words, (start, start + len("March 3, 2024")))

    assert boxed == [[30.0, 5.0, 38.0, 9.0], [40.0, 5.0, 48.0, 9.0], [50.0, 5.0, 58.0, 9.0]]
    # A word the text does not hold (a page re-read differently) is skipped, not misplaced.
    assert boxes.word_spans("a b", ["a", "zz", "b"]) == [(0, 1), None, (2, 3)]


def test_a_failure_inside_the_checks_fails_the_run_once_and_for_good(
    lawyer: User, draft: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.verification import checks

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("index blew up on \x00 page 3")

    monkeypatch.setattr(checks, "verify_text", broken)
    verification = _request(lawyer, draft)

    with pytest.raises(RuntimeError):
        services.verification_run(verification_id=verification.pk)
    services.verification_run(verification_id=verification.pk)  # a second go: left alone

    verification.refresh_from_db()
    assert verification.status == Verification.Status.FAILED
    assert verification.error == "RuntimeError: index blew up on  page 3"
    assert verification.finished_at is not None
    assert not Finding.objects.filter(verification=verification).exists()


def test_a_run_left_running_runs_again_and_replaces_its_findings(lawyer: User, draft: Any) -> None:
    verification = _request(lawyer, draft)
    services.verification_run(verification_id=verification.pk)
    first = sorted(Finding.objects.filter(verification=verification).values_list("start", "status"))
    # As if the worker died after the findings and the job was recovered: still running.
    Verification.objects.filter(pk=verification.pk).update(status=Verification.Status.RUNNING)

    services.verification_run(verification_id=verification.pk)

    again = sorted(Finding.objects.filter(verification=verification).values_list("start", "status"))
    assert again == first and len(first) > 0
    verification.refresh_from_db()
    assert verification.status == Verification.Status.DONE


@pytest.mark.parametrize("bad", ["7", None, True, 1.5])
def test_the_task_refuses_an_argument_that_is_no_id(bad: object) -> None:
    from apps.verification.tasks import verification_run_task
    from lexweb.errors import DomainError

    with pytest.raises(DomainError, match="verification_id must be int"):
        verification_run_task(verification_id=bad)  # type: ignore[arg-type]  # the point
    assert not Verification.objects.exists()


def test_the_run_reads_page_rows_plainly_and_the_same_as_the_model_pages(
    lawyer: User, case: Case
) -> None:
    """The job reads every frozen page as a plain row (`page_records`), the same values as the
    model's `page_record`; the findings' pages are read as models, by position, on demand."""
    first = read_pdf(case=case, user=lawyer, lines=RECORD)
    second = read_pdf(case=case, user=lawyer, lines=["Second document, one page."])
    packet = packet_of(case=case, user=lawyer, documents=[first, second])
    frozen = list(FrozenPage.objects.filter(packet=packet).order_by("position"))

    records = services.page_records(packet_id=packet.pk)

    assert records == [services.page_record(page) for page in frozen]
    assert [r.position for r in records] == [1, 2]
    pages = services.FrozenPagesByPosition(packet.pk, count=len(records))
    assert pages.read == {}
    pages.load([2, 2, 0, 99])
    assert list(pages.read) == [2] and pages[2] == frozen[1]
    assert pages.get(1) == frozen[0] and 1 in pages and len(pages) == 2 and list(pages) == [1, 2]
    assert 3 not in pages and "1" not in pages and pages.get(3) is None
    with pytest.raises(KeyError):
        pages[0]


def test_a_run_reads_and_writes_with_the_cycle_collector_paused_and_turns_it_back_on(
    lawyer: User, draft: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run makes millions of small objects on a large packet and no cycles: the collector
    # is off while it reads the pages and writes the findings, on again afterwards.
    seen: dict[str, bool] = {}
    reading, writing = services.page_records, services._add_boxes

    def read(**kwargs: Any) -> Any:
        seen["reading"] = gc.isenabled()
        return reading(**kwargs)

    def boxed(rows: Any) -> None:
        seen["boxing"] = gc.isenabled()
        writing(rows)

    monkeypatch.setattr(services, "page_records", read)
    monkeypatch.setattr(services, "_add_boxes", boxed)
    verification = _request(lawyer, draft)

    services.verification_run(verification_id=verification.pk)

    verification.refresh_from_db()
    assert verification.status == Verification.Status.DONE, verification.error
    assert seen == {"reading": False, "boxing": False}
    assert gc.isenabled()


def test_a_run_reads_the_exhibits_a_companion_draft_on_the_packet_lists(
    lawyer: User, case: Case
) -> None:
    # The packet's second document is the kiosk log; the brief's "Ex. 1" is the exhibit 1 that
    # the declaration beside it lists (read as the packet's first document, it fails).
    booking = read_pdf(case=case, user=lawyer, lines=["Booked at 22:06."], filename="booking.pdf")
    kiosk = read_pdf(
        case=case,
        user=lawyer,
        lines=["Seen by a nurse on March 22, 2023."],
        filename="kiosk-log.pdf",
    )
    packet = packet_of(case=case, user=lawyer, documents=[booking, kiosk])
    brief = draft_of(
        case=case, user=lawyer, packet=packet, text="A nurse saw him on March 22, 2023. (Ex. 1.)"
    )
    declaration = "**Exhibit 1 (Kiosk Log)**\n\nAttached as Exhibit 1 is the kiosk log."
    draft_of(case=case, user=lawyer, packet=packet, text=declaration, title="Nakamura Decl.")

    verification = _request(lawyer, brief)
    services.verification_run(verification_id=verification.pk)

    cite = Finding.objects.get(verification=verification, text="Ex. 1")
    assert cite.status == Finding.Status.SUPPORTED, cite.message
    assert "Nakamura Decl. (version 1)" in cite.message
