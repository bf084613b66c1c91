"""The generated-artifact registry: everything lexweb produced, registered the moment it exists.

1. `artifact_register` stores the artifact's SHA-256 and the fingerprint of its normalised text
   (`apps.evidence.fingerprint`), one row per distinct hash, written in one statement, each
   marked `quoted` when it lies inside quotation marks (the evidence's words, not the
   artifact's own).
2. Uploads are checked against it by `apps.evidence.services.checks` (bytes at upload, text once
   read), through the indexed lookups of `apps.evidence.selectors.registry`.

Registering is idempotent on the bytes: the same bytes registered twice are one artifact (the
first registration's title and case stay), so a retried job or a re-export stores nothing twice.
"""

import hashlib

from django.db import IntegrityError, connection, transaction

from apps.accounts.models import User
from apps.accounts.services import audit_record
from apps.cases.models import Case
from apps.evidence import fingerprint as fp
from apps.evidence.models import ArtifactFingerprint, GeneratedArtifact
from lexweb.errors import DomainError

_TITLE_MAX = GeneratedArtifact._meta.get_field("title").max_length or 200
_SOURCE_MAX = GeneratedArtifact._meta.get_field("source").max_length or 200
_MEDIA_TYPE_MAX = GeneratedArtifact._meta.get_field("media_type").max_length or 100


def artifact_register(
    *,
    data: bytes,
    text: str,
    kind: str,
    media_type: str,
    title: str,
    case: Case | None,
    source: str = "",
    exported_from: GeneratedArtifact | None = None,
    created_by: User | None = None,
) -> GeneratedArtifact:
    """Register what lexweb just produced: `data` (its bytes) and `text` (its words, as a model
    wrote them or as extracted from the export). Returns the artifact; the existing one when the
    same bytes were registered before (nothing is changed or written then).

    Refuses (DomainError) an unknown kind, empty bytes or a title with no words.
    """
    _validate(data=data, kind=kind, media_type=media_type, title=title)
    sha256 = hashlib.sha256(data).hexdigest()
    existing = GeneratedArtifact.objects.filter(sha256=sha256).first()
    if existing is not None:
        return existing
    hashes, quoted = fp.fingerprint_with_quotes(text)
    try:
        with transaction.atomic():
            artifact = GeneratedArtifact.objects.create(
                sha256=sha256,
                kind=kind,
                media_type=media_type.strip()[:_MEDIA_TYPE_MAX],
                title=" ".join(title.split())[:_TITLE_MAX],
                case=case,
                source=" ".join(source.split())[:_SOURCE_MAX],
                exported_from=exported_from,
                size=len(data),
                fingerprint_count=len(hashes),
                unquoted_fingerprint_count=len(hashes - quoted),
                created_by=created_by,
            )
            _fingerprints_insert(artifact_id=artifact.pk, hashes=hashes, quoted=quoted)
            audit_record(
                actor=created_by,
                actor_label="" if created_by is not None else "lexweb",
                action="artifact.registered",
                case=case,
                target=artifact,
                detail={"kind": kind, "sha256": sha256, "fingerprints": len(hashes)},
            )
    except IntegrityError:
        # Registered meanwhile by another transaction with the same bytes.
        return GeneratedArtifact.objects.get(sha256=sha256)
    return artifact


def _validate(*, data: bytes, kind: str, media_type: str, title: str) -> None:
    if kind not in GeneratedArtifact.Kind.values:
        choices = ", ".join(GeneratedArtifact.Kind.values)
        raise DomainError(f"Unknown artifact kind {kind[:40]!r}; use one of: {choices}.")
    if not data:
        raise DomainError("An artifact with no bytes cannot be registered.")
    if not title.strip():
        raise DomainError("An artifact needs a title that people can recognise.")
    if not media_type.strip():
        raise DomainError("An artifact needs a media type (e.g. text/markdown).")


def _fingerprints_insert(*, artifact_id: int, hashes: set[int], quoted: set[int]) -> None:
    """All of an artifact's hashes in one INSERT (array parameters, not one row per call)."""
    if not hashes:
        return
    ordered = sorted(hashes)
    table = ArtifactFingerprint._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (artifact_id, hash, quoted) "  # noqa: S608  (our table)
            "SELECT %s, h, q FROM unnest(%s::bigint[], %s::boolean[]) AS u(h, q)",
            [artifact_id, ordered, [h in quoted for h in ordered]],
        )
