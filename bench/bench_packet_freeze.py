"""Freezing an evidence packet of 5,000 pages (100 documents of 50 pages of real court text, each
page with a Bates label), end to end through `packet_freeze`: one transaction with the packet
row locked, provenance re-checked for every item, the pages read in one query, every page's
SHA-256, the content hash, and the snapshot rows written with PostgreSQL's COPY.

Peers in the same run, on the same pages, each a full freeze as well (same reads, same hashes):
  (a) naive: one INSERT per page (`FrozenPage.objects.create` in a loop), the way a first
      version would write it;
  (b) Django's `bulk_create` (multi-row INSERTs of 1,000): the fastest way through the ORM.
Target (issue 10): lexweb's freeze under 5 s. The corpus is built once in the bench database
and reused; each run's packets are frozen on the spot and removed afterwards.
"""

import json
import os
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django.setup()

import pymupdf  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from apps.accounts.models import User  # noqa: E402
from apps.cases.models import Case, Membership  # noqa: E402
from apps.documents.models import BatesPage, Blob, Document, Page, Production  # noqa: E402
from apps.evidence.models import FrozenPage, Packet, PacketItem  # noqa: E402
from apps.evidence.selectors import packets as packet_selectors  # noqa: E402
from apps.evidence.services import packets  # noqa: E402

REAL = Path(settings.BASE_DIR).parent / "shared" / "fixtures" / "real"
DOCUMENTS = 100
PAGES_PER_DOCUMENT = 50  # 100 x 50 = 5,000 pages
CASE_NUMBER = "BENCH-PACKET-FREEZE-5K"
ROUNDS = 3
TARGET_SECONDS = 5.0


def _real_pages() -> list[str]:
    texts: list[str] = []
    for path in sorted(REAL.glob("*.pdf")):
        with pymupdf.open(path) as document:
            texts.extend(page.get_text() for page in document if page.get_text().strip())
    return texts or ["No fixtures here: placeholder page text. " * 60]


def _corpus() -> tuple[User, Case, list[Document]]:
    case = Case.objects.filter(number=CASE_NUMBER).first()
    if case is not None:
        documents = list(Document.objects.filter(case=case).order_by("pk"))
        pages = Page.objects.filter(document__case=case).count()
        if len(documents) == DOCUMENTS and pages == DOCUMENTS * PAGES_PER_DOCUMENT:
            return case.created_by, case, documents
    user = User.objects.create_user(
        f"freeze{time.time_ns()}@bench.test", None, full_name="B", role="lawyer"
    )
    case = Case.objects.create(
        title="Packet freeze bench", number=CASE_NUMBER, client="B", created_by=user
    )
    Membership.objects.create(case=case, user=user, role="lawyer")
    texts = _real_pages()
    rng = random.Random(10)  # noqa: S311  (a repeatable corpus, not a secret)
    documents = []
    production = Production.objects.create(
        case=case, volume="BENCH001", prefix="BENCH", first_number=1,
        last_number=DOCUMENTS * PAGES_PER_DOCUMENT, status="ready",
        page_count=DOCUMENTS * PAGES_PER_DOCUMENT, created_by=user,
    )  # fmt: skip
    for d in range(DOCUMENTS):
        blob = Blob.objects.create(sha256=f"f{d:063x}{time.time_ns()}"[:64], size=1)
        document = Document.objects.create(
            case=case, blob=blob, filename=f"freeze-{d}.pdf", kind="pdf",
            content_type="application/pdf", origin="opposing" if d % 5 == 0 else "client",
            status="ready", provenance="clear", page_count=PAGES_PER_DOCUMENT,
            pages_done=PAGES_PER_DOCUMENT, uploaded_by=user,
        )  # fmt: skip
        documents.append(document)
        Page.objects.bulk_create(
            Page(document=document, number=n + 1, source="text_layer", text=rng.choice(texts))
            for n in range(PAGES_PER_DOCUMENT)
        )
        BatesPage.objects.bulk_create(
            BatesPage(
                case=case,
                prefix="BENCH",
                number=d * PAGES_PER_DOCUMENT + n + 1,
                production=production,
                document=document,
                page_number=n + 1,
                production_page=d * PAGES_PER_DOCUMENT + n + 1,
            )
            for n in range(PAGES_PER_DOCUMENT)
        )
    return user, case, documents


def _editable_packet(user: User, case: Case, documents: list[Document]) -> Packet:
    packet = packets.packet_create(user=user, case_id=case.pk, title="Bench packet")
    packets.packet_items_add(
        user=user,
        case_id=case.pk,
        packet_id=packet.pk,
        selections=[packets.Selection(d.pk, None, None, "bench") for d in documents],
    )
    return packet


def _freeze_with(write: Callable[[list[FrozenPage]], None], packet: Packet, user: User) -> None:
    """A peer's full freeze: the same lock, reads and hashes as lexweb's, its own writes."""
    with transaction.atomic():
        locked = Packet.objects.select_for_update().get(pk=packet.pk)
        items = list(
            PacketItem.objects.filter(packet=locked).select_related("document").order_by("order")
        )
        for item in items:
            assert packet_selectors.provenance_problem(document=item.document, user=user) is None
        pages = packet_selectors.snapshot_pages(locked, items)
        write(pages)
        Packet.objects.filter(pk=locked.pk).update(
            status="frozen", content_hash=packets.content_hash(pages), page_count=len(pages)
        )


def _naive(pages: list[FrozenPage]) -> None:
    for page in pages:
        page.save(force_insert=True)


def _bulk(pages: list[FrozenPage]) -> None:
    FrozenPage.objects.bulk_create(pages, batch_size=1000)


def _remove(packet: Packet) -> None:
    """Drop a bench packet. Frozen packets never change (migration evidence 0002): only a
    transaction that declares snapshot maintenance may delete one."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL lexweb.snapshot_maintenance = 'on'")
        FrozenPage.objects.filter(packet=packet).delete()
        PacketItem.objects.filter(packet=packet).delete()
        packet.delete()


def _timed(run: Callable[[Packet], None], user: User, case: Case, docs: list[Document]) -> float:
    packet = _editable_packet(user, case, docs)
    started = time.perf_counter()
    run(packet)
    elapsed = time.perf_counter() - started
    assert FrozenPage.objects.filter(packet=packet).count() == DOCUMENTS * PAGES_PER_DOCUMENT
    _remove(packet)
    return elapsed


def main() -> None:
    user, case, documents = _corpus()

    def lexweb(packet: Packet) -> None:
        packets.packet_freeze(user=user, case_id=case.pk, packet_id=packet.pk)

    runs: dict[str, Callable[[Packet], None]] = {
        "lexweb": lexweb,
        "naive_per_row_insert": lambda p: _freeze_with(_naive, p, user),
        "django_bulk_create": lambda p: _freeze_with(_bulk, p, user),
    }
    # One untimed freeze first: the benchmarks before this one leave PostgreSQL's cache cold.
    _timed(runs["lexweb"], user, case, documents)
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _round in range(ROUNDS):
        for name, run in runs.items():
            samples[name].append(_timed(run, user, case, documents))
    ours = statistics.median(samples["lexweb"])
    naive = statistics.median(samples["naive_per_row_insert"])
    bulk = statistics.median(samples["django_bulk_create"])
    print(
        json.dumps(
            {
                "benchmark": "packet_freeze_5000_pages",
                "pages": DOCUMENTS * PAGES_PER_DOCUMENT,
                "items": DOCUMENTS,
                "rounds": ROUNDS,
                "lexweb_median_s": round(ours, 3),
                "lexweb_max_s": round(max(samples["lexweb"]), 3),
                "naive_per_row_insert_median_s": round(naive, 3),
                "django_bulk_create_median_s": round(bulk, 3),
                "speed_vs_naive": round(naive / ours, 2),
                "speed_vs_bulk_create": round(bulk / ours, 2),
                "target_s": TARGET_SECONDS,
                "under_target": max(samples["lexweb"]) < TARGET_SECONDS,
            }
        )
    )


if __name__ == "__main__":
    main()
