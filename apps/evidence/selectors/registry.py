"""Lookups in the generated-artifact registry, by bytes and by text.

These read the site-wide registry and return artifacts of any case: they are for lexweb's own
checks (apps.evidence.services.checks), not for showing to people. Whoever shows a match names
the artifact only to members of the artifact's case.

The text lookup never compares against every artifact. In one SQL statement (with the
planner told to probe the hash index directly, see `_exact_counts`):

1. The upload's distinct fingerprint hashes are probed in the hash index, at most
   `STOP_POSTINGS + 1` rows each. A hash found in more than `STOP_POSTINGS` artifacts is a
   stop-shingle (a caption, a signature block, a quoted clause that many drafts share): it
   does not nominate candidates, so one common caption cannot make a lookup read thousands of
   rows.
2. Candidates are the artifacts that the remaining hashes hit often enough that, even counting
   every stop-shingle of the upload in their favour, they could reach the threshold, or the
   upload could be a piece of them (`document_is_piece`); at most `CANDIDATES`, best first.
3. For the candidates, the intersection with all of the upload's hashes (stop-shingles
   included) is counted exactly, through the (artifact, hash) unique index, so the share that
   is reported and compared with the threshold is the exact one.
"""

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from apps.documents.models import Document
from apps.evidence import fingerprint as fp
from apps.evidence.models import ArtifactFingerprint, FrozenPage, GeneratedArtifact, Packet

# A hash in more artifacts than this is boilerplate; it nominates no candidate (see step 1).
STOP_POSTINGS = 200
# Most candidates counted exactly per lookup (step 3).
CANDIDATES = 50
# Most hashes looked up in one statement by `artifact_matches_for_documents` (a packet's 500
# documents of three pages each, some 185,000 hashes, are one statement).
BATCH_HASHES = 250_000
# PostgreSQL's work_mem for one such statement.
BATCH_WORK_MEM = "64MB"
# Artifacts with fewer hashes than this (a line or two of text) are matched by bytes only: a
# sentence shared with a court order is not a reason to flag the order.
MIN_FINGERPRINTS = 8
# A document is a piece of an artifact when at least this many of the artifact's own
# (unquoted) hashes, and at least this share of the document's hashes, are in common
# (`document_is_piece`). Measured by H6 (bench/provenance_eval.py): single printed pages of the
# eval's drafts 0.72-1.0, legitimate documents at most 0.13.
PIECE_MIN_COMMON = 10
PIECE_DOCUMENT_SHARE = 0.5


@dataclass(frozen=True)
class TextMatch:
    artifact: GeneratedArtifact
    share: float  # |artifact ∩ text| / |artifact|: how much of the artifact the text holds
    document_share: float  # |artifact ∩ text| / |text|: how much of the text is the artifact
    # |artifact's own (unquoted) hashes ∩ text| / |text|: how much of the text is the
    # artifact's own words (what it quotes left out).
    own_document_share: float = 0.0


def artifact_for_bytes(*, sha256: str) -> GeneratedArtifact | None:
    """The artifact with exactly these bytes (hex SHA-256, any case), or None."""
    digest = sha256.strip().lower()
    if len(digest) != 64:
        return None
    return GeneratedArtifact.objects.filter(sha256=digest).first()


def artifact_matches_for_text(
    *, text: str, limit: int = 5, threshold: float | None = None
) -> list[TextMatch]:
    """Artifacts that `text` substantially holds, highest share first, at most `limit`:
    either the share of the artifact found in the text is at least `threshold` (default: the
    setting LEXWEB_ARTIFACT_MATCH_THRESHOLD), or the text is mostly a piece of the artifact
    (see `document_is_piece`)."""
    return artifact_matches_for_hashes(
        hashes=fp.fingerprint(text), limit=limit, threshold=threshold
    )


def document_is_piece(*, own_common: int, document_hashes: int) -> bool:
    """A document that is mostly the artifact's own words is a piece of it, however little of
    the artifact it holds (one printed page of a long draft, uploaded alone): at least
    `PIECE_MIN_COMMON` of the artifact's unquoted hashes, and they are at least
    `PIECE_DOCUMENT_SHARE` of the document's. The artifact's quotations do not count, so an
    exhibit that a draft quotes whole stays evidence."""
    return own_common >= PIECE_MIN_COMMON and own_common >= PIECE_DOCUMENT_SHARE * document_hashes


def artifact_matches_for_hashes(
    *, hashes: set[int], limit: int = 5, threshold: float | None = None
) -> list[TextMatch]:
    """As `artifact_matches_for_text`, for a fingerprint already computed."""
    if threshold is None:
        threshold = float(settings.LEXWEB_ARTIFACT_MATCH_THRESHOLD)
    if not hashes or limit <= 0:
        return []
    counts = _exact_counts(hashes=sorted(hashes), threshold=threshold)
    artifacts = GeneratedArtifact.objects.in_bulk(list(counts))
    return _matches(counts, artifacts, size=len(hashes), threshold=threshold, limit=limit)


def artifact_matches_for_documents(
    *, hashes: dict[int, set[int]], limit: int = 5, threshold: float | None = None
) -> dict[int, list[TextMatch]]:
    """`artifact_matches_for_hashes` for many fingerprints at once ({key: hashes}, e.g. one per
    document), in one SQL statement per `BATCH_HASHES` hashes: the same matches, key by key,
    as one lookup per key (the same steps, each key's stop-shingles, candidates and exact
    counts its own), without a round trip and a plan per key. Keys with no match (or no
    hashes) are left out."""
    if threshold is None:
        threshold = float(settings.LEXWEB_ARTIFACT_MATCH_THRESHOLD)
    if limit <= 0:
        return {}
    counts: dict[int, dict[int, tuple[int, int]]] = {}
    batch: dict[int, list[int]] = {}
    size = 0
    for key, key_hashes in hashes.items():
        if not key_hashes:
            continue
        batch[key] = sorted(key_hashes)
        size += len(key_hashes)
        if size >= BATCH_HASHES:
            counts.update(_exact_counts_many(batch, threshold=threshold))
            batch, size = {}, 0
    if batch:
        counts.update(_exact_counts_many(batch, threshold=threshold))
    artifacts = GeneratedArtifact.objects.in_bulk(
        list({artifact_id for found in counts.values() for artifact_id in found})
    )
    result = {}
    for key, found in counts.items():
        matches = _matches(
            found, artifacts, size=len(hashes[key]), threshold=threshold, limit=limit
        )
        if matches:
            result[key] = matches
    return result


def _matches(
    counts: dict[int, tuple[int, int]],
    artifacts: dict[int, GeneratedArtifact],
    *,
    size: int,
    threshold: float,
    limit: int,
) -> list[TextMatch]:
    """The candidates' exact counts made matches: the share reaches the threshold, or the text
    (of `size` hashes) is a piece of the artifact; highest share first, at most `limit`."""
    matches = []
    for artifact_id, (common, own_common) in counts.items():
        artifact = artifacts[artifact_id]
        share = common / artifact.fingerprint_count
        if share >= threshold or document_is_piece(own_common=own_common, document_hashes=size):
            matches.append(
                TextMatch(
                    artifact=artifact,
                    share=share,
                    document_share=common / size,
                    own_document_share=own_common / size,
                )
            )
    matches.sort(key=lambda m: (-m.share, -m.document_share, m.artifact.pk))
    return matches[:limit]


_LOOKUP = """
WITH posting AS (
    SELECT p.ids, p.quoted
    FROM unnest(%(hashes)s::bigint[]) AS q(h)
    CROSS JOIN LATERAL (
        SELECT array_agg(l.artifact_id) AS ids, array_agg(l.quoted) AS quoted FROM (
            SELECT f.artifact_id, f.quoted FROM {fingerprints} f
            WHERE f.hash = q.h LIMIT %(stop)s + 1
        ) l
    ) p
    WHERE p.ids IS NOT NULL
),
stop AS (
    SELECT count(*) AS n FROM posting WHERE cardinality(ids) > %(stop)s
),
hits AS (
    SELECT x.artifact_id, count(*) AS n, count(*) FILTER (WHERE NOT x.quoted) AS own
    FROM posting CROSS JOIN LATERAL unnest(posting.ids, posting.quoted) AS x(artifact_id, quoted)
    WHERE cardinality(posting.ids) <= %(stop)s
    GROUP BY x.artifact_id
),
candidates AS (
    SELECT hits.artifact_id
    FROM hits JOIN {artifacts} a ON a.id = hits.artifact_id CROSS JOIN stop
    WHERE a.fingerprint_count >= %(min_fingerprints)s
      AND (hits.n + LEAST(stop.n, a.fingerprint_count) >= %(threshold)s * a.fingerprint_count
           OR hits.own + stop.n >= GREATEST(%(piece_min)s, %(piece_share)s * %(document)s))
    ORDER BY GREATEST(hits.n::float / a.fingerprint_count, hits.own::float / %(document)s) DESC,
             hits.artifact_id
    LIMIT %(candidates)s
)
SELECT f.artifact_id, count(*), count(*) FILTER (WHERE NOT f.quoted)
FROM candidates c JOIN {fingerprints} f ON f.artifact_id = c.artifact_id
WHERE f.hash = ANY(%(hashes)s::bigint[])
GROUP BY f.artifact_id
"""


# The same steps for many texts at once: `doc` holds each key's distinct hashes; a hash is
# probed once however many keys hold it; stop-shingles, candidates (ranked per key, in the
# order of `_LOOKUP`) and exact counts are each key's own. The exact counts are a lateral
# probe per candidate (its rows through the (artifact, hash) index): as a join, the planner
# (its estimates of the probes far too high) hashed the whole fingerprint table, 5.5 s of a
# 7.9 s statement for 500 documents against 100,000 artifacts.
_LOOKUP_MANY = """
WITH doc AS (
    SELECT d.k, d.h FROM unnest(%(keys)s::bigint[], %(hashes)s::bigint[]) AS d(k, h)
),
size AS (
    SELECT s.k, s.n FROM unnest(%(size_keys)s::bigint[], %(sizes)s::bigint[]) AS s(k, n)
),
keyed AS (
    SELECT doc.k, array_agg(doc.h) AS hs FROM doc GROUP BY doc.k
),
posting AS (
    SELECT q.h, l.artifact_id, l.quoted, count(*) OVER (PARTITION BY q.h) AS postings
    FROM unnest(%(distinct)s::bigint[]) AS q(h)
    CROSS JOIN LATERAL (
        SELECT f.artifact_id, f.quoted FROM {fingerprints} f
        WHERE f.hash = q.h LIMIT %(stop)s + 1
    ) l
),
stop AS (
    SELECT doc.k, count(*) AS n
    FROM doc JOIN (SELECT DISTINCT h FROM posting WHERE postings > %(stop)s) s ON s.h = doc.h
    GROUP BY doc.k
),
hits AS (
    SELECT doc.k, p.artifact_id, count(*) AS n, count(*) FILTER (WHERE NOT p.quoted) AS own
    FROM doc JOIN posting p ON p.h = doc.h
    WHERE p.postings <= %(stop)s
    GROUP BY doc.k, p.artifact_id
),
ranked AS (
    SELECT hits.k, hits.artifact_id, row_number() OVER (
        PARTITION BY hits.k
        ORDER BY GREATEST(hits.n::float / a.fingerprint_count, hits.own::float / size.n) DESC,
                 hits.artifact_id
    ) AS r
    FROM hits JOIN {artifacts} a ON a.id = hits.artifact_id
    JOIN size ON size.k = hits.k
    LEFT JOIN stop ON stop.k = hits.k
    WHERE a.fingerprint_count >= %(min_fingerprints)s
      AND (hits.n + LEAST(COALESCE(stop.n, 0), a.fingerprint_count)
               >= %(threshold)s * a.fingerprint_count
           OR hits.own + COALESCE(stop.n, 0)
               >= GREATEST(%(piece_min)s, %(piece_share)s * size.n))
)
SELECT c.k, c.artifact_id, x.n, x.own
FROM ranked c
JOIN keyed ON keyed.k = c.k
CROSS JOIN LATERAL (
    SELECT count(*) AS n, count(*) FILTER (WHERE NOT f.quoted) AS own
    FROM {fingerprints} f
    WHERE f.artifact_id = c.artifact_id AND f.hash = ANY(keyed.hs)
) x
WHERE c.r <= %(candidates)s AND x.n > 0
"""


def _exact_counts(*, hashes: list[int], threshold: float) -> dict[int, tuple[int, int]]:
    """{artifact id: (hashes in common, unquoted hashes in common)} for the candidates (see
    the module's steps)."""
    sql = _LOOKUP.format(
        fingerprints=ArtifactFingerprint._meta.db_table,
        artifacts=GeneratedArtifact._meta.db_table,
    )
    params = {
        "hashes": hashes,
        "stop": STOP_POSTINGS,
        "min_fingerprints": MIN_FINGERPRINTS,
        "threshold": threshold,
        "piece_min": PIECE_MIN_COMMON,
        "piece_share": PIECE_DOCUMENT_SHARE,
        "document": len(hashes),
        "candidates": CANDIDATES,
    }
    counts = {}
    for _key, artifact_id, common, own in _planned(sql, params, keyed=False):
        counts[artifact_id] = (common, own)
    return counts


def _exact_counts_many(
    hashes: dict[int, list[int]], *, threshold: float
) -> dict[int, dict[int, tuple[int, int]]]:
    """{key: {artifact id: (hashes in common, unquoted in common)}} for each key's candidates
    (`_exact_counts` for every key of `hashes`, in one statement)."""
    sql = _LOOKUP_MANY.format(
        fingerprints=ArtifactFingerprint._meta.db_table,
        artifacts=GeneratedArtifact._meta.db_table,
    )
    keys = [key for key, key_hashes in hashes.items() for _ in key_hashes]
    flat = [h for key_hashes in hashes.values() for h in key_hashes]
    params = {
        "keys": bigint_array(keys),
        "hashes": bigint_array(flat),
        # Each hash once, in order: the probes walk the hash index from one end to the other.
        "distinct": bigint_array(sorted(set(flat))),
        "size_keys": list(hashes),
        "sizes": [len(key_hashes) for key_hashes in hashes.values()],
        "stop": STOP_POSTINGS,
        "min_fingerprints": MIN_FINGERPRINTS,
        "threshold": threshold,
        "piece_min": PIECE_MIN_COMMON,
        "piece_share": PIECE_DOCUMENT_SHARE,
        "candidates": CANDIDATES,
    }
    counts: dict[int, dict[int, tuple[int, int]]] = {}
    for key, artifact_id, common, own in _planned(sql, params, keyed=True):
        counts.setdefault(key, {})[artifact_id] = (common, own)
    return counts


def bigint_array(values: list[int]) -> str:
    """`values` as a PostgreSQL array literal, for a `%s::bigint[]` parameter: a packet's
    185,000 hashes are written in a third of the time psycopg takes to adapt the list."""
    return "{" + ",".join(map(str, values)) + "}"


def _planned(sql: str, params: dict[str, Any], *, keyed: bool) -> list[tuple[int, int, int, int]]:
    """Rows of a lookup statement, (key or 0, artifact id, in common, unquoted in common)."""
    with transaction.atomic(), connection.cursor() as cursor:
        # Two planner settings, for this statement only (measured with 100,000 artifacts,
        # bench/bench_fingerprint_lookup.py): each probe of step 1 reads a handful of rows,
        # which a plain index scan does in a few microseconds and the bitmap scan the planner
        # prefers in several times as long; and the planner's estimate for the probes (some
        # 100 rows each, from the hash column's statistics) is far above what they read, so
        # it would JIT-compile the query, 0.7 s of compiling for 0.1 s of work. The old values
        # are put back: SET LOCAL would last to the end of the caller's transaction (the
        # upload's). And memory for a batch's sorts and hashes (a packet's 185,000 hashes went
        # to disk with the default 4 MB; bench/bench_freeze_recheck.py).
        cursor.execute(
            "SELECT s.bitmap, s.jit, s.mem, set_config('enable_bitmapscan', 'off', true), "
            "set_config('jit', 'off', true), set_config('work_mem', COALESCE(%s, s.mem), true) "
            "FROM (SELECT current_setting('enable_bitmapscan') AS bitmap, "
            "current_setting('jit') AS jit, current_setting('work_mem') AS mem OFFSET 0) s",
            [BATCH_WORK_MEM if keyed else None],
        )
        bitmap, jit, mem, _, _, _ = cursor.fetchone()
        cursor.execute(sql, params)
        rows = [
            (int(row[0]), int(row[1]), int(row[2]), int(row[3]))
            if keyed
            else (0, int(row[0]), int(row[1]), int(row[2]))
            for row in cursor.fetchall()
        ]
        cursor.execute(
            "SELECT set_config('enable_bitmapscan', %s, true), set_config('jit', %s, true), "
            "set_config('work_mem', %s, true)",
            [bitmap, jit, mem],
        )
    return rows


def packet_evidence_hashes(*, packet_id: int | None) -> frozenset[int]:
    """Every shingle hash of the non-generated evidence of a frozen packet (issue 20 req 8):
    the words a draft written from that packet may quote, which are the evidence's words and
    not the draft's. `fingerprint.evidence_shingles` over each document's frozen pages (in
    page order, one text per document); pages frozen as system generated are left out (a
    packet refuses them, so there are none unless that rule is broken). Empty for no packet,
    an unknown one or one not frozen (no frozen pages).

    A frozen packet never changes, so the set is kept per process for the few packets last
    asked about (every stage of a run asks for its run's packet), keyed by the content hash
    too."""
    if packet_id is None:
        return frozenset()
    content_hash = (
        Packet.objects.filter(pk=packet_id, status=Packet.Status.FROZEN)
        .values_list("content_hash", flat=True)
        .first()
    )
    if not content_hash:
        return frozenset()
    return _evidence_hashes(packet_id, content_hash)


@lru_cache(maxsize=4)
def _evidence_hashes(packet_id: int, content_hash: str) -> frozenset[int]:
    texts: dict[int, list[str]] = {}
    rows = (
        FrozenPage.objects.filter(packet_id=packet_id)
        .exclude(origin=Document.Origin.SYSTEM_GENERATED)
        .order_by("document_id", "page_number")
        .values_list("document_id", "text")
    )
    for document_id, text in rows.iterator(chunk_size=500):
        texts.setdefault(document_id, []).append(text)
    return frozenset(fp.evidence_shingles("\n\n".join(pages) for pages in texts.values()))
