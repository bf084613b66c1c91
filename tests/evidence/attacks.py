"""Generators for the adversarial suite of issue 10: every way a draft lexweb wrote could come
back in as "evidence", and the legitimate documents that must not be mistaken for one.

Pure functions of their inputs (bytes and text in, bytes and text out), deterministic (no clock,
no randomness without a fixed seed), no Django: `bench/provenance_eval.py` uses them too.

Attacks (the issue's letters):
  (b) `export_pdf`: a draft exported to PDF (what an export of a model output looks like);
  (c) `rewrite_pdf_metadata`: the same PDF re-saved with its metadata and producer rewritten
      (different bytes, same text) and `retypeset_pdf`: set again in another font and measure;
  (d) `paste_pdf`, `paste_txt`: the draft's text pasted into a new PDF and into a text file;
  (f) `page_pngs`, `pages_tiff`, `image_only_pdf`: the draft printed to page images;
  (g) `eml_with_body`, `eml_with_attachment`: the draft e-mailed, as the body / as an attachment;
  (h) `reorder_and_reword`: paragraphs reordered, a third of the sentences reworded;
  (i) `junk_receipt_text`: a client's document that carries "RTX 3060"-style tokens.
Legitimate drafts for the converse: `quoting_draft` quotes 2-4 passages of a real document plus
caption and signature-block boilerplate, as a lawyer's brief would.
"""

import hashlib
import html
import io
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path

import pymupdf

# ../shared beside the checkout, as tests/documents/files.py finds it (settings.BASE_DIR.parent).
SHARED = Path(__file__).resolve().parents[2].parent / "shared"
EVAL = SHARED / "eval" / "verifier"
REAL = SHARED / "fixtures" / "real"

# A fixed moment for everything that carries a date (PDF metadata, e-mail headers).
_WHEN = datetime(2026, 11, 30, 15, 4, 5, tzinfo=UTC)


def shared_available() -> bool:
    return EVAL.is_dir() and REAL.is_dir()


def shared_missing_reason() -> str:
    return f"{SHARED} is absent (the eval set and fixtures/real are read in place from there)"


def must_have_shared() -> bool:
    """Under CI=true a missing ../shared is a failure, not a skip."""
    return os.environ.get("CI") == "true"


# --- The eval set ----------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalDraft:
    case: str  # folder name, e.g. "case-loan-fraud"
    name: str  # file name, e.g. "case-summary.md"
    text: str

    @property
    def label(self) -> str:
        return f"{self.case}/drafts/{self.name}"


def eval_cases() -> list[Path]:
    return sorted(p for p in EVAL.iterdir() if p.is_dir() and (p / "case.json").is_file())


def eval_drafts() -> list[EvalDraft]:
    return [
        EvalDraft(case.name, path.name, path.read_text(encoding="utf-8"))
        for case in eval_cases()
        for path in sorted((case / "drafts").glob("*.md"))
    ]


def eval_sources() -> list[Path]:
    return [path for case in eval_cases() for path in sorted((case / "sources").glob("*.pdf"))]


def real_fixtures() -> list[Path]:
    return sorted(p for p in REAL.iterdir() if p.is_file() and p.suffix in {".pdf", ".txt"})


# --- Markdown as a reader sees it ------------------------------------------------------------


def markdown_blocks(markdown: str) -> list[tuple[str, str]]:
    """The draft as (kind, text) blocks: "h" headings, "li" list items, "p" paragraphs, with
    the markup a renderer removes (heading hashes, list dashes, emphasis stars) removed."""
    blocks: list[tuple[str, str]] = []
    for raw in re.split(r"\n\s*\n", markdown.replace("\r\n", "\n")):
        lines = [line.rstrip() for line in raw.strip().split("\n") if line.strip()]
        if not lines:
            continue
        paragraph: list[str] = []
        for line in lines:
            if line.startswith("#"):
                blocks.append(("h", _inline(line.lstrip("#").strip())))
            elif re.match(r"\s*[-*+] ", line):
                blocks.append(("li", _inline(re.sub(r"^\s*[-*+] ", "", line))))
            else:
                paragraph.append(_inline(line.strip()))
        if paragraph:
            blocks.append(("p", " ".join(paragraph)))
    return blocks


def _inline(text: str) -> str:
    return re.sub(r"(\*\*|__|\*|`)", "", text)


def plain_text(markdown: str) -> str:
    """The draft's text without markup, one block a paragraph (what a PDF of it reads as)."""
    return "\n\n".join(
        ("• " + text) if kind == "li" else text for kind, text in markdown_blocks(markdown)
    )


# --- PDFs ------------------------------------------------------------------------------------

_LETTER = pymupdf.paper_rect("letter")


def _story_pdf(body_html: str, css: str, *, margin: float, paper: pymupdf.Rect = _LETTER) -> bytes:
    story = pymupdf.Story(html=body_html, user_css=css)
    buffer = io.BytesIO()
    writer = pymupdf.DocumentWriter(buffer)
    where = pymupdf.Rect(paper.x0 + margin, paper.y0 + margin, paper.x1 - margin, paper.y1 - margin)
    more = True
    while more:
        device = writer.begin_page(paper)
        more, _ = story.place(where)
        story.draw(device)
        writer.end_page()
    writer.close()
    return buffer.getvalue()


def _set_metadata(data: bytes, metadata: dict[str, str]) -> bytes:
    with pymupdf.open(stream=data, filetype="pdf") as document:
        document.set_metadata(metadata)
        return document.tobytes(garbage=3, deflate=True, no_new_id=True)


def export_pdf(markdown: str, *, title: str) -> bytes:
    """(b) The draft exported to PDF the way an export would set it: headings, list items and
    paragraphs, Letter pages, 1-inch margins, serif 12 pt; lexweb named as the producer."""
    parts = []
    for kind, text in markdown_blocks(markdown):
        escaped = html.escape(text)
        if kind == "h":
            parts.append(f"<h2>{escaped}</h2>")
        elif kind == "li":
            parts.append(f"<ul><li>{escaped}</li></ul>")
        else:
            parts.append(f"<p>{escaped}</p>")
    css = "body {font-family: serif; font-size: 12pt;} h2 {font-size: 14pt;} p {margin: 6pt 0;}"
    data = _story_pdf("".join(parts), css, margin=72)
    return _set_metadata(
        data,
        {
            "title": title,
            "author": "lexweb",
            "producer": "lexweb export 1",
            "creator": "lexweb",
            "creationDate": "D:20261130150405Z",
            "modDate": "D:20261130150405Z",
        },
    )


def rewrite_pdf_metadata(data: bytes) -> bytes:
    """(c) The same pages re-saved by another program, every metadata field rewritten, the
    document ID and XMP dropped: the bytes differ; the text does not."""
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(data))
    writer = pypdf.PdfWriter()
    for page in reader.pages:
        writer.add_page(page)
    writer.add_metadata(
        {
            "/Title": "Declaration (final)",
            "/Author": "J. Associate",
            "/Producer": "Microsoft® Word for Microsoft 365",
            "/Creator": "Microsoft® Word for Microsoft 365",
            "/CreationDate": "D:20240105093000-05'00'",
            "/ModDate": "D:20240105093000-05'00'",
        }
    )
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def retypeset_pdf(markdown: str) -> bytes:
    """(c) The draft set again: sans-serif 10 pt, A4, narrow margins, no headings' markup, so
    every line breaks somewhere else."""
    parts = [f"<p>{html.escape(text)}</p>" for _, text in markdown_blocks(markdown)]
    css = "body {font-family: sans-serif; font-size: 10pt;} p {margin: 4pt 0;}"
    data = _story_pdf("".join(parts), css, margin=40, paper=pymupdf.paper_rect("a4"))
    return _set_metadata(data, {"producer": "LibreOffice 24.2", "creator": "Writer"})


def paste_pdf(text: str) -> bytes:
    """(d) The text pasted into a new document and saved as PDF: one block, Courier 11 pt,
    wrapped at the page width, as many pages as it needs."""
    escaped = "".join(f"<p>{html.escape(line)}</p>" for line in text.split("\n") if line.strip())
    data = _story_pdf(escaped, "body {font-family: monospace; font-size: 11pt;}", margin=54)
    return _set_metadata(data, {"producer": "macOS Quartz PDFContext", "title": "Untitled"})


def paste_txt(text: str) -> bytes:
    """(d) The text pasted into a text file: Windows line ends, lines wrapped at 72 columns,
    typographic quotes kept."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        words = paragraph.split()
        line = ""
        for word in words:
            if line and len(line) + 1 + len(word) > 72:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return ("\r\n".join(lines) + "\r\n").encode("utf-8")


# --- Printing to images ----------------------------------------------------------------------


def _gray_pixmaps(pdf: bytes, *, dpi: int, pages: int | None) -> list[pymupdf.Pixmap]:
    with pymupdf.open(stream=pdf, filetype="pdf") as document:
        return [
            page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY) for page in list(document)[:pages]
        ]


def page_pngs(pdf: bytes, *, dpi: int = 200, pages: int | None = None) -> list[bytes]:
    """(f) Each page printed to a grayscale PNG."""
    return [pixmap.tobytes("png") for pixmap in _gray_pixmaps(pdf, dpi=dpi, pages=pages)]


def pages_tiff(pdf: bytes, *, dpi: int = 200, pages: int | None = None) -> bytes:
    """(f) The pages printed to one multi-page TIFF (what a scanner's "scan to file" writes)."""
    from PIL import Image

    frames = [
        Image.frombytes("L", (p.width, p.height), p.samples)
        for p in _gray_pixmaps(pdf, dpi=dpi, pages=pages)
    ]
    buffer = io.BytesIO()
    frames[0].save(
        buffer,
        format="TIFF",
        save_all=True,
        append_images=frames[1:],
        compression="tiff_lzw",
        dpi=(dpi, dpi),
    )
    return buffer.getvalue()


def image_only_pdf(pdf: bytes, *, dpi: int = 200, pages: int | None = None) -> bytes:
    """(f) The pages printed and scanned back to PDF: one image a page, no text layer."""
    with pymupdf.open(stream=pdf, filetype="pdf") as original, pymupdf.open() as scan:
        for page in list(original)[:pages]:
            pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
            target = scan.new_page(width=page.rect.width, height=page.rect.height)
            target.insert_image(target.rect, stream=pixmap.tobytes("png"))
        return scan.tobytes(garbage=3, deflate=True)


def degraded_scan_pdf(pdf: bytes, *, dpi: int = 200, pages: int | None = None) -> bytes:
    """(f) A worse print-and-scan: each page rendered, turned 0.8 degrees, softened (a blur
    of radius 0.6) and saved as a JPEG of quality 50, then put back in an image-only PDF."""
    from PIL import Image, ImageFilter

    with pymupdf.open() as scan:
        for pixmap in _gray_pixmaps(pdf, dpi=dpi, pages=pages):
            image = Image.frombytes("L", (pixmap.width, pixmap.height), pixmap.samples)
            image = image.rotate(0.8, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255)
            image = image.filter(ImageFilter.GaussianBlur(radius=0.6))
            buffer = io.BytesIO()
            image.save(buffer, format="JPEG", quality=50, dpi=(dpi, dpi))
            width, height = image.width * 72 / dpi, image.height * 72 / dpi
            target = scan.new_page(width=width, height=height)
            target.insert_image(target.rect, stream=buffer.getvalue())
        return scan.tobytes(garbage=3, deflate=True)


# --- E-mail ----------------------------------------------------------------------------------


def _message(subject: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = "Associate <associate@firm.test>"
    message["To"] = "Client <client@client.test>"
    message["Subject"] = subject
    message["Date"] = format_datetime(_WHEN)
    message["Message-ID"] = "<" + hashlib.sha256(subject.encode()).hexdigest()[:24] + "@firm.test>"
    return message


def eml_with_body(
    text: str,
    *,
    subject: str = "Case summary",
    attachment: tuple[bytes, str, str] | None = None,
) -> bytes:
    """(g) The summary e-mailed as the body of a message (plain text); with `attachment`
    (data, filename, media type), attached to the same message as well."""
    message = _message(subject)
    message.set_content("Hi,\n\nHere is the summary we discussed.\n\n" + text + "\n\nBest,\nA.")
    if attachment is not None:
        data, filename, media_type = attachment
        maintype, subtype = media_type.split("/", 1)
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return message.as_bytes()


def eml_with_attachment(
    data: bytes, *, filename: str, media_type: str, subject: str = "Summary attached"
) -> bytes:
    """(g) The summary e-mailed as an attachment (a short covering note as the body)."""
    message = _message(subject)
    message.set_content("Hi,\n\nPlease see the attached.\n\nBest,\nA.")
    maintype, subtype = media_type.split("/", 1)
    message.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return message.as_bytes()


# --- Rewording -------------------------------------------------------------------------------

# A deterministic "paraphrase": synonyms for common words of legal prose, applied to a third of
# the sentences. Where a sentence has few of these, connective words are swapped as well, so
# a reworded sentence keeps almost no run of five words of the original.
_SYNONYMS = {
    "a": "one",
    "about": "regarding",
    "after": "following",
    "agreement": "contract",
    "all": "every",
    "also": "additionally",
    "an": "one",
    "and": "as well as",
    "any": "each",
    "are": "remain",
    "as": "since",
    "asked": "requested",
    "at": "in",
    "because": "since",
    "before": "prior to",
    "but": "yet",
    "by": "through",
    "claim": "cause of action",
    "company": "business",
    "court": "tribunal",
    "date": "day",
    "did": "had",
    "do": "perform",
    "does": "is",
    "entered": "signed",
    "for": "toward",
    "from": "out of",
    "found": "determined",
    "gave": "provided",
    "has": "possesses",
    "have": "hold",
    "he": "this person",
    "his": "their",
    "i": "the declarant",
    "in": "within",
    "is": "remains",
    "it": "this",
    "its": "their",
    "letter": "correspondence",
    "made": "created",
    "me": "the declarant",
    "my": "the declarant's",
    "never": "at no point",
    "no": "not any",
    "not": "never",
    "note": "instrument",
    "notice": "notification",
    "of": "concerning",
    "on": "upon",
    "or": "alternatively",
    "paid": "remitted",
    "payment": "remittance",
    "payments": "remittances",
    "received": "got",
    "said": "stated",
    "sent": "dispatched",
    "shall": "must",
    "should": "ought to",
    "showing": "demonstrating",
    "shows": "demonstrates",
    "signed": "executed",
    "so": "therefore",
    "still": "nonetheless",
    "that": "which",
    "the": "this",
    "their": "its",
    "then": "subsequently",
    "there": "here",
    "this": "the present",
    "to": "so as to",
    "under": "pursuant to",
    "was": "had been",
    "we": "counsel",
    "were": "had been",
    "when": "once",
    "which": "that",
    "will": "shall",
    "with": "alongside",
    "without": "lacking",
    "wrote": "stated in writing",
}


def _match_case(original: str, replacement: str) -> str:
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def reword_sentence(sentence: str) -> str:
    """Every word the table knows is replaced; then, so no long run of the original survives,
    "indeed" is put after every fourth word still left as it was."""
    out: list[str] = []
    unchanged = 0
    for token in sentence.split(" "):
        core = re.sub(r"^[\"“(]+|[\"”).,;:!?]+$", "", token)
        lead = token[: token.find(core)] if core else token
        tail = token[token.find(core) + len(core) :] if core else ""
        replacement = _SYNONYMS.get(core.lower()) if core else None
        if replacement is not None:
            out.append(lead + _match_case(core, replacement) + tail)
            unchanged = 0
            continue
        out.append(token)
        unchanged += 1
        if unchanged == 4 and not tail:
            out.append("indeed")
            unchanged = 0
    return " ".join(out)


_MIN_SENTENCE_WORDS = 4
_SENTENCE_END = re.compile(r"([.!?][\"”)]?)\s+(?=[\"“(]?[A-Z0-9])")


def sentences(paragraph: str) -> list[str]:
    """The paragraph cut after each ".", "!" or "?" (a closing quote or bracket kept with it)
    that is followed by a capital or a digit."""
    parts = _SENTENCE_END.split(paragraph.strip())
    # split() with a group alternates text and the captured end: glue each end back on.
    joined = [
        parts[i] + (parts[i + 1] if i + 1 < len(parts) else "") for i in range(0, len(parts), 2)
    ]
    return [s for s in joined if s]


def reorder_and_reword(markdown: str, *, seed: str = "h") -> str:
    """(h) The draft with its paragraphs in another order (the first, its title, stays first)
    and every third sentence reworded (`reword_sentence`)."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", markdown.strip()) if p.strip()]
    head, body = paragraphs[:1], paragraphs[1:]
    body.sort(key=lambda p: hashlib.sha256((seed + p).encode()).hexdigest())
    counter = 0
    out: list[str] = []
    for paragraph in head + body:
        lines = []
        for line in paragraph.split("\n"):
            parts = []
            for sentence in sentences(line):
                if len(sentence.split()) < _MIN_SENTENCE_WORDS:  # "2.", "Id.": not a sentence
                    parts.append(sentence)
                    continue
                parts.append(reword_sentence(sentence) if counter % 3 == 0 else sentence)
                counter += 1
            lines.append(" ".join(parts))
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


def reworded_share(original: str, reworded: str) -> float:
    """Share of the original's sentences (of four words or more) that appear unchanged in the
    reworded text: a check that the rewording really touched about a third of them."""
    plain = [
        s
        for line in original.split("\n")
        for s in sentences(line)
        if len(s.split()) >= _MIN_SENTENCE_WORDS
    ]
    kept = sum(1 for s in plain if s in reworded)
    return kept / len(plain) if plain else 1.0


# --- (i) Junk "Bates numbers" ----------------------------------------------------------------

JUNK_TOKENS = ("RTX 3060", "RTX3060", "GPU 0001")


def junk_receipt_text() -> str:
    """A client's receipt for office hardware: its product and serial lines read like the junk
    a model once invented as Bates numbers ("RTX 3060", "GPU 0001"). Evidence, not an attack."""
    return (
        "NORTHGATE COMPUTER SUPPLY\n"
        "1180 Industrial Way, Beaverton, OR 97005\n"
        "SALES RECEIPT No. 55-20931        Date: 03/18/2024\n\n"
        "Sold to: Adeyemi Catering Services, 4410 SE Division St, Portland, OR 97206\n\n"
        "Qty  Item                                            Unit       Total\n"
        "1    NVIDIA GeForce RTX 3060 12GB graphics card      $329.99    $329.99\n"
        "1    Workstation chassis, serial GPU 0001-44817      $189.00    $189.00\n"
        "2    16GB DDR4 memory module                          $41.50     $83.00\n"
        "     Subtotal                                                   $601.99\n"
        "     Tax (0.00%)                                                  $0.00\n"
        "     TOTAL PAID (Visa ending 4417)                              $601.99\n\n"
        "Warranty: the RTX3060 card carries the manufacturer's three-year warranty; keep this\n"
        "receipt. Returns within 30 days with the original packaging. Restocking fee 15% on\n"
        "opened graphics cards. Thank you for shopping at Northgate.\n"
    )


def text_pdf(text: str) -> bytes:
    """A plain one-column PDF of `text` (for generated legitimate documents)."""
    escaped = "".join(f"<p>{html.escape(line)}</p>" for line in text.split("\n") if line.strip())
    return _story_pdf(escaped, "body {font-family: sans-serif; font-size: 10pt;}", margin=54)


# --- Legitimate drafts quoting real documents ------------------------------------------------

FIRM_SIGNATURE = (
    "Respectfully submitted,\n\n"
    "/s/ Dana Whitfield\n"
    "Dana Whitfield (State Bar No. 204518)\n"
    "WHITFIELD & MARSH LLP\n"
    "1200 Fifth Avenue, Suite 1900\n"
    "Seattle, Washington 98101\n"
    "Telephone: (206) 555-0148\n"
    "Attorneys for Plaintiff"
)

_CONNECTIVES = (
    "The record is explicit on this point.",
    "That language controls the question presented here.",
    "Nothing in the later filings departs from it.",
    "The opposing brief does not address this passage at all.",
    "Read in context, the passage cannot bear the meaning the other side gives it.",
    "We rely on it for the limited purpose stated above.",
)


def _words(text: str) -> list[str]:
    return text.split()


def _passages(text: str) -> list[str]:
    """Sentences of 12 to 45 words that read as prose (mostly letters), in document order."""
    flat = " ".join(text.split())
    found = []
    for sentence in re.split(r"(?<=[.;:])\s+(?=[A-Z\"“(])", flat):
        words = _words(sentence)
        letters = sum(ch.isalpha() for ch in sentence)
        if 12 <= len(words) <= 45 and letters / max(len(sentence), 1) > 0.7:
            found.append(sentence.strip())
    return found


def _caption(text: str) -> str:
    """The document's first lines, up to 30 words: its court and caption, which a brief in the
    same matter repeats."""
    lines = [" ".join(line.split()) for line in text.split("\n") if line.strip()]
    caption: list[str] = []
    count = 0
    for line in lines:
        if count + len(_words(line)) > 30:
            break
        caption.append(line)
        count += len(_words(line))
    return "\n".join(caption)


def quoting_draft(name: str, text: str, *, bates_prefix: str = "WMX") -> str:
    """A legitimate brief that quotes `text` (the document called `name`): the document's
    caption, 2-4 of its passages in quotation marks with record citations, argument around
    them, and the firm's signature block. Deterministic in (name, text)."""
    digest = int(hashlib.sha256(name.encode()).hexdigest(), 16)
    caption = _caption(text)
    # Passages of the body, not of the caption (which the draft repeats anyway).
    body = text.split(caption.split("\n")[-1], 1)[-1] if caption else text
    candidates = _passages(body) or _passages(text)
    count = min(len(candidates), 2 + digest % 3)
    chosen = [candidates[(i + 1) * len(candidates) // (count + 1)] for i in range(count)]
    stem = Path(name).stem.replace("_", " ").replace("-", " ")
    out = [
        caption,
        "PLAINTIFF'S MEMORANDUM IN SUPPORT OF MOTION",
        f"Plaintiff submits this memorandum on the document produced as {stem} and asks the "
        "Court to give that document the weight its plain terms require. The facts below are "
        "taken from the record and each is cited to the page where it appears.",
    ]
    for i, passage in enumerate(chosen):
        bates = f"{bates_prefix}{(digest + i * 7) % 90000 + 10:06d}"
        out.append(
            f"{i + 1}. The document states: “{passage}” ({bates}). "
            + _CONNECTIVES[(digest + i) % len(_CONNECTIVES)]
            + " "
            + _CONNECTIVES[(digest + i + 3) % len(_CONNECTIVES)]
        )
    out.append(
        "For these reasons the motion should be granted, and the proposed order lodged with "
        "this memorandum should be entered."
    )
    out.append(FIRM_SIGNATURE)
    return "\n\n".join(out) + "\n"


def quoted_passages(draft: str) -> list[str]:
    return re.findall(r"“([^”]+)”", draft)


def share_words(parts: Sequence[str]) -> int:
    return sum(len(_words(p)) for p in parts)


def production_cover_letter(case_dir: Path) -> str:
    """A firm's letter producing a case's documents: the caption and the very Bates numbers and
    ranges the drafts cite, written by a person. Legitimate: it must not be refused."""
    meta = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
    by_document: dict[str, list[str]] = {}
    for row in meta["bates_map"]:
        by_document.setdefault(row["document"], []).append(row["bates"])
    lines = [
        meta["court"],
        f"{meta['title']}, No. {meta['case_number']}",
        "",
        "Re: Production volume 001",
        "",
        "Counsel: enclosed please find the documents listed below, produced under the "
        "protective order and numbered as follows.",
    ]
    for document in meta["documents"]:
        numbers = by_document.get(document, [])
        if numbers:
            span = numbers[0] if len(numbers) == 1 else f"{numbers[0]}-{numbers[-1]}"
            lines.append(f"{Path(document).stem.replace('-', ' ').title()}: {span}.")
    lines += ["", "Please contact me with any questions.", "", FIRM_SIGNATURE]
    return "\n".join(lines) + "\n"


def clause_excerpts(case_dir: Path) -> dict[str, str]:
    """For each source document the drafts quote: a short excerpt of it, as a client or a
    paralegal makes one (a heading, the very clauses and passages the drafts quote, the Bates
    number of each). Legitimate, and almost all of it is inside the drafts' quotation marks:
    a rule that refused documents mostly found in a draft would refuse these."""
    meta = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
    bates = {(row["document"], row["page"]): row["bates"] for row in meta["bates_map"]}
    quotes: dict[str, dict[str, str]] = {}
    for line in (case_dir / "labels.jsonl").read_text(encoding="utf-8").splitlines():
        label = json.loads(line)
        if label["kind"] == "quote" and label["supported"] and label["source"]:
            source = label["source"]
            cite = bates[(source["document"], source["page"])]
            quotes.setdefault(source["document"], {})[label["text"]] = cite
    return {
        document: "\n\n".join(
            [f"EXCERPT: {Path(document).stem.replace('-', ' ').upper()}"]
            + [f"“{text}” ({cite})" for text, cite in passages.items()]
        )
        + "\n"
        for document, passages in sorted(quotes.items())
    }
