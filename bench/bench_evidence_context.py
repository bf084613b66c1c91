"""Choosing a stage's evidence from a frozen packet of 10,000 pages (issue 12, requirement 4):
ranking the pages by PostgreSQL full text search against the instructions and the section
(apps.drafting.pipeline.ranking), then filling a 32,768-token budget counted by a fake
llama-server's /tokenize over HTTP (apps.drafting.pipeline.context).

Peer in the same run, on the same pages and query: the same ranking with every page's text
vector computed from the frozen text at query time (what ranking does for a page whose document
was read again after freezing, and what it would do everywhere without the documents' stored
vectors). Reported: medians of ROUNDS, the ratio, the pages matched and sent, tokenizer calls.

The packet is synthetic and deterministic (seeded): 200 documents of 50 pages, each page about
300 words from a 6,000-word vocabulary with Zipf frequencies; the documents' pages carry their
stored search vectors as ingestion writes them. Built once in the bench database and reused.

Figures on 2026-12-02, 02:10 (2 cores, load average 7.8 from other work): ranking 1.06 s with
the stored vectors against 9.78 s computing them (9.2x, the same order); every page matched
(the query's words are among the vocabulary's commonest); choosing and counting the evidence
1.57 s: 99 pages sent, 30,992 tokens counted by /tokenize in 106 calls.
"""

import asyncio
import hashlib
import json
import os
import random
import statistics
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django.setup()

from django.contrib.postgres.search import SearchVector  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from apps.accounts.models import User  # noqa: E402
from apps.cases.models import Case, Membership  # noqa: E402
from apps.cluster.models import Backend, Deployment  # noqa: E402
from apps.documents.models import Blob, Document, Page  # noqa: E402
from apps.drafting.pipeline import context, ranking  # noqa: E402
from apps.evidence.models import FrozenPage, Packet, PacketItem  # noqa: E402
from apps.evidence.services import packets as packet_services  # noqa: E402
from lexweb_dev.fakebackend import FakeBackend, FakeSettings  # noqa: E402

SEED = 20261202
PAGES = 10_000
PAGES_PER_DOCUMENT = 50
WORDS_PER_PAGE = 300
CASE_NUMBER = "BENCH-EVIDENCE-10K"
BUDGET_TOKENS = 32_768
ROUNDS = 3
INSTRUCTIONS = "Draft a motion on the termination notice served for unpaid rent on the warehouse."


def _texts() -> list[str]:
    rng = random.Random(SEED)  # noqa: S311  (deterministic test data)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(3, 10))) for _ in range(6000)]
    vocabulary[:6] = ["termination", "notice", "rent", "warehouse", "unpaid", "served"]
    weights = [1 / (rank + 8) for rank in range(len(vocabulary))]
    return [
        " ".join(rng.choices(vocabulary, weights=weights, k=WORDS_PER_PAGE)) + "."
        for _ in range(PAGES)
    ]


def _packet() -> Packet:
    existing = Packet.objects.filter(case__number=CASE_NUMBER).first()
    if existing is not None and existing.page_count == PAGES:
        return existing
    if existing is not None:
        raise SystemExit(f"Remove the bench case {CASE_NUMBER} (made for other settings) first.")
    texts = _texts()
    user, _ = User.objects.get_or_create(
        email="bench-evidence@firm.test", defaults={"full_name": "Bench", "role": "lawyer"}
    )
    case = Case.objects.create(number=CASE_NUMBER, title="Bench", client="Bench", created_by=user)
    Membership.objects.create(case=case, user=user, role=Membership.Role.LAWYER)
    packet = Packet.objects.create(case=case, title="Bench", created_by=user)
    frozen: list[FrozenPage] = []
    for d in range(PAGES // PAGES_PER_DOCUMENT):
        digest = hashlib.sha256(f"{CASE_NUMBER}-{d}".encode()).hexdigest()
        blob, _ = Blob.objects.get_or_create(sha256=digest, defaults={"size": 1})
        document = Document.objects.create(
            case=case, blob=blob, filename=f"bench-{d}.pdf", kind="pdf",
            content_type="application/pdf", origin="client", status="ready",
            page_count=PAGES_PER_DOCUMENT, pages_done=PAGES_PER_DOCUMENT, uploaded_by=user,
        )  # fmt: skip
        item = PacketItem.objects.create(
            packet=packet, document=document, order=d + 1, reason="bench", added_by=user
        )
        chunk = texts[d * PAGES_PER_DOCUMENT : (d + 1) * PAGES_PER_DOCUMENT]
        Page.objects.bulk_create(
            Page(document=document, number=n, text=text, source="text_layer")
            for n, text in enumerate(chunk, start=1)
        )
        Page.objects.filter(document=document).update(
            search_vector=SearchVector("text", config="english")
        )
        for n, text in enumerate(chunk, start=1):
            frozen.append(
                FrozenPage(
                    packet_id=packet.pk,
                    item_id=item.pk,
                    position=len(frozen) + 1,
                    document_id=document.pk,
                    page_number=n,
                    bates=[f"BEV{len(frozen) + 1:07d}"],
                    text=text,
                    text_sha256=hashlib.sha256(text.encode()).hexdigest(),
                    source="text_layer",
                    ocr_confidence=None,
                    origin="client",
                    untrusted=False,
                )
            )
    with transaction.atomic():
        packet_services._insert_frozen(frozen)
        Packet.objects.filter(pk=packet.pk).update(
            status=Packet.Status.FROZEN,
            content_hash=packet_services.content_hash(frozen),
            page_count=len(frozen),
            frozen_at=timezone.now(),
            frozen_by=user,
        )
    return Packet.objects.get(pk=packet.pk)


def _computed_peer(packet_id: int, query: str) -> list[int]:
    """The ranking SQL with every vector computed from the frozen text."""
    sql = ranking._RANK_SQL.format(
        frozen=FrozenPage._meta.db_table, page=Page._meta.db_table
    ).replace("dp.search_vector IS NOT NULL AND dp.text = fp.text", "false")
    words = ranking.query_words(query)
    params: dict[str, str | int] = {
        "config": ranking.SEARCH_CONFIG,
        "query": " or ".join(words),
        "max_chars": ranking.MAX_VECTOR_CHARS,
        "packet": packet_id,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]


def _timed(call, *args, **kwargs):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = call(*args, **kwargs)
    return time.perf_counter() - started, value


async def _select(pages: list[FrozenPage], ranked: list[int], base_url: str) -> context.Evidence:
    backend = Backend(name="bench-llama", kind="llama_cpp", base_url=base_url)
    counter = context.TokenCounter(Deployment(backend=backend, model_name="bench"))
    try:
        return await context.evidence_select(
            pages, ranked=ranked, budget_tokens=BUDGET_TOKENS, counter=counter
        )
    finally:
        await counter.aclose()


def main() -> None:
    packet = _packet()
    query = ranking.query_text(INSTRUCTIONS, "")
    ours, peer, selects = [], [], []
    pages = list(
        FrozenPage.objects.filter(packet=packet).select_related("document").order_by("position")
    )
    with FakeBackend.in_thread(FakeSettings(kind="llama_cpp")) as fake:
        for _ in range(ROUNDS):
            seconds, ranked = _timed(ranking.frozen_pages_ranked, packet_id=packet.pk, query=query)
            ours.append(seconds)
            peer_seconds, peer_ranked = _timed(_computed_peer, packet.pk, query)
            peer.append(peer_seconds)
            ids = [r.page_id for r in ranked]
            started = time.perf_counter()
            evidence = asyncio.run(_select(pages, ids, fake.base_url))
            selects.append(time.perf_counter() - started)
    print(
        json.dumps(
            {
                "bench": "evidence_context",
                "pages": PAGES,
                "budget_tokens": BUDGET_TOKENS,
                "rank_stored_vectors_s": round(statistics.median(ours), 3),
                "rank_computed_vectors_peer_s": round(statistics.median(peer), 3),
                "ratio": round(statistics.median(peer) / statistics.median(ours), 1),
                "same_order": ids == peer_ranked,
                "pages_matched": len(ids),
                "select_s": round(statistics.median(selects), 3),
                "pages_sent": evidence.budget["pages_sent"],
                "used_tokens": evidence.budget["used_tokens"],
                "tokenizer_counts": evidence.budget["tokenizer_counts"],
                "counted_by": evidence.budget["counted_by"],
                "load_average": os.getloadavg()[0],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
