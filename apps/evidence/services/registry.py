"""The generated-artifact registry: everything lexweb produced, registered the moment it exists.

1. `artifact_register` stores the artifact's SHA-256 and the fingerprint of its normalised text
   (`apps.evidence.fingerprint`), one row per distinct hash, written in one statement, each
   marked `quoted` when it lies inside quotation marks (the evidence's words, not the
   artifact's own). An artifact drafted from a frozen packet (`packet`) leaves out every hash
   that is also a shingle of that packet's non-generated evidence
   (`selectors.registry.packet_evidence_hashes`, issue 20 req 8): those words are the
   evidence's, so an upload of the evidence (or of another copy of it) finds nothing of the
   artifact in them, and they count in neither side of a share. The packet is frozen and can
   never change, so this is decided once, here.
2. Uploads are checked against it by `apps.evidence.services.checks` (bytes at upload, text once
   read), through the indexed lookups of `apps.evidence.selectors.registry`.

Registering is idempotent on the bytes: the same bytes registered twice are one artifact (the
first registration's title and case stay), so a retried job or a re-export stores nothing twice.
And on the text: other bytes of a text already registered (a copy saved again, an export with
other metadata) get an artifact row of their own, pointing at the first one's postings
(`postings_of`), and add no fingerprint rows. A text registered a thousand times is one text in
the index, so copies can neither flood it nor push its hashes past the boilerplate cap
(`selectors.registry.STOP_POSTINGS`, which thereby counts distinct texts).
"""

import hashlib

from django.db import IntegrityError, connection, transaction

from apps.accounts.models import User
from apps.accounts.services import audit_record
from apps.cases.models import Case
from apps.evidence import fingerprint as fp
from apps.evidence.models import ArtifactFingerprint, GeneratedArtifact, Packet
from apps.evidence.selectors import registry as registry_selectors
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
    packet: Packet | None = None,
    _retried: bool = False,
) -> GeneratedArtifact:
    """Register what lexweb just produced: `data` (its bytes) and `text` (its words, as a model
    wrote them or as extracted from the export). Returns the artifact; the existing one when the
    same bytes were registered before (nothing is changed or written then). `packet`: the
    frozen packet it was drafted from, whose evidence's words are left out (module, step 1).

    Refuses (DomainError) an unknown kind, empty bytes or a title with no words.
    """
    _validate(data=data, kind=kind, media_type=media_type, title=title)
    sha256 = hashlib.sha256(data).hexdigest()
    existing = GeneratedArtifact.objects.filter(sha256=sha256).first()
    if existing is not None:
        return existing
    hashes, quoted = fp.fingerprint_with_quotes(text)
    # The key is of the fingerprint kept: the same text drafted from another packet keeps
    # other hashes, so it holds postings of its own.
    hashes, quoted, left_out = fp.without_evidence(
        hashes,
        quoted,
        registry_selectors.packet_evidence_hashes(packet_id=packet.pk if packet else None),
    )
    text_key = _text_key(hashes, quoted) if hashes else ""
    same_text = (
        GeneratedArtifact.objects.filter(text_key=text_key, postings_of__isnull=True)
        .order_by("pk")
        .first()
        if hashes
        else None
    )
    try:
        with transaction.atomic():
            artifact = GeneratedArtifact.objects.create(
                text_key=text_key,
                postings_of=same_text,
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
                evidence_fingerprint_count=left_out,
                packet=packet,
                created_by=created_by,
            )
            if same_text is None:
                _fingerprints_insert(artifact_id=artifact.pk, hashes=hashes, quoted=quoted)
            audit_record(
                actor=created_by,
                actor_label="" if created_by is not None else "lexweb",
                action="artifact.registered",
                case=case,
                target=artifact,
                detail={
                    "kind": kind,
                    "sha256": sha256,
                    "fingerprints": len(hashes),
                    "same_text_as": same_text.pk if same_text is not None else None,
                    "packet": packet.pk if packet is not None else None,
                    "evidence_fingerprints": left_out,
                },
            )
    except IntegrityError:
        # Registered meanwhile by another transaction: the same bytes (that artifact is this
        # one), or the same text in other bytes (register again, as a copy of it).
        registered = GeneratedArtifact.objects.filter(sha256=sha256).first()
        if registered is not None or _retried:
            return registered or GeneratedArtifact.objects.get(sha256=sha256)
        return artifact_register(
            data=data,
            text=text,
            kind=kind,
            media_type=media_type,
            title=title,
            case=case,
            source=source,
            exported_from=exported_from,
            created_by=created_by,
            packet=packet,
            _retried=True,
        )
    return artifact


def _text_key(hashes: set[int], quoted: set[int]) -> str:
    """The key of a text in the registry: what its fingerprint is made of, hashed."""
    ordered = sorted(hashes)
    marks = "".join("q" if h in quoted else "." for h in ordered)
    return hashlib.sha256(f"{','.join(map(str, ordered))}|{marks}".encode()).hexdigest()


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
