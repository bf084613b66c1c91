"""The stamp preview, and the reads the "new production" page needs before anything is written.

1. The settings are checked by the production service's own check (same messages).
2. The first document is checked as the production would check it (withdrawn, kind, read).
3. Its first Bates number is the one the production would give it now: the start number
   asked for, else the next free number of that prefix's key in the case (apps.documents.bates).
4. Page 1 is stamped in memory by `stamping.stamp_first_page` (the stamping's own code) and
   rendered to a PNG of at most LEXWEB_MAX_RENDER_PIXELS pixels. No row is written but the
   read's audit row.
"""

from dataclasses import dataclass

import pymupdf
from django.conf import settings
from django.db.models import Max

from apps.accounts.models import User
from apps.cases import read_audit
from apps.cases import selectors as case_selectors
from apps.cases.models import Case
from apps.documents import (
    bates,
    extraction,
    production_door_services,
    production_services,
    render_slots,
    selectors,
    stamping,
)
from apps.documents.models import BatesPage, Document, Rendition
from lexweb.errors import DomainError, NotFound

PREVIEW_DPI = 100
# Ids in a production's picked list (the service takes any number; the page shows them all).
MAX_PICKED = 10_000


@dataclass(frozen=True)
class Stamp:
    """The stamp settings of a production as the form gives them."""

    prefix: str
    digits: int = 6
    position: str = "bottom_right"
    legend: str = ""
    legend_position: str = "bottom_left"
    font_size: float = 9.0
    margin: float = 18.0
    start_number: int | None = None
    page_suffix_digits: int = 0

    def settings(self) -> stamping.StampSettings:
        return stamping.StampSettings(
            prefix=self.prefix,
            digits=self.digits,
            position=self.position,
            legend=self.legend.strip(),
            legend_position=self.legend_position,
            font_size=self.font_size,
            margin=self.margin,
            page_suffix_digits=self.page_suffix_digits,
        )


def next_number(*, case: Case, prefix: str) -> int:
    """The number a production of `prefix` starts at when no start number is given: after the
    highest used by any prefix of its key ("ABC " continues "ABC-")."""
    spellings = bates.prefix_spellings(bates.prefix_key(prefix))
    used = BatesPage.objects.filter(case=case, prefix__in=spellings).aggregate(top=Max("number"))[
        "top"
    ]
    return (used or 0) + 1


def stamp_check(*, case: Case, stamp: Stamp) -> int:
    """Refuse settings the production would refuse; the first Bates number it would use."""
    production_services.production_stamp_check(
        prefix=stamp.prefix,
        digits=stamp.digits,
        font_size=stamp.font_size,
        margin=stamp.margin,
        legend=stamp.legend.strip(),
        position=stamp.position,
        legend_position=stamp.legend_position,
        page_suffix_digits=stamp.page_suffix_digits,
    )
    first = stamp.start_number
    if first is None:
        first = next_number(case=case, prefix=stamp.prefix)
    if first < 1:
        raise DomainError("Bates numbers start at 1 or higher.")
    if len(str(first)) > stamp.digits:
        raise DomainError(f"{first} has more than {stamp.digits} digits.")
    return first


def production_preview_png_for_user(
    *, user: User, case_id: int, document_id: int, stamp: Stamp, dpi: int = PREVIEW_DPI
) -> bytes:
    """Page 1 of `document_id` stamped with `stamp` as the production would stamp it, as PNG.
    NotFound for a document outside the user's cases; DomainError (the production's own
    message) for settings or a document a production would refuse. Audited as a view."""
    case = case_selectors.case_get_for_user(user=user, case_id=case_id)
    document = Document.objects.select_related("blob").filter(case=case, pk=document_id).first()
    if document is None:
        raise NotFound(f"No document {document_id} in this case.")
    first = stamp_check(case=case, stamp=stamp)
    production_services.production_document_check(document)
    source = production_services.production_source(
        document=document, first_number=first, first_page_only=True
    )
    # A page image like any other: it takes one of the process's render slots.
    with render_slots.render_slot(), stamping.stamp_first_page(source, stamp.settings()) as one:
        page = one[0]
        extraction.check_page_images(page)
        zoom = extraction.page_zoom(
            page.rect, dpi=dpi, max_pixels=settings.LEXWEB_MAX_RENDER_PIXELS
        )
        png: bytes = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False).tobytes("png")
    read_audit.read_record(
        user=user,
        action="production.preview",
        case=case,
        target=document,
        detail={"bates": stamp.settings().page_label(first, 0)},
    )
    return png


def picked_documents_for_user(*, user: User, case_id: int, ids: list[int]) -> list[Document]:
    """The case's documents among `ids`, in that order (ids of other cases and repeats are
    dropped). Audited as a read of the list."""
    case = case_selectors.case_get_for_user(user=user, case_id=case_id)
    ids = list(dict.fromkeys(ids))[:MAX_PICKED]
    found = {
        d.pk: d
        for d in Document.objects.filter(case=case, pk__in=ids).select_related("blob", "rendition")
    }
    read_audit.read_record(user=user, action="document.list", case=case)
    return [found[i] for i in ids if i in found]


@dataclass(frozen=True)
class Producible:
    """Can a picked document be produced? `refused`: why a production refuses it outright
    (withdrawn, a volume, not read...); `held_back`: why the door out holds it back unless a
    lawyer includes it (production_door_services); both "" when it can."""

    document: Document
    pages: int
    refused: str
    held_back: str

    @property
    def producible(self) -> bool:
        return not self.refused and not self.held_back


def producible(documents: list[Document]) -> list[Producible]:
    """The answer for each document (of a case the caller reached through a `_for_user`
    selector): no query but the lineage of system-generated documents and renditions."""
    answers = []
    for document in documents:
        try:
            production_services.production_document_check(document)
        except DomainError as exc:
            refused, held = exc.message, ""
        else:
            refused = ""
            held = production_door_services.production_door_problem(document) or ""
        answers.append(Producible(document, production_pages(document), refused, held))
    return answers


def production_check_for_user(
    *, user: User, case_id: int, ids: list[int]
) -> tuple[list[Producible], bool]:
    """Can it be produced? The answer for the case's documents among `ids`, in that order
    (others' ids and repeats dropped), and whether `user` may include a held-back one (a
    lawyer of the case). Audited as a read of the list."""
    documents = picked_documents_for_user(user=user, case_id=case_id, ids=ids)
    case = case_selectors.case_get_for_user(user=user, case_id=case_id)
    return producible(documents), case_selectors.case_is_lawyer(user=user, case=case)


def production_pages(document: Document) -> int:
    """The pages the document takes in a production: a rendered kind's (text, e-mail, Word,
    Excel, Outlook) rendition's once ready, as production_create counts them; else the pages
    it stores (a rendered kind not ready yet is refused by a production anyway)."""
    rendition = selectors.rendition_for(document)
    if rendition is None or rendition.status != Rendition.Status.READY:
        return document.page_count
    return rendition.page_count
