"""Two people editing one packet at once, on real separate database connections (one thread
each, every thread with its own Django connection): no item is lost, none is added to a frozen
packet, a packet is frozen once, and a frozen one gets one new version."""

import threading
import time
from collections.abc import Callable

import psycopg
import pytest
from django.db import connections, transaction

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents.models import Document
from apps.evidence.models import FrozenPage, Packet, PacketItem
from apps.evidence.services import packets as services
from lexweb.errors import Conflict
from tests.conftest import database_url_for_tests
from tests.evidence.conftest import make_document, selection

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE = 30.0


def _waiting_on_locks() -> int:
    with psycopg.connect(database_url_for_tests(), autocommit=True) as probe:
        row = probe.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return int(row[0]) if row else 0


def _wait_until_waiting(count: int) -> None:
    """Until `count` connections wait on a lock (polling the server: not a timing guess)."""
    end = time.monotonic() + DEADLINE
    while _waiting_on_locks() < count:
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {count} connections to wait on a lock")
        time.sleep(0.01)


def _in_thread(work: Callable[[], object], results: list[object]) -> threading.Thread:
    """Run `work` on a thread (its own database connection), keeping what it returned or
    raised."""

    def run() -> None:
        try:
            results.append(work())
        except Exception as exc:  # the outcome is what the test checks
            results.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _holding_the_packet_lock(packet: Packet, starts: list[Callable[[], threading.Thread]]) -> None:
    """Hold the packet's row lock, start each thread and wait until it queues behind the lock,
    then let them all go: they meet at the lock, in the order started."""
    with transaction.atomic():
        Packet.objects.select_for_update().get(pk=packet.pk)
        for n, start in enumerate(starts, 1):
            start()
            _wait_until_waiting(n)


def _join(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(DEADLINE)
        assert not thread.is_alive()


def _assert_snapshot_matches_items(packet: Packet) -> None:
    packet.refresh_from_db()
    items = list(PacketItem.objects.filter(packet=packet).select_related("document"))
    pages = list(FrozenPage.objects.filter(packet=packet).order_by("position"))
    assert packet.status == "frozen"
    # Every item is in the snapshot (nothing slipped in after freezing), and nothing else is.
    assert {p.item_id for p in pages} == {i.pk for i in items}
    assert packet.page_count == len(pages) == sum(i.document.page_count for i in items)
    assert packet.content_hash == services.content_hash(pages)


def test_many_editors_adding_at_once_lose_no_item(lawyer: User, staff: User, case: Case) -> None:
    packet = services.packet_create(user=lawyer, case_id=case.pk, title="Busy")
    documents = [make_document(case, lawyer, filename=f"d{n}.pdf") for n in range(6)]
    barrier = threading.Barrier(len(documents))
    results: list[object] = []

    def adder(document: Document, user: User) -> Callable[[], object]:
        def work() -> object:
            barrier.wait(DEADLINE)
            return services.packet_items_add(
                user=user, case_id=case.pk, packet_id=packet.pk, selections=[selection(document)]
            )

        return work

    threads = [
        _in_thread(adder(d, lawyer if n % 2 else staff), results) for n, d in enumerate(documents)
    ]
    _join(threads)

    assert not [r for r in results if isinstance(r, Exception)], results
    items = PacketItem.objects.filter(packet=packet).order_by("order")
    assert sorted(items.values_list("document_id", flat=True)) == sorted(d.pk for d in documents)
    assert list(items.values_list("order", flat=True)) == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("freezer_first", [True, False])
def test_adding_while_another_freezes_never_adds_to_a_frozen_packet(
    lawyer: User, staff: User, case: Case, freezer_first: bool
) -> None:
    packet = services.packet_create(user=lawyer, case_id=case.pk, title="Race")
    services.packet_items_add(
        user=lawyer,
        case_id=case.pk,
        packet_id=packet.pk,
        selections=[selection(make_document(case, lawyer))],
    )
    late = make_document(case, lawyer, filename="late.pdf")
    added: list[object] = []
    frozen: list[object] = []
    threads: list[threading.Thread] = []

    def start_adder() -> threading.Thread:
        work = lambda: services.packet_items_add(  # noqa: E731
            user=staff, case_id=case.pk, packet_id=packet.pk, selections=[selection(late)]
        )
        threads.append(_in_thread(work, added))
        return threads[-1]

    def start_freezer() -> threading.Thread:
        work = lambda: services.packet_freeze(  # noqa: E731
            user=lawyer, case_id=case.pk, packet_id=packet.pk
        )
        threads.append(_in_thread(work, frozen))
        return threads[-1]

    order = [start_freezer, start_adder] if freezer_first else [start_adder, start_freezer]
    _holding_the_packet_lock(packet, order)
    _join(threads)

    assert isinstance(frozen[0], Packet), frozen
    (outcome,) = added
    late_items = PacketItem.objects.filter(packet=packet, document=late)
    if isinstance(outcome, Conflict):
        # The adder came second and saw the frozen state.
        assert "make a new version" in str(outcome) and not late_items.exists()
    else:
        # The adder came first: its item is in the snapshot.
        assert isinstance(outcome, list) and late_items.exists()
    _assert_snapshot_matches_items(packet)


def test_two_freezes_at_once_freeze_once(lawyer: User, staff: User, case: Case) -> None:
    packet = services.packet_create(user=lawyer, case_id=case.pk, title="Twice")
    services.packet_items_add(
        user=lawyer,
        case_id=case.pk,
        packet_id=packet.pk,
        selections=[selection(make_document(case, lawyer))],
    )
    results: list[object] = []
    threads: list[threading.Thread] = []

    def starter(user: User) -> Callable[[], threading.Thread]:
        def start() -> threading.Thread:
            work = lambda: services.packet_freeze(  # noqa: E731
                user=user, case_id=case.pk, packet_id=packet.pk
            )
            threads.append(_in_thread(work, results))
            return threads[-1]

        return start

    _holding_the_packet_lock(packet, [starter(lawyer), starter(staff)])
    _join(threads)

    assert sorted(type(r).__name__ for r in results) == ["Conflict", "Packet"]
    assert FrozenPage.objects.filter(packet=packet).count() == 3
    _assert_snapshot_matches_items(packet)


def test_two_new_versions_at_once_make_one(lawyer: User, staff: User, case: Case) -> None:
    packet = services.packet_create(user=lawyer, case_id=case.pk, title="Versions")
    services.packet_items_add(
        user=lawyer,
        case_id=case.pk,
        packet_id=packet.pk,
        selections=[selection(make_document(case, lawyer))],
    )
    services.packet_freeze(user=lawyer, case_id=case.pk, packet_id=packet.pk)
    barrier = threading.Barrier(2)
    results: list[object] = []

    def work(user: User) -> Callable[[], object]:
        def run() -> object:
            barrier.wait(DEADLINE)
            return services.packet_new_version(user=user, case_id=case.pk, packet_id=packet.pk)

        return run

    _join([_in_thread(work(lawyer), results), _in_thread(work(staff), results)])

    assert sorted(type(r).__name__ for r in results) == ["Conflict", "Packet"]
    assert list(
        Packet.objects.filter(series=packet.pk).order_by("version").values_list("version", "status")
    ) == [(1, "frozen"), (2, "editable")]


def test_new_versions_from_two_frozen_versions_at_once_make_one(
    lawyer: User, staff: User, case: Case
) -> None:
    packet = services.packet_create(user=lawyer, case_id=case.pk, title="Versions")
    services.packet_items_add(
        user=lawyer,
        case_id=case.pk,
        packet_id=packet.pk,
        selections=[selection(make_document(case, lawyer))],
    )
    services.packet_freeze(user=lawyer, case_id=case.pk, packet_id=packet.pk)
    second = services.packet_new_version(user=lawyer, case_id=case.pk, packet_id=packet.pk)
    services.packet_freeze(user=lawyer, case_id=case.pk, packet_id=second.pk)
    barrier = threading.Barrier(2)
    results: list[object] = []

    def work(user: User, source: Packet) -> Callable[[], object]:
        def run() -> object:
            barrier.wait(DEADLINE)
            return services.packet_new_version(user=user, case_id=case.pk, packet_id=source.pk)

        return run

    # Each starts from another row of the series: both lock the series in one order, so one
    # waits for the other (no deadlock) and then sees its new version.
    _join([_in_thread(work(lawyer, packet), results), _in_thread(work(staff, second), results)])

    assert sorted(type(r).__name__ for r in results) == ["Conflict", "Packet"], results
    assert list(
        Packet.objects.filter(series=packet.pk).order_by("version").values_list("version", "status")
    ) == [(1, "frozen"), (2, "frozen"), (3, "editable")]
