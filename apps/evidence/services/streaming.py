"""Registering a model's text while it streams (issue 20 req 5): from the first stored batch.

One artifact per stage attempt (kind model_output, "Run 14, drafter (streaming)"), grown at
every flush of its tokens, so the text streamed so far (visible in the run's events) is never
clear evidence, and what a cancelled or failed stage streamed stays registered.

1. `stream_artifact_open` creates the row when the stage starts streaming, before its first
   token (no postings, no fingerprint: no lookup can find it yet). Its `sha256` is the digest
   of a key naming the stage attempt ("lexweb stream: stage 7 attempt 2"), not of any bytes:
   streamed text only ever comes back as text (an upload of it is matched by its
   fingerprint), and a fixed key can never collide with the stored version's bytes or with
   another attempt that streams the same words. It never changes, so the unique constraint on
   `sha256` is never touched while the artifact grows.
2. `StreamPostings.grow` fingerprints only the newly streamed words, with enough of the words
   before them (`OVERLAP_WORDS`) that every winnowing window across the batch boundary is whole (a
   window spans SHINGLE_WORDS + WINDOW - 1 words), up to the last complete word (a token may end
   inside a word). It returns the hashes not posted before; `GROW_SQL` posts them for every growing
   artifact of a group write in one statement (INSERT ... SELECT unnest, ON CONFLICT DO NOTHING)
   and sets each artifact's counts and size. The token writer (apps.drafting.services.token_events)
   runs it in the same transaction as the batch's run event: the text is registered exactly when it
   becomes visible. While streaming, every hash counts as the artifact's own words (unquoted): a
   quotation may not be closed yet, and erring that way can only flag more. A stage of a run drafts
   from the run's frozen packet: the hashes that are that packet's evidence's words
   (`StreamPostings.evidence`, read once when the artifact is opened) are never posted, from the
   first batch on, as `registry.artifact_register` leaves them out (issue 20 req 8).
3. `stream_artifact_close`, when the stage stops (success, failure or cancel): the postings
   become exactly the fingerprint of the whole streamed text (the packet's evidence left out
   again), its quoted hashes marked, and the artifact gets its text key; when that text is
   already registered (another attempt streamed
   the same words), it becomes a copy (`postings_of`) and drops its postings, as
   `registry.artifact_register` does with copies. A stage that streamed nothing leaves no
   artifact. Audited ("artifact.registered", streamed: true) here, once per attempt.

The stored draft version of a stage that succeeds is then registered as before
(`registry.artifact_register`); its text is the streamed text, so it is a copy of this one.
"""

import hashlib
import re

from django.db import IntegrityError, connection, transaction

from apps.accounts.services import audit_record
from apps.evidence import fingerprint as fp
from apps.evidence.models import ArtifactFingerprint, GeneratedArtifact
from apps.evidence.selectors import registry as registry_selectors
from apps.evidence.services.registry import _text_key

# Words before the new text that are fingerprinted again: more than the span of one winnowing
# window (SHINGLE_WORDS + WINDOW - 1 words), counted as whitespace-separated runs (each holds
# at least one word).
OVERLAP_WORDS = fp.SHINGLE_WORDS + fp.WINDOW + 4
_RUN = re.compile(r"\S+")

_FINGERPRINTS = ArtifactFingerprint._meta.db_table
_ARTIFACTS = GeneratedArtifact._meta.db_table
# Every growing artifact of one group write: new hashes posted, counts and size set.
GROW_SQL = (
    f"WITH c AS (SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::int[]) AS c(id, size, n)), "  # noqa: S608 (our tables)
    f"u AS (UPDATE {_ARTIFACTS} a SET size = c.size, fingerprint_count = c.n, "
    f"unquoted_fingerprint_count = c.n FROM c WHERE a.id = c.id) "
    f"INSERT INTO {_FINGERPRINTS} (artifact_id, hash, quoted) "
    f"SELECT g.a, g.h, false FROM unnest(%s::bigint[], %s::bigint[]) AS g(a, h) "
    f"ON CONFLICT (artifact_id, hash) DO NOTHING"
)


def stream_key(*, stage_id: int, attempt: int) -> str:
    """The streaming artifact's `sha256`: the digest of a key naming the stage attempt."""
    return hashlib.sha256(f"lexweb stream: stage {stage_id} attempt {attempt}".encode()).hexdigest()


def stream_artifact_open(
    *,
    stage_id: int,
    attempt: int,
    case_id: int,
    title: str,
    source: str,
    packet_id: int | None = None,
) -> int:
    """The streaming artifact of one stage attempt (created, or the one of a job re-run),
    drafted from frozen packet `packet_id` (if any): give its `StreamPostings` the packet's
    evidence (`stream_evidence`)."""
    artifact, _created = GeneratedArtifact.objects.get_or_create(
        sha256=stream_key(stage_id=stage_id, attempt=attempt),
        defaults={
            "kind": GeneratedArtifact.Kind.MODEL_OUTPUT,
            "media_type": "text/markdown",
            "title": " ".join(title.split())[:200],
            "case_id": case_id,
            "source": " ".join(source.split())[:200],
            "size": 0,
            "packet_id": packet_id,
        },
    )
    return artifact.pk


def stream_evidence(*, packet_id: int | None) -> frozenset[int]:
    """The hashes a stage drafting from `packet_id` never posts (its evidence's words)."""
    return registry_selectors.packet_evidence_hashes(packet_id=packet_id)


class StreamPostings:
    """What one streaming artifact has posted, and the text so far (in memory, per stage)."""

    def __init__(self, artifact_id: int, evidence: frozenset[int] = frozenset()) -> None:
        self.artifact_id = artifact_id
        # Shingle hashes of the packet's evidence: never posted (the evidence's words).
        self.evidence = evidence
        self.text = ""
        self.size = 0  # UTF-8 bytes of the text so far
        self.done = 0  # characters of `text` fingerprinted (ends after a whole word)
        self.posted: set[int] = set()

    def grow(self, piece: str) -> list[int]:
        """Add streamed text; returns the hashes of its complete words not posted before."""
        self.text += piece
        self.size += len(piece.encode("utf-8"))
        end = len(self.text)
        while end > self.done and not self.text[end - 1].isspace():
            end -= 1  # back to the end of the last complete word
        if end <= self.done:
            return []
        start = _overlap_start(self.text, self.done)
        words = fp.normalise(self.text[start:end])
        if start == 0 and len(words) < fp.SHINGLE_WORDS:
            return []  # no whole shingle yet (the close fingerprints a short text exactly)
        fresh = fp.winnow(fp.shingle_hashes(words)) - self.posted - self.evidence
        self.done = end
        self.posted |= fresh
        return sorted(fresh)


def _overlap_start(text: str, done: int) -> int:
    """Where to fingerprint from: OVERLAP_WORDS whitespace-separated runs before `done` (one
    scan of the few hundred characters before it)."""
    window = max(0, done - 40 * OVERLAP_WORDS)
    starts = [m.start() for m in _RUN.finditer(text, window, done)]
    if window > 0:
        starts = starts[1:]  # the first run may begin before the window
    if len(starts) >= OVERLAP_WORDS:
        return starts[-OVERLAP_WORDS]
    return starts[0] if window > 0 and starts else 0


def stream_growth_params(growths: list[tuple[StreamPostings, list[int]]]) -> list[object]:
    """GROW_SQL's parameters for the growing artifacts of one write."""
    ids, hashes = [], []
    for postings, fresh in growths:
        ids.extend([postings.artifact_id] * len(fresh))
        hashes.extend(fresh)
    return [
        [p.artifact_id for p, _f in growths],
        [p.size for p, _f in growths],
        [len(p.posted) for p, _f in growths],
        ids,
        hashes,
    ]


@transaction.atomic
def stream_artifact_close(*, artifact_id: int, text: str) -> None:
    """The stage stopped: exact postings and text key, or a copy of the text's holder; an
    artifact that streamed nothing is removed. Audited once."""
    artifact = GeneratedArtifact.objects.select_for_update().filter(pk=artifact_id).first()
    if artifact is None:
        return
    if not text.strip():
        ArtifactFingerprint.objects.filter(artifact=artifact).delete()
        artifact.delete()
        return
    hashes, quoted = fp.fingerprint_with_quotes(text)
    hashes, quoted, left_out = fp.without_evidence(
        hashes, quoted, registry_selectors.packet_evidence_hashes(packet_id=artifact.packet_id)
    )
    key = _text_key(hashes, quoted) if hashes else ""
    holder = (
        GeneratedArtifact.objects.filter(text_key=key, postings_of__isnull=True)
        .exclude(pk=artifact.pk)
        .order_by("pk")
        .first()
        if key
        else None
    )
    artifact.size = len(text.encode("utf-8"))
    artifact.fingerprint_count = len(hashes)
    artifact.unquoted_fingerprint_count = len(hashes - quoted)
    artifact.evidence_fingerprint_count = left_out
    artifact.text_key = key
    if holder is None:
        try:
            with transaction.atomic():
                artifact.save(
                    update_fields=[
                        "size", "fingerprint_count", "unquoted_fingerprint_count", "text_key",
                        "evidence_fingerprint_count",
                    ]
                )  # fmt: skip
                _postings_set(artifact_id=artifact.pk, hashes=hashes, quoted=quoted)
        except IntegrityError:  # the same text's holder registered meanwhile
            holder = (
                GeneratedArtifact.objects.filter(text_key=key, postings_of__isnull=True)
                .exclude(pk=artifact.pk)
                .first()
            )
    if holder is not None:
        ArtifactFingerprint.objects.filter(artifact=artifact).delete()
        artifact.postings_of = holder
        artifact.save(
            update_fields=[
                "size", "fingerprint_count", "unquoted_fingerprint_count", "text_key",
                "postings_of", "evidence_fingerprint_count",
            ]
        )  # fmt: skip
    audit_record(
        actor=None,
        actor_label="lexweb",
        action="artifact.registered",
        case=artifact.case,
        target=artifact,
        detail={
            "kind": artifact.kind,
            "sha256": artifact.sha256,
            "fingerprints": len(hashes),
            "same_text_as": holder.pk if holder is not None else None,
            "streamed": True,
            "packet": artifact.packet_id,
            "evidence_fingerprints": left_out,
        },
    )


def _postings_set(*, artifact_id: int, hashes: set[int], quoted: set[int]) -> None:
    """The artifact's postings become exactly `hashes` (quoted ones marked)."""
    ordered = sorted(hashes)
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {_FINGERPRINTS} WHERE artifact_id = %s "  # noqa: S608 (our table)
            "AND NOT (hash = ANY(%s::bigint[]))",
            [artifact_id, ordered],
        )
        cursor.execute(
            f"INSERT INTO {_FINGERPRINTS} (artifact_id, hash, quoted) "  # noqa: S608
            "SELECT %s, h, q FROM unnest(%s::bigint[], %s::boolean[]) AS u(h, q) "
            "ON CONFLICT (artifact_id, hash) DO UPDATE SET quoted = EXCLUDED.quoted "
            f"WHERE {_FINGERPRINTS}.quoted IS DISTINCT FROM EXCLUDED.quoted",
            [artifact_id, ordered, [h in quoted for h in ordered]],
        )
