"""Registry checks of uploads: nothing lexweb generated comes back in as evidence unflagged.

1. At upload, inside the upload's transaction, `document_check_bytes`: bytes equal to a
   registered artifact flag the document at once (ArtifactMatch by bytes, share 1.0).
2. When the last page's text is stored, in the same transaction that makes the document READY,
   `document_check_text`: the text of all pages is looked up in the registry; every artifact
   whose share found in the text reaches LEXWEB_ARTIFACT_MATCH_THRESHOLD is recorded
   (ArtifactMatch by text) and the document is FLAGGED; with none (and no byte match) it is
   CLEAR. A flagged document stays FLAGGED (a byte match, or a text match of an earlier read).

3. When documents are added to a packet and when a packet is frozen, `documents_recheck`: each
   CLEAR document's text is looked up again, in the registry as it is then (a draft may have
   been streamed, cancelled or stored since the document was read). A match found now is
   recorded as a late flag (`ArtifactMatch.found`: packet_add or freeze), the document becomes
   FLAGGED, and it is audited ("document.flagged", late: true); the packet then refuses it as
   it refuses any flagged document. The late flag stays after the request is refused.

A lawyer's clearing (apps.evidence.services.clearance) covers the matches it was given: steps
2 and 3 leave a cleared document CLEAR while they find only those artifacts again, and flag it
again (audited as any flag) when they find another one.

All are idempotent: a re-run (a retried ingest job, a re-read document) records each match
once (the unique constraint document/artifact/by) and audits only matches it newly records.
Flagging is lexweb's act, not the uploader's: the audit rows have no actor and the label
"lexweb registry"; the uploader is in the detail.
"""

import hashlib
from collections.abc import Iterable

from django.db import connection, transaction
from django.utils import timezone

from apps.accounts.services import audit_record
from apps.documents.models import Document, Page
from apps.evidence import fingerprint as fp
from apps.evidence.models import ArtifactMatch, DocumentFingerprint, GeneratedArtifact
from apps.evidence.selectors import registry as registry_selectors

ACTOR_LABEL = "lexweb registry"
# The most text matches recorded per document (highest share first).
MAX_TEXT_MATCHES = 20


@transaction.atomic
def document_check_bytes(document: Document) -> ArtifactMatch | None:
    """Flag `document` if its bytes are a registered artifact's. Returns the match (the one
    recorded before, on a re-run), or None when the bytes match nothing (provenance unchanged:
    it stays PENDING until the text check)."""
    artifact = registry_selectors.artifact_for_bytes(sha256=document.blob.sha256)
    if artifact is None:
        return None
    match, created = ArtifactMatch.objects.get_or_create(
        document=document,
        artifact=artifact,
        by=ArtifactMatch.By.BYTES,
        defaults={"share": 1.0, "document_share": 1.0},
    )
    _set_provenance(document, Document.Provenance.FLAGGED)
    if created:
        _audit_flag(document, artifact, by=ArtifactMatch.By.BYTES, share=1.0)
    return match


@transaction.atomic
def document_check_text(document: Document) -> list[ArtifactMatch]:
    """Look the text of all of `document`'s pages up in the registry; record the matches at or
    above the threshold and set the provenance (FLAGGED with any match, byte matches included;
    CLEAR otherwise). Returns the text matches, highest share first. A document with no text
    gets no text match (and is CLEAR unless its bytes matched); this never raises for that."""
    texts = Page.objects.filter(document=document).order_by("number").values_list("text", flat=True)
    text = "\n\n".join(texts)
    hashes = fp.fingerprint(text)
    # Kept for the re-checks at packet add and freeze, which reuse it while the text is this.
    _fingerprints_keep({document.pk: (_text_sha256(text), hashes)})
    found = registry_selectors.artifact_matches_for_hashes(hashes=hashes, limit=MAX_TEXT_MATCHES)
    matches = []
    for hit in found:
        match, created = ArtifactMatch.objects.update_or_create(
            document=document,
            artifact=hit.artifact,
            by=ArtifactMatch.By.TEXT,
            defaults={"share": hit.share, "document_share": hit.document_share},
        )
        matches.append(match)
        if created:
            _audit_flag(document, hit.artifact, by=ArtifactMatch.By.TEXT, share=hit.share)
    # Once flagged, always flagged: a match recorded before (bytes, or text of an earlier read)
    # is not forgotten because a re-read text no longer reaches the threshold; unless a lawyer
    # cleared it (a clearing covers the matches it was given, not new ones).
    flagged = document.artifact_matches.filter(clearance__isnull=True).exists()
    _set_provenance(document, Document.Provenance.FLAGGED if flagged else Document.Provenance.CLEAR)
    return matches


def documents_recheck(*, document_ids: Iterable[int], found: str) -> list[int]:
    """Look the text of each CLEAR, READY document among `document_ids` up in the registry as it
    is now; record what matches as late flags (`found`: ArtifactMatch.Found.PACKET_ADD or
    FREEZE), flag and audit. Returns the ids of the documents flagged now. Each document in a
    transaction of its own, so its flag stays whatever the caller then does.

    The texts are looked up together (`artifact_matches_for_documents`: one statement for a
    packet's worth, the same matches as one lookup per document), and each text's fingerprint
    is the one kept from its last check (`DocumentFingerprint`) while the text is the same. A
    500-item freeze against 100,000 artifacts: see bench/bench_freeze_recheck.py."""
    documents = list(
        Document.objects.filter(
            pk__in=list(document_ids),
            provenance=Document.Provenance.CLEAR,
            status=Document.Status.READY,
        ).select_related("case")
    )
    texts: dict[int, list[str]] = {}
    for document_id, text in (
        Page.objects.filter(document__in=[d.pk for d in documents])
        .order_by("document_id", "number")
        .values_list("document_id", "text")
    ):
        texts.setdefault(document_id, []).append(text)
    hashes = _fingerprints({d.pk: "\n\n".join(texts.get(d.pk, [])) for d in documents})
    found_hits = registry_selectors.artifact_matches_for_documents(
        hashes=hashes, limit=MAX_TEXT_MATCHES
    )
    flagged = []
    for document in documents:
        hits = found_hits.get(document.pk, [])
        if hits and _flag_late(document, hits, found=found):
            flagged.append(document.pk)
    return flagged


def _text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _fingerprints(texts: dict[int, str]) -> dict[int, set[int]]:
    """{document id: the fingerprint of its text}: the kept one where its text is the one it
    was made of, made (and kept) otherwise."""
    digests = {document_id: _text_sha256(text) for document_id, text in texts.items()}
    kept = {
        document_id: (digest, hashes)
        for document_id, digest, hashes in DocumentFingerprint.objects.filter(
            document_id__in=list(texts)
        ).values_list("document_id", "text_sha256", "hashes")
    }
    result: dict[int, set[int]] = {}
    made: dict[int, set[int]] = {}
    for document_id, text in texts.items():
        stored = kept.get(document_id)
        if stored is not None and stored[0] == digests[document_id]:
            result[document_id] = set(stored[1])
        else:
            result[document_id] = made[document_id] = fp.fingerprint(text)
    _fingerprints_keep(
        {document_id: (digests[document_id], made[document_id]) for document_id in made}
    )
    return result


def _fingerprints_keep(made: dict[int, tuple[str, set[int]]]) -> None:
    """Keep the fingerprints made now (replacing those of an earlier text), in one statement
    with flat array parameters: a packet's 500 rows took 0.6 s through `bulk_create`, whose
    array values are adapted row by row."""
    if not made:
        return
    ids = list(made)
    keys = [document_id for document_id in ids for _ in made[document_id][1]]
    hashes = [value for document_id in ids for value in made[document_id][1]]
    table = DocumentFingerprint._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (document_id, text_sha256, hashes, updated_at) "  # noqa: S608
            "SELECT d.id, d.sha, COALESCE(h.hs, '{}'), %s "
            "FROM unnest(%s::bigint[], %s::text[]) AS d(id, sha) LEFT JOIN ("
            "  SELECT u.k, array_agg(u.h ORDER BY u.h) AS hs "
            "  FROM unnest(%s::bigint[], %s::bigint[]) AS u(k, h) GROUP BY u.k"
            ") h ON h.k = d.id "
            "ON CONFLICT (document_id) DO UPDATE SET text_sha256 = EXCLUDED.text_sha256, "
            "hashes = EXCLUDED.hashes, updated_at = EXCLUDED.updated_at",
            [
                timezone.now(),
                registry_selectors.bigint_array(ids),
                [made[i][0] for i in ids],
                registry_selectors.bigint_array(keys),
                registry_selectors.bigint_array(hashes),
            ],
        )


@transaction.atomic
def _flag_late(
    document: Document, hits: list["registry_selectors.TextMatch"], *, found: str
) -> bool:
    locked = Document.objects.select_for_update().get(pk=document.pk)
    if locked.provenance != Document.Provenance.CLEAR:
        return False
    standing = False
    for hit in hits:
        match, created = ArtifactMatch.objects.get_or_create(
            document=locked,
            artifact=hit.artifact,
            by=ArtifactMatch.By.TEXT,
            defaults={"share": hit.share, "document_share": hit.document_share, "found": found},
        )
        if created:
            _audit_flag(locked, hit.artifact, by=ArtifactMatch.By.TEXT, share=hit.share, late=found)
        # A match a lawyer cleared stays cleared; any other flags the document.
        standing = standing or match.clearance_id is None
    if not standing:
        return False
    _set_provenance(locked, Document.Provenance.FLAGGED)
    document.provenance = locked.provenance
    return True


def _set_provenance(document: Document, provenance: str) -> None:
    if document.provenance == provenance:
        return
    document.provenance = provenance
    Document.objects.filter(pk=document.pk).update(provenance=provenance)


def _audit_flag(
    document: Document, artifact: GeneratedArtifact, *, by: str, share: float, late: str = ""
) -> None:
    late_detail: dict[str, str | int | bool | None] = {"late": True, "found": late} if late else {}
    audit_record(
        actor=None,
        actor_label=ACTOR_LABEL,
        action="document.flagged",
        case=document.case,
        target=document,
        detail={
            "artifact_id": artifact.pk,
            "by": by,
            # Text, not a float: audit details are str/int/bool (apps.accounts.services).
            "share": f"{share:.3f}",
            "uploaded_by": document.uploaded_by_id,
            **late_detail,
        },
    )
