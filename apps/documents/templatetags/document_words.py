"""Template filters for documents' stored values in words (apps/documents/labels.py)."""

from django import template

from apps.documents import labels

register = template.Library()


@register.filter
def text_source(source: str, kind: str = "") -> str:
    """`{{ page.source|text_source:document.kind }}`: "the e-mail's text", "OCR ..."."""
    return labels.text_source(source, kind)
