"""Stored values of documents in words a person reads (issue 25 req 6). Where a page's text
came from depends on what the file is: the text of an e-mail, an Outlook message, a Word
document or a workbook is read straight from the file, which the stored code calls
"text_file"; a person reads "the e-mail's text", not "Text file"."""

from apps.documents.models import Document, Page

# Where a page's text came from, for the kinds whose text is read from the file itself.
_READ_FROM_FILE = {
    Document.Kind.TEXT: "the text file",
    Document.Kind.EMAIL: "the e-mail's text",
    Document.Kind.OUTLOOK: "the Outlook message's text",
    Document.Kind.WORD: "the Word document's text",
    Document.Kind.SPREADSHEET: "the workbook's cells",
}
_SOURCES = {
    Page.Source.TEXT_LAYER: "the PDF's text layer",
    Page.Source.OCR: "OCR (Tesseract) of the page image",
    Page.Source.NONE: "no text",
}


def text_source(source: str, kind: str = "") -> str:
    """Where a page's text came from (a Page.Source value), in words for its document's kind
    (a Document.Kind value, "" when not known)."""
    if source == Page.Source.TEXT_FILE:
        return _READ_FROM_FILE.get(kind, "the file's own text")  # type: ignore[call-overload]
    if source in _SOURCES:
        return _SOURCES[source]  # type: ignore[index]
    return str(source or "").replace("_", " ") or "not known"
