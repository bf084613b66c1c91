"""Things standing where a record cite belongs that are no record cite of this case (step 6
of the package docstring)."""

import re
from dataclasses import replace

from apps.verification import exhibits
from apps.verification.checks.context import Context
from apps.verification.checks.record import named_cite
from apps.verification.checks.support import judge_pages
from apps.verification.claims import Claim, is_generated_reference
from apps.verification.claims.record import document_name_cite
from apps.verification.claims.references import is_brief_part
from apps.verification.findings import Finding
from apps.verification.index import (
    PacketIndex,
    bates_key,
    split_label,
)
from apps.verification.spans import excerpt_of

_FILE_NAME = re.compile(r"[\w][\w.\-]*\.[A-Za-z][A-Za-z0-9]{1,4}\b")
_GENERATED = re.compile(r"\b(draft|summary|memo|outline|v\d+|version|earlier|prior)\b", re.I)


def not_a_record_cite(claim: Claim, index: PacketIndex, ctx: Context) -> Finding:
    named = _titled_after_all(ctx, claim)
    if named is not None:
        return named
    if _GENERATED.search(claim.text) or is_generated_reference(claim.text):
        message = (
            f"{claim.text!r} refers to a system-generated document (an earlier draft or "
            "summary), which is not evidence and not in the packet"
        )
        return Finding(claim, "unsupported", "system_generated_reference", message)
    if is_brief_part(claim.text):
        # (the extractor read it as a part of a brief: of this draft, or of a party's brief)
        message = (
            f"{claim.text!r} refers to a part of a brief (this draft's own heading or table, "
            "or a party's brief): argument, not evidence, and not in the packet"
        )
        return Finding(claim, "unsupported", "system_generated_reference", message)
    document = _named_document(ctx, claim.text)
    if document is not None:
        return _document_cite(ctx, claim, document)
    what, printed = _what_it_is(ctx, claim.text)
    page = index.pages[printed[0]] if printed else None
    return Finding(
        claim,
        "unsupported",
        "not_a_record_cite",
        f"{claim.text!r} stands where a record cite belongs but is not one of this case: {what}",
        page=page,
        excerpt=excerpt_of(page.text, *printed[1]) if page and printed else "",
        match=printed[1] if printed else None,
    )


def _titled_after_all(ctx: Context, claim: Claim) -> Finding | None:
    """A piece the extractor read as no record cite by its words ("Discharge Summary at 1":
    "summary" is a word of the system's own work) that names a packet document with a
    page, every word of the name in that document's file name or title: a cite of that
    document, checked as one (the packet decides, not a list of words)."""
    found = document_name_cite(claim.text)
    if found is None:
        return None
    title, pin = found
    if ctx.documents is None:
        ctx.documents = exhibits.catalogue(ctx.index)
    if exhibits.titled(ctx.documents, ctx.index, title, names_only=True).document is None:
        return None
    return named_cite(ctx, replace(claim, kind="record_cite", title=title, pins=(pin,)))


def _what_it_is(ctx: Context, text: str) -> tuple[str, tuple[int, tuple[int, int]] | None]:
    """Why a token used as a cite is none of this case's (from the packet, not a list of
    words): where the packet prints it, else what its shape says it is."""
    printed = ctx.index.printed_on(text)
    spans = _production_spans(ctx)
    if printed is not None:
        page, _ = printed
        return (
            f"it is printed on {ctx.index.label(page)} "
            f"({ctx.index.pages[page].filename}), a number of the document or of another "
            f"production, not a Bates number of this production ({spans})",
            printed,
        )
    if _FILE_NAME.search(text):
        return f"a file name, not a document of the packet; this production is {spans}", None
    return f"not a Bates number of this production ({spans}), an exhibit or a document", None


def _production_spans(ctx: Context) -> str:
    """The packet's Bates labels by prefix, for messages ("ABC000001-ABC000240")."""
    if ctx.spans_label is None:
        prefixes: dict[str, str] = {}
        for page in ctx.index.pages:
            for label in page.bates:
                key, parts = bates_key(label), split_label(label)
                if key is not None and parts is not None:
                    prefixes.setdefault(key[0], parts[0])
        spans = [ctx.index.bates_span(prefix) for prefix in list(prefixes.values())[:4]]
        ctx.spans_label = ", ".join(f"{a}-{b}" for a, b in filter(None, spans)) or "none"
    return ctx.spans_label


def _named_document(ctx: Context, text: str) -> int | None:
    """The packet document whose file name `text` names (with or without its extension,
    any case, a pin after it), or None."""
    name = _FILE_NAME.search(text)
    wanted = (name.group() if name else text).strip().lower()
    if not wanted:
        return None
    for document, filename in ctx.index.document_names().items():
        lower = filename.lower()
        if wanted in (lower, lower.rsplit(".", 1)[0]):
            return document
    return None


def _document_cite(ctx: Context, claim: Claim, document: int) -> Finding:
    """A packet document cited by its file name, with a page pin ("report.pdf at 3") or
    without one (the whole document): its pages carry the segment as a Bates cite's do."""
    pages = ctx.index.document_pages(document)
    pin = re.search(r"(?:\bat|\bpp?\.)\s*(\d{1,4})\s*$", claim.text)
    if pin is not None:
        number = int(pin.group(1))
        chosen = [p for p in pages if ctx.index.pages[p].page_number == number]
        if not chosen:
            return Finding(
                claim,
                "unsupported",
                "record_cite_page",
                f"{ctx.index.pages[pages[0]].filename} has no page {number} (it has {len(pages)})",
                page=ctx.index.pages[pages[0]],
            )
        pages = chosen
    return judge_pages(ctx, claim, pages)
