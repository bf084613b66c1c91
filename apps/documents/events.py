"""Payloads this app sends to a case's stream (see apps.cases.events.publish_to_case)."""

from typing import Literal, TypedDict

from apps.cases.events import case_event_types


class DocumentProgress(TypedDict):
    """A document's ingest moved on. `pages_done` of `page_count`; the row is the truth."""

    type: Literal["documents.progress"]
    case_id: int
    document_id: int
    filename: str
    status: str
    pages_done: int
    page_count: int
    error: str
    # The generated-artifact registry's verdict (pending until the text has been checked).
    provenance: str


class ProductionProgress(TypedDict):
    """A production's stamping moved on."""

    type: Literal["documents.production_progress"]
    case_id: int
    production_id: int
    volume: str
    status: str
    pages_done: int
    page_count: int
    error: str


class ExportProgress(TypedDict):
    """A production export (the volume zip) moved on: queued, building, ready or failed."""

    type: Literal["documents.export_progress"]
    case_id: int
    production_id: int
    export_id: int
    status: str
    error: str


class RenditionProgress(TypedDict):
    """A document's rendering to PDF moved on (queued, rendering, ready, failed, unavailable).
    `label` is what a person reads ("rendering failed: <reason>")."""

    type: Literal["documents.rendition_progress"]
    case_id: int
    document_id: int
    status: str
    page_count: int
    label: str


case_event_types(
    "documents.progress",
    "documents.production_progress",
    "documents.export_progress",
    "documents.rendition_progress",
)
