"""A lawyer clears a wrong registry flag (issue 20 req 8): false refusals have a way out.

`document_flag_clear` lets a lawyer of the document's case (a lawyer by role, on the case as a
lawyer: never staff, so never a staff member's token, and never an admin let in by break-glass)
clear the flag on a FLAGGED document with a written reason:

1. The case is reached through membership (NotFound, 404, for everyone else, as for a bad id);
   a member who is not a lawyer of the case is refused (LawyerRequired, 403).
2. The reason is trimmed and checked (apps.documents.reasons.reason_clean: ReasonInvalid,
   400; 10 to 2,000 characters, no control or format characters but line breaks and tabs).
3. With the document row locked: a document whose lineage is generated (system generated, or
   derived from something generated at any depth) is refused (GeneratedLineage, 409), and so
   is one whose bytes are a registered artifact's (GeneratedBytes, 409: that is lexweb's own
   output, byte for byte, not a false refusal). A document with no standing flag is refused
   (FlagAlreadyCleared when a clearing covers its matches, NotFlagged otherwise; 409).
4. A FlagClearance row (who, when, reason; never changed or deleted) covers every match that
   flags the document now (`ArtifactMatch.clearance`), the document becomes CLEAR, so packets
   and productions take it again, and the clearing is audited ("document.flag_cleared", with
   the reason and the artifacts it covers).

A clearing covers the matches it was given, that is, the artifacts they name. The checks of
apps.evidence.services.checks honour it: a re-read or a re-check that finds the same artifacts
again leaves the document CLEAR; a match with another artifact, found later (a draft written
since, at packet add or freeze), flags it again, and that flag needs a clearing of its own.
"""

from django.db import transaction

from apps.accounts.models import User
from apps.accounts.services import audit_record
from apps.cases import selectors as case_selectors
from apps.cases.models import Case
from apps.documents import lineage_selectors as provenance_selectors
from apps.documents.models import Document
from apps.documents.reasons import LawyerRequired, reason_clean
from apps.evidence.models import ArtifactMatch, FlagClearance
from lexweb.errors import Conflict, NotFound

_MAX_ID = 2**63 - 1


class GeneratedLineage(Conflict):
    code = "generated_lineage"


class GeneratedBytes(Conflict):
    code = "generated_bytes"


class NotFlagged(Conflict):
    code = "not_flagged"


class FlagAlreadyCleared(Conflict):
    code = "flag_already_cleared"


def _document(*, case: Case, document_id: int) -> Document:
    if not isinstance(document_id, int) or isinstance(document_id, bool):
        raise NotFound(f"No document {document_id!r:.20} in this case.")
    document = (
        Document.objects.select_for_update(of=("self",))
        .select_related("case")
        .filter(pk=document_id, case=case)
        .first()
        if 0 < document_id <= _MAX_ID
        else None
    )
    if document is None:
        raise NotFound(f"No document {document_id} in this case.")
    return document


def _refuse_generated(document: Document) -> None:
    ancestor = provenance_selectors.generated_ancestor(document)
    if document.origin == Document.Origin.SYSTEM_GENERATED or ancestor is not None:
        why = (
            f"it is derived from “{ancestor.filename}” (document {ancestor.document_id}), "
            "which is generated"
            if ancestor is not None
            else "lexweb generated it"
        )
        raise GeneratedLineage(
            f"“{document.filename}” cannot be cleared: {why}. Nothing lexweb generated, or "
            "made from it, may be used as evidence."
        )


def _standing(document: Document) -> list[ArtifactMatch]:
    """The matches that flag the document now (not covered by a clearing), or a Conflict."""
    matches = list(
        ArtifactMatch.objects.filter(document=document, clearance__isnull=True).order_by("id")
    )
    if any(match.by == ArtifactMatch.By.BYTES for match in matches):
        raise GeneratedBytes(
            f"“{document.filename}” cannot be cleared: its bytes are exactly a file lexweb "
            "generated (a re-upload of lexweb's own output, not a false match)."
        )
    # Flagged with no match of its own (a production volume of a flagged original): the
    # clearing covers no match, and the volume is clear.
    if document.provenance == Document.Provenance.FLAGGED:
        return matches
    last = (
        FlagClearance.objects.filter(document=document)
        .select_related("cleared_by")
        .order_by("-cleared_at", "-id")
        .first()
    )
    if last is not None:
        raise FlagAlreadyCleared(
            f"The flag on “{document.filename}” was cleared already, by {last.cleared_by} on "
            f"{last.cleared_at:%Y-%m-%d}; nothing flags it now."
        )
    raise NotFlagged(f"“{document.filename}” is not flagged: there is nothing to clear.")


@transaction.atomic
def document_flag_clear(
    *, user: User, case_id: int, document_id: int, reason: str
) -> FlagClearance:
    """Clear the registry's flag on the document with a written reason (see the module).
    Not idempotent: a second clearing of the same flag is FlagAlreadyCleared (409), and the
    first one stands."""
    if not isinstance(case_id, int) or isinstance(case_id, bool) or not 0 < case_id <= _MAX_ID:
        raise NotFound(f"No case {case_id!r:.20}.")
    case = case_selectors.case_get_for_user(user=user, case_id=case_id)
    if not case_selectors.case_is_lawyer(user=user, case=case):
        raise LawyerRequired(
            "Only a lawyer on this case may clear a flag; ask one to do it, with the reason."
        )
    text = reason_clean(reason)
    document = _document(case=case, document_id=document_id)
    _refuse_generated(document)
    matches = _standing(document)
    clearance = FlagClearance.objects.create(document=document, cleared_by=user, reason=text)
    ArtifactMatch.objects.filter(pk__in=[m.pk for m in matches]).update(clearance=clearance)
    Document.objects.filter(pk=document.pk).update(provenance=Document.Provenance.CLEAR)
    audit_record(
        actor=user,
        action="document.flag_cleared",
        case=case,
        target=document,
        detail={
            "clearance": clearance.pk,
            "reason": text,
            "artifacts": ",".join(str(m.artifact_id) for m in matches),
            "matches": len(matches),
        },
    )
    return clearance
