"""The door out (issue 25 req 1): what a production may not send out without a lawyer's word.

A production holds back, by default, every document that must not leave by accident:

- system generated (lexweb wrote it);
- derived, at any depth, from something generated (`provenance.generated_ancestor`);
- flagged by the generated-artifact registry (a re-upload of lexweb's output; a lawyer's
  clearing of a wrong flag makes the document clear again, see evidence.services.clearance);
- firm work product (origin "work_product": the firm's own notes, memos and drafts; lexweb has
  no separate privilege marker, so this origin is the work-product mark).

`production_door_check`, called by `production_services.production_create` inside its
transaction with the documents locked:

1. Each inclusion names a document of the production, once, with a written reason
   (`reason_clean`: 10 to 2,000 characters, plain text); an inclusion of a document that
   nothing holds back is refused, so that no reason is recorded for nothing.
2. Inclusions come only from a lawyer of the case (a lawyer by role, on the case as a lawyer:
   never staff, never a staff member's token): LawyerRequired (403) otherwise.
3. Every held-back document that is not included is named, with why, in one
   ProductionRefused (422 `production_refused`); nothing is written.
4. The included ones come back with why each was held back; the production stores the lawyer
   and the reason on its item and audits each ("production.document_included").

`production_door_problem` is the same rule for one document, read by the order screen's "Can
it be produced?" column and the API's check endpoint.

A production volume itself is never produced again (its origin "production"): that is a plain
refusal of `production_services.production_document_check`, not one a lawyer can override.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases import selectors as case_selectors
from apps.cases.models import Case
from apps.documents import lineage_selectors as provenance
from apps.documents.models import Document, Production
from apps.documents.reasons import LawyerRequired, reason_clean
from lexweb.errors import DomainError

# A lawyer may include it with a written reason: said after every held-back reason.
HOW_TO_INCLUDE = "a lawyer of the case may include it with a written reason"


class ProductionRefused(DomainError):
    """Documents a production holds back were not included by a lawyer (422). `refusals`
    lists each as (document id, filename, why); the API answers them as `errors`."""

    code = "production_refused"
    status: ClassVar[int] = 422

    def __init__(self, message: str, *, refusals: Sequence[tuple[int, str, str]]) -> None:
        super().__init__(message)
        self.refusals = list(refusals)

    @property
    def errors(self) -> list[dict[str, object]]:
        return [
            {"loc": ["document_ids", document_id], "msg": f"{filename}: {why}"}
            for document_id, filename, why in self.refusals
        ]


@dataclass(frozen=True)
class Inclusion:
    """A lawyer's choice to produce a held-back document, and why."""

    document_id: int
    reason: str


def production_door_problem(document: Document) -> str | None:
    """Why a production holds `document` back unless a lawyer includes it, or None.

    Generated lineage is read from the origin: `services.derivation_record`, the one writer of
    lineage, marks everything derived from something generated system generated in the same
    transaction, at any depth. Only a system-generated document's lineage is read (one query),
    to say what it was derived from."""
    if document.origin == Document.Origin.SYSTEM_GENERATED:
        ancestor = provenance.generated_ancestor(document)
        if ancestor is not None and ancestor.origin == Document.Origin.SYSTEM_GENERATED:
            return (
                f"it is derived from “{ancestor.filename}” (document {ancestor.document_id}), "
                "which lexweb generated"
            )
        return "it is system generated (lexweb wrote it)"
    if document.provenance == Document.Provenance.FLAGGED:
        return "the generated-artifact registry flagged it (it matches something lexweb wrote)"
    if document.origin == Document.Origin.WORK_PRODUCT:
        return "it is firm work product"
    return None


def production_door_check(
    *, case: Case, actor: User, documents: Sequence[Document], inclusions: Sequence[Inclusion]
) -> dict[int, tuple[str, str]]:
    """Steps 1-3 of the module: {document id: (why held back, the lawyer's reason)} of the
    included documents, or a DomainError saying what to change."""
    by_id = {document.pk: document for document in documents}
    reasons: dict[int, str] = {}
    for inclusion in inclusions:
        if inclusion.document_id not in by_id:
            raise DomainError(
                f"Document {inclusion.document_id} is included but not among the production's "
                "documents; include only documents you produce."
            )
        if inclusion.document_id in reasons:
            raise DomainError(f"Document {inclusion.document_id} is included twice.")
        reasons[inclusion.document_id] = reason_clean(inclusion.reason)
    if reasons and not case_selectors.case_is_lawyer(user=actor, case=case):
        raise LawyerRequired(
            "Only a lawyer on this case may include a held-back document in a production; ask "
            "one to include it, with the reason."
        )
    included: dict[int, tuple[str, str]] = {}
    refused: list[tuple[int, str, str]] = []
    for document in documents:
        problem = production_door_problem(document)
        if problem is not None and document.pk in reasons:
            included[document.pk] = (problem, reasons[document.pk])
        elif problem is not None:
            refused.append((document.pk, document.filename, problem))
        elif document.pk in reasons:
            raise DomainError(
                f"{document.filename} (document {document.pk}) is not held back; include only "
                "what the production refuses."
            )
    if refused:
        raise ProductionRefused(_refused_message(refused), refusals=refused)
    return included


def _refused_message(refused: list[tuple[int, str, str]]) -> str:
    lines = " ".join(f"{name} (document {pk}): {why}." for pk, name, why in refused)
    count = f"{len(refused)} document{'s' if len(refused) != 1 else ''}"
    return (
        f"Nothing was produced: {count} may not leave the firm by accident. {lines} Take each "
        f"out, or {HOW_TO_INCLUDE}."
    )


def production_inclusions_audit(
    *, production: Production, actor: User, included: dict[int, tuple[str, str]]
) -> None:
    """One audit row per included document (step 4), with why it was held back and the
    reason it was produced all the same. Its target is the document (the case's activity
    names it); the production is in its detail."""
    documents = Document.objects.in_bulk(list(included))
    for document_id, (problem, reason) in included.items():
        account_services.audit_record(
            actor=actor,
            action="production.document_included",
            case=production.case,
            target=documents.get(document_id, production),
            detail={
                "document": document_id,
                "production": production.pk,
                "volume": production.volume,
                "held_back": problem,
                "reason": reason,
            },
        )
