"""The re-check at freeze of a 500-item packet against a registry of 100,000 generated artifacts
(issue 20, Performance: under 2 s).

`packet_freeze` first looks every item's CLEAR, READY document up in the registry as it is then
(`apps.evidence.services.checks.documents_recheck`, found "freeze"): a draft registered since
the document was read is found now, recorded as a late flag, audited, and the freeze refused.
This benchmark times exactly that call, with the document ids `packet_freeze` gives it (its
own query on the packet's items), and beside it, in the same run:

  (a) naive: one lookup per document (`selectors.registry.artifact_matches_for_text` on each
      document's pages, one after the other), each hit recorded by the same `_flag_late` (the
      re-check as lexweb did it until 2026-12-05);
  (b) lexweb's re-check with no fingerprint kept (as for documents read before fingerprints
      were kept, or whose text changed): every text fingerprinted again, and kept;
  (c) the whole `packet_freeze` call (re-check included; it is refused, since some items are
      flagged by the re-check), to show what the re-check is of a freeze.

lexweb looks all the texts up in one statement (`artifact_matches_for_documents`), with each
text's fingerprint kept from its last check (the packet add's re-check, or intake). Figures
on 2026-12-05 17:11 (2 cores, load 2.0-2.1 from other work), two runs of two rounds each:
lexweb 0.91 / 0.87 s and 0.87 / 0.84 s; with no fingerprint kept 1.69 / 1.53 s and 1.61 /
1.53 s; naive 3.00 / 2.91 s and 3.04 / 2.87 s (3.3x and 3.5x); the whole refused freeze 1.05 /
1.02 s and 1.10 / 1.00 s. The same bench on lexweb as it was before (one lookup per document,
every text fingerprinted again): 17:04-17:05 at load 3.6-3.9, 5.13 / 3.11 s and 2.93 / 3.54 s;
17:12 at load 2.1-2.8, 3.23 / 3.34 s (the whole freeze 3.13 / 3.58 s). Fingerprinting the 500
texts alone takes 0.50 s.

Both ways must reach the same verdicts: the same late ArtifactMatch rows (document, artifact,
shares, found), the same documents flagged and the same "document.flagged" audit rows (target
and detail); the bench asserts it. Between runs the late flags are taken back (the matches deleted,
the documents CLEAR again); audit rows stay (they are append-only).

The registry is the one of bench/bench_fingerprint_lookup.py (100,000 draft-like texts, 29.0
million fingerprint rows: the same texts, made by its code, under its mark), loaded here with
COPY when the bench database does not hold it yet (with the `text_key` that migration evidence
0006 requires), reused otherwise (the load took 314 s on the 2-core machine, other work
running). The packet: 500 documents of one case, 3 pages each (1,500
pages): page 1 is a page of a real court document (which shares quoted passages with some
drafts, as a client's documents do), pages 2-3 are sentences of words drawn from real court
documents, every page with a running head and a Bates stamp. Five of them carry a registered
draft's text on pages 2-3 (registered "after they were added"): the re-check must find those
five and nothing else. The items are written directly (`packet_items_add` would re-check and
flag them at add).
"""

import hashlib
import json
import multiprocessing
import os
import random
import statistics
import time
from collections.abc import Callable

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django.setup()

from django.apps import apps as django_apps  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from apps.accounts.models import AuditEvent, User  # noqa: E402
from apps.cases.models import Case, Membership  # noqa: E402
from apps.documents.models import Blob, Document, Page  # noqa: E402
from apps.evidence import fingerprint as fp  # noqa: E402
from apps.evidence.models import ArtifactMatch, Packet, PacketItem  # noqa: E402
from apps.evidence.selectors import registry as registry_selectors  # noqa: E402
from apps.evidence.services import checks, packets  # noqa: E402
from apps.evidence.services import registry as registry_services  # noqa: E402
from bench import bench_fingerprint_lookup as registry_bench  # noqa: E402
from lexweb.errors import DomainError  # noqa: E402

CASE_NUMBER = "BENCH-FREEZE-RECHECK-500"
DOCUMENTS = 500
PAGES = 3
MATCHING = 5  # documents carrying a registered draft's text
ROUNDS = 2
TARGET_SECONDS = 2.0


# --- The registry (bench_fingerprint_lookup's texts and mark; loaded here with every column
# the artifact table now requires, `text_key` included) -------------------------------------


def _worker_make(n: int) -> tuple[int, str, int, str, list[int], list[bool]]:
    """What `artifact_register` would store for draft `n`: its bytes' digest and size, its text
    key, its hashes and which of them are quoted."""
    text = registry_bench._artifact_text(n, registry_bench._WORKER[0])
    data = text.encode("utf-8")
    hashes, quoted = fp.fingerprint_with_quotes(text)
    ordered = sorted(hashes)
    key = registry_services._text_key(hashes, quoted) if hashes else ""
    return (
        n,
        hashlib.sha256(data).hexdigest(),
        len(data),
        key,
        ordered,
        [h in quoted for h in ordered],
    )


def _registry_build() -> float:
    """The registry of bench_fingerprint_lookup (same texts, same mark), built in one
    transaction with COPY, secondary indexes dropped for the load and re-created from their own
    definitions, foreign-key triggers off (the ids are ours). Returns the seconds it took."""
    started = time.perf_counter()
    corpus = registry_bench._corpus(registry_bench._real_pages())
    artifacts = registry_bench.ARTIFACTS
    with multiprocessing.Pool(
        os.cpu_count() or 1, initializer=registry_bench._worker_init, initargs=(corpus,)
    ) as pool:
        made = pool.map(_worker_make, range(artifacts), chunksize=500)
    table, fingerprints = registry_bench.ARTIFACT_TABLE, registry_bench.FINGERPRINTS
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {fingerprints} WHERE artifact_id IN "  # noqa: S608  (our tables)
            f"(SELECT id FROM {table} WHERE source LIKE %s)",
            [registry_bench.MARK_ANY],
        )
        cursor.execute(f"DELETE FROM {table} WHERE source LIKE %s", [registry_bench.MARK_ANY])  # noqa: S608
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            [table, artifacts],
        )
        ids = [row[0] for row in cursor.fetchall()]
        indexes = registry_bench._secondary_indexes(cursor)
        for name, _definition in indexes:
            cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute("SET LOCAL session_replication_role = replica")
        raw = cursor.cursor
        with raw.copy(
            f"COPY {table} (id, sha256, kind, media_type, title, source, size, fingerprint_count, "
            "unquoted_fingerprint_count, evidence_fingerprint_count, text_key, created_at) "
            "FROM STDIN"
        ) as copy:
            for n, sha256, size, key, hashes, quoted in made:
                copy.write_row(
                    (ids[n], sha256, "model_output", "text/markdown", f"Bench draft {n}",
                     registry_bench.MARK, size, len(hashes), len(hashes) - sum(quoted), 0, key,
                     "2026-12-01T00:00:00Z")
                )  # fmt: skip
        with raw.copy(f"COPY {fingerprints} (artifact_id, hash, quoted) FROM STDIN") as copy:
            for n, _sha256, _size, _key, hashes, quoted in made:
                for value, inside in zip(hashes, quoted, strict=True):
                    copy.write_row((ids[n], value, inside))
        cursor.execute("SET LOCAL session_replication_role = origin")
        for _name, definition in indexes:
            cursor.execute(definition)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {table}")
        cursor.execute(f"VACUUM ANALYZE {fingerprints}")
    return time.perf_counter() - started


# --- The packet ------------------------------------------------------------------------------


def _pages_of(rng: random.Random, real: list[str], vocabulary: list[str]) -> list[str]:
    made = [
        " ".join(
            " ".join(rng.choices(vocabulary, k=rng.randint(12, 28))).capitalize() + "."
            for _ in range(rng.randint(12, 20))
        )
        for _ in range(PAGES - 1)
    ]
    return [rng.choice(real), *made]


def _packet() -> tuple[User, Case, Packet, list[int]]:
    """The bench case and its packet (built once), and the ids of the matching documents."""
    case = Case.objects.filter(number=CASE_NUMBER).first()
    if case is not None:
        packet = Packet.objects.filter(case=case).order_by("pk").first()
        if packet is not None and PacketItem.objects.filter(packet=packet).count() == DOCUMENTS:
            matching = list(
                Document.objects.filter(case=case, filename__startswith="drafted-")
                .order_by("pk")
                .values_list("pk", flat=True)
            )
            return case.created_by, case, packet, matching
    real = registry_bench._real_pages()
    corpus = registry_bench._corpus(real)
    rng = random.Random(500)  # noqa: S311  (a repeatable packet, not a secret)
    user = User.objects.create_user(
        f"recheck{time.time_ns()}@bench.test", None, full_name="B", role="lawyer"
    )
    case = Case.objects.create(
        title="Freeze re-check bench", number=CASE_NUMBER, client="B", created_by=user
    )
    Membership.objects.create(case=case, user=user, role="lawyer")
    drafts = set(rng.sample(range(DOCUMENTS), MATCHING))
    stamp = "CONFIDENTIAL  Case 2:18-cv-10166  Page {p} of {of}\n{body}\nACME{n:06d}"
    documents, texts = [], []
    for d in range(DOCUMENTS):
        pages = _pages_of(rng, real, corpus.vocabulary)
        if d in drafts:
            words = registry_bench._artifact_text(1_000 + 97 * d, corpus).split()
            half = len(words) // 2
            pages = [pages[0], " ".join(words[:half]), " ".join(words[half:])]
        blob = Blob.objects.create(sha256=f"{time.time_ns():x}{d:08x}".rjust(64, "e")[:64], size=1)
        documents.append(
            Document(
                case=case, blob=blob,
                filename=f"{'drafted' if d in drafts else 'record'}-{d}.pdf", kind="pdf",
                content_type="application/pdf", origin="client", status="ready",
                provenance="clear", page_count=PAGES, pages_done=PAGES, uploaded_by=user,
            )
        )  # fmt: skip
        texts.append(
            [
                stamp.format(p=p + 1, of=PAGES, body=body, n=d * PAGES + p + 1)
                for p, body in enumerate(pages)
            ]
        )
    Document.objects.bulk_create(documents)
    Page.objects.bulk_create(
        Page(document=document, number=p + 1, source="text_layer", text=text)
        for document, pages in zip(documents, texts, strict=True)
        for p, text in enumerate(pages)
    )
    packet = packets.packet_create(user=user, case_id=case.pk, title="Re-check bench packet")
    now = timezone.now()
    PacketItem.objects.bulk_create(
        PacketItem(
            packet=packet, document=document, order=n + 1, reason="bench", added_by=user,
            added_at=now,
        )
        for n, document in enumerate(documents)
    )  # fmt: skip
    matching = [documents[d].pk for d in sorted(drafts)]
    return user, case, packet, matching


def _document_ids(case: Case, packet: Packet) -> list[int]:
    """What `packet_freeze` gives the re-check (its own query, evaluated by the re-check)."""
    return list(
        PacketItem.objects.filter(
            packet__case=case, packet_id=packet.pk, packet__status=Packet.Status.EDITABLE
        ).values_list("document_id", flat=True)
    )


def _naive(document_ids: list[int], found: str) -> list[int]:
    """(a) One registry lookup per document, as `documents_recheck` did until 2026-12-05."""
    documents = Document.objects.filter(
        pk__in=document_ids,
        provenance=Document.Provenance.CLEAR,
        status=Document.Status.READY,
    ).select_related("case")
    texts: dict[int, list[str]] = {}
    for document_id, text in (
        Page.objects.filter(document__in=documents)
        .order_by("document_id", "number")
        .values_list("document_id", "text")
    ):
        texts.setdefault(document_id, []).append(text)
    flagged = []
    for document in documents:
        hits = registry_selectors.artifact_matches_for_text(
            text="\n\n".join(texts.get(document.pk, [])), limit=checks.MAX_TEXT_MATCHES
        )
        if hits and checks._flag_late(document, hits, found=found):
            flagged.append(document.pk)
    return flagged


def _verdict(case: Case) -> list[tuple[int, int, float, float, str]]:
    return sorted(
        (
            m.document_id,
            m.artifact_id,
            round(m.share, 9),
            round(m.document_share or 0.0, 9),
            m.found,
        )
        for m in ArtifactMatch.objects.filter(document__case=case)
    )


def _reset(case: Case) -> None:
    """Take the late flags back: the next run finds the same documents CLEAR."""
    ArtifactMatch.objects.filter(document__case=case).delete()
    Document.objects.filter(case=case).update(provenance=Document.Provenance.CLEAR)


def _last_audit() -> int:
    return AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def _audits(case: Case, after: int) -> list[str]:
    """The "document.flagged" rows written since `after`: target and detail."""
    return sorted(
        json.dumps([target, detail], sort_keys=True)
        for target, detail in AuditEvent.objects.filter(
            case=case, action="document.flagged", pk__gt=after
        ).values_list("target_id", "detail")
    )


Outcome = tuple[list[tuple[int, int, float, float, str]], list[int], list[str]]


def _forget_fingerprints(case: Case) -> None:
    """Drop the fingerprints kept from earlier checks (as for documents read before they were
    kept): the re-check makes them all again."""
    try:
        kept = django_apps.get_model("evidence", "DocumentFingerprint")
    except LookupError:  # lexweb before 2026-12-05 kept none
        return
    kept.objects.filter(document__case=case).delete()


def _timed(
    run: Callable[[], object], case: Case, prepare: Callable[[Case], None] | None = None
) -> tuple[float, Outcome]:
    _reset(case)
    if prepare is not None:
        prepare(case)
    before = _last_audit()
    started = time.perf_counter()
    flagged = run()
    elapsed = time.perf_counter() - started
    flagged_ids = sorted(flagged) if isinstance(flagged, list) else []
    return elapsed, (_verdict(case), flagged_ids, _audits(case, before))


def main() -> None:
    registry_s = 0.0
    if not registry_bench._registry_ready():
        registry_s = _registry_build()
    started = time.perf_counter()
    user, case, packet, matching = _packet()
    packet_s = time.perf_counter() - started
    found = ArtifactMatch.Found.FREEZE

    def lexweb() -> list[int]:
        return checks.documents_recheck(document_ids=_document_ids(case, packet), found=found)

    def naive() -> list[int]:
        return _naive(_document_ids(case, packet), found)

    def freeze() -> None:
        try:
            packets.packet_freeze(user=user, case_id=case.pk, packet_id=packet.pk)
        except DomainError:
            return
        raise AssertionError("the freeze went through: the re-check found nothing")

    _timed(lexweb, case)  # one untimed pass: the benches before leave the cache cold
    runs: dict[str, tuple[Callable[[], object], Callable[[Case], None] | None]] = {
        "lexweb": (lexweb, None),
        "lexweb_no_kept_fingerprints": (lexweb, _forget_fingerprints),
        "naive": (naive, None),
        "freeze": (freeze, None),
    }
    samples: dict[str, list[float]] = {name: [] for name in runs}
    outcomes: dict[str, Outcome] = {}
    for _round in range(ROUNDS):
        for name, (run, prepare) in runs.items():
            elapsed, outcome = _timed(run, case, prepare)
            samples[name].append(elapsed)
            if name != "freeze":
                outcomes[name] = outcome
            else:
                assert outcome[0] == outcomes["lexweb"][0], "packet_freeze flagged otherwise"
                assert outcome[2] == outcomes["lexweb"][2], "packet_freeze audited otherwise"
    _reset(case)
    verdict, flagged, audits = outcomes["lexweb"]
    assert outcomes["naive"] == outcomes["lexweb"], "the naive re-check reached other verdicts"
    assert outcomes["lexweb_no_kept_fingerprints"] == outcomes["lexweb"]
    assert flagged == sorted(matching), (flagged, matching)
    texts = ["\n\n".join(p) for p in _texts(case).values()]
    fp_started = time.perf_counter()
    for text in texts:
        fp.fingerprint(text)
    fingerprinting_s = time.perf_counter() - fp_started
    ours = statistics.median(samples["lexweb"])
    slow = statistics.median(samples["naive"])
    print(
        json.dumps(
            {
                "benchmark": "freeze_recheck_500_items_100k_artifacts",
                "artifacts": registry_bench.GeneratedArtifact.objects.filter(
                    source=registry_bench.MARK
                ).count(),
                "items": DOCUMENTS,
                "pages": DOCUMENTS * PAGES,
                "late_flags": len(verdict),
                "documents_flagged": len(flagged),
                "audit_rows": len(audits),
                "same_verdicts_as_naive": True,
                "rounds": ROUNDS,
                "registry_setup_s": round(registry_s, 1),
                "packet_setup_s": round(packet_s, 1),
                "lexweb_recheck_s": [round(s, 3) for s in samples["lexweb"]],
                "lexweb_recheck_no_kept_fingerprints_s": [
                    round(s, 3) for s in samples["lexweb_no_kept_fingerprints"]
                ],
                "naive_per_document_s": [round(s, 3) for s in samples["naive"]],
                "packet_freeze_refused_s": [round(s, 3) for s in samples["freeze"]],
                "fingerprinting_all_items_s": round(fingerprinting_s, 3),
                "speed_vs_naive": round(slow / ours, 2),
                "speed_vs_naive_no_kept_fingerprints": round(
                    slow / statistics.median(samples["lexweb_no_kept_fingerprints"]), 2
                ),
                "target_s": TARGET_SECONDS,
                "under_target": max(samples["lexweb"]) < TARGET_SECONDS,
            }
        )
    )


def _texts(case: Case) -> dict[int, list[str]]:
    texts: dict[int, list[str]] = {}
    for document_id, text in (
        Page.objects.filter(document__case=case)
        .order_by("document_id", "number")
        .values_list("document_id", "text")
    ):
        texts.setdefault(document_id, []).append(text)
    return texts


if __name__ == "__main__":
    main()
