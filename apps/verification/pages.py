"""The verifier's view of a frozen packet's pages (`index.PageRecord`), read from the database: a
leaf module, so the kept index (index_cache) and the services both read pages without importing
each other."""

from typing import TYPE_CHECKING

from apps.evidence.models import FrozenPage

if TYPE_CHECKING:
    from apps.verification.index import PageRecord


def page_record(page: FrozenPage) -> "PageRecord":
    """The verifier's view of one frozen page (its document selected)."""
    from apps.verification.index import PageRecord  # the index is imported when first used

    return PageRecord(
        position=page.position,
        document_id=page.document_id,
        filename=page.document.filename,
        page_number=page.page_number,
        bates=tuple(page.bates),
        text=page.text,
        source=page.source,
        ocr_confidence=page.ocr_confidence,
        origin=page.origin,
    )


def page_records(*, packet_id: int) -> list["PageRecord"]:
    """The verifier's view of every frozen page of the packet, in position order, read as
    plain rows (the same values as `page_record` of each page)."""
    from apps.verification.index import PageRecord

    rows = (
        FrozenPage.objects.filter(packet_id=packet_id)
        .order_by("position")
        .values_list(
            "position",
            "document_id",
            "document__filename",
            "page_number",
            "bates",
            "text",
            "source",
            "ocr_confidence",
            "origin",
        )
    )
    return [
        PageRecord(
            position=position,
            document_id=document_id,
            filename=filename,
            page_number=page_number,
            bates=tuple(bates),
            text=text,
            source=source,
            ocr_confidence=ocr_confidence,
            origin=origin,
        )
        for (
            position,
            document_id,
            filename,
            page_number,
            bates,
            text,
            source,
            ocr_confidence,
            origin,
        ) in rows.iterator(chunk_size=2000)
    ]
