from ninja import ModelSchema, Schema

from apps.documents.models import Document, Page


class DocumentOut(ModelSchema):
    sha256: str
    size: int
    parent_id: int | None

    class Meta:
        model = Document
        fields = [
            "id",
            "filename",
            "kind",
            "content_type",
            "origin",
            "status",
            "error",
            "page_count",
            "pages_done",
            "created_at",
        ]

    @staticmethod
    def resolve_sha256(obj: Document) -> str:
        return obj.blob.sha256

    @staticmethod
    def resolve_size(obj: Document) -> int:
        return obj.blob.size


class UploadResultOut(Schema):
    filename: str
    status: str  # created | duplicate | error
    error: str
    notes: list[str]
    document: DocumentOut | None


class UploadOut(Schema):
    created: int
    duplicates: int
    errors: int
    results: list[UploadResultOut]


class PageOut(ModelSchema):
    class Meta:
        model = Page
        fields = ["number", "text", "source", "ocr_confidence", "needs_review"]


class SearchHitOut(Schema):
    document_id: int
    filename: str
    origin: str
    page: int
    bates: str | None
    rank: float
    snippet: str


class SearchFilter(Schema):
    q: str
    origin: Document.Origin | None = None
    document: int | None = None
