"""Issue 20, requirement 7: what a person sees is what is read. A Word document's content
controls, text boxes, tracked insertions, notes, comments, headers, footers and hidden text are
in its stored text (so search, the registry and the verifier read them); deleted text is not. A
PDF page whose image covers most of it is OCR'd (real Tesseract) even with a text layer, both
texts are kept, and a page whose image and layer disagree is flagged for review with the reason.
Hostile Word parts (deep nesting, a huge content control, an entity bomb) are refused clearly or
read within a budget. Every file is built here: python-docx, then its XML edited as Word writes
it; PyMuPDF for the PDF."""

import io
import random
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docx
import pymupdf
import pytest
from django.test import Client

from apps.cases.models import Case
from apps.documents import docx_text, extraction, formats
from apps.documents.models import Document, Page
from apps.evidence.models import ArtifactMatch, GeneratedArtifact
from apps.evidence.services import registry
from lexweb.errors import DomainError
from tests.documents.files import upload

pytestmark = pytest.mark.django_db(databases="__all__")

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
NS = (
    f"{W} "
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
    'xmlns:v="urn:schemas-microsoft-com:vml"'
)

# A generated draft, as a model would write it (its words are ones no client file here has).
DRAFT = (
    "Plaintiff Harrowgate Logistics respectfully moves for summary judgment on its claim that "
    "Defendant Quillfeather Systems breached the warehousing agreement of March 4, 2021 by "
    "withholding the quarterly rebate of $418,250. The undisputed record shows that "
    "Quillfeather acknowledged the rebate in its October ledger, promised payment in three "
    "separate letters, and then diverted the funds to an affiliate in Tallahassee. No "
    "reasonable juror could find that the rebate was conditional, because the agreement "
    "states that rebates vest upon delivery and every delivery was accepted without objection. "
    "Quillfeather's only defence, that the rebate clause was waived at a meeting in May, rests "
    "on a witness who conceded that no minutes exist and that she arrived after the meeting "
    "ended. The Court should enter judgment for Harrowgate in the amount of the rebate with "
    "prejudgment interest from the date each payment fell due."
)


def _p(text: str, run_props: str = "") -> str:
    return f'<w:p><w:r>{run_props}<w:t xml:space="preserve">{text}</w:t></w:r></w:p>'


def _docx_with(body_xml: str, *, extra_parts: dict[str, str] | None = None) -> bytes:
    """A python-docx document with an intro line, `body_xml` added to its body as Word writes
    it, a header and a footer, and `extra_parts` (name -> XML) added to the package."""
    document = docx.Document()
    document.add_paragraph("Cover note: please file the attached.")
    section = document.sections[0]
    section.header.paragraphs[0].text = "Header of the firm"
    section.footer.paragraphs[0].text = "Footer page marker"
    buffer = io.BytesIO()
    document.save(buffer)
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "word/document.xml":
                xml = data.decode("utf-8")
                # Declare the namespaces the edits use on the root, as Word does.
                root = xml[xml.index("<w:document ") : xml.index(">", xml.index("<w:document "))]
                missing = " ".join(d for d in NS.split(" ") if d.split("=")[0] not in root)
                xml = xml.replace("<w:document ", f"<w:document {missing} ", 1)
                xml = xml.replace("<w:sectPr", body_xml + "<w:sectPr", 1)
                data = xml.encode("utf-8")
            target.writestr(item, data)
        for name, xml in (extra_parts or {}).items():
            target.writestr(name, xml)
    return out.getvalue()


def _sdt(inner: str) -> str:
    return (
        "<w:sdt><w:sdtPr><w:alias w:val='Body'/></w:sdtPr>"
        f"<w:sdtContent>{inner}</w:sdtContent></w:sdt>"
    )


def _text_box(text: str) -> str:
    """A text box as Word 2010+ writes it: the DrawingML shape in mc:Choice and the same text
    in a VML text box in mc:Fallback."""
    return (
        "<w:p><w:r><mc:AlternateContent><mc:Choice Requires='wps'><w:drawing><wps:wsp>"
        f"<wps:txbx><w:txbxContent>{_p(text)}</w:txbxContent></wps:txbx>"
        "</wps:wsp></w:drawing></mc:Choice><mc:Fallback><w:pict><v:shape><v:textbox>"
        f"<w:txbxContent>{_p(text)}</w:txbxContent></v:textbox></v:shape></w:pict>"
        "</mc:Fallback></mc:AlternateContent></w:r></w:p>"
    )


def _notes(kind: str, text: str) -> str:
    tag = kind[:-1]  # footnotes -> footnote
    return (
        f"<w:{kind} {W}><w:{tag} w:type='separator' w:id='-1'><w:p><w:r><w:separator/></w:r>"
        f"</w:p></w:{tag}><w:{tag} w:id='1'>{_p(text)}</w:{tag}></w:{kind}>"
    )


def _word(tmp_path: Path, data: bytes) -> docx_text.WordText:
    path = tmp_path / "doc.docx"
    path.write_bytes(data)
    return formats.word_text(path)


# --- Word: every place a person can see text ----------------------------------------------------


def test_word_text_reads_controls_boxes_insertions_notes_comments_and_hidden_text(
    tmp_path: Path,
) -> None:
    body = (
        _sdt(_p("Alpha in a content control."))
        + _text_box("Bravo in a text box.")
        + "<w:p><w:ins w:id='1' w:author='X'><w:r><w:t>Charlie tracked insertion.</w:t></w:r>"
        "</w:ins><w:del w:id='2' w:author='X'><w:r><w:delText>Zulu deleted text.</w:delText>"
        "</w:r></w:del><w:r><w:fldChar w:fldCharType='begin'/></w:r><w:r><w:instrText>"
        " HYPERLINK Yankee </w:instrText></w:r></w:p>"
        + _p("Delta hidden text.", "<w:rPr><w:vanish/></w:rPr>")
        + "<w:tbl><w:tr><w:tc>"
        + _p("Cell one")
        + "</w:tc><w:tc>"
        + _sdt(_p("Echo cell control"))
        + "</w:tc></w:tr></w:tbl>"
    )
    data = _docx_with(
        body,
        extra_parts={
            "word/footnotes.xml": _notes("footnotes", "Foxtrot footnote."),
            "word/endnotes.xml": _notes("endnotes", "Golf endnote."),
            "word/comments.xml": f"<w:comments {W}><w:comment w:id='0'>{_p('Hotel comment.')}"
            "</w:comment></w:comments>",
        },
    )

    word = _word(tmp_path, data)

    text = word.text
    for seen in (
        "Header of the firm",
        "Cover note",
        "Alpha in a content control.",
        "Charlie tracked insertion.",
        "Delta hidden text.",
        "Cell one\tEcho cell control",
        "Foxtrot footnote.",
        "Golf endnote.",
        "Hotel comment.",
        "Footer page marker",
    ):
        assert seen in text, seen
    # The text box once: its VML copy in mc:Fallback repeats the DrawingML one.
    assert text.count("Bravo in a text box.") == 1
    assert "Zulu" not in text and "Yankee" not in text  # deleted text, field codes
    assert text.index("Header of") < text.index("Cover") < text.index("Foxtrot")
    assert text.index("Hotel") < text.index("Footer page")
    assert not word.truncated


def test_a_fallback_that_differs_from_its_choice_is_read_too(tmp_path: Path) -> None:
    body = (
        "<w:p><w:r><mc:AlternateContent><mc:Choice Requires='wps'><w:drawing><wps:wsp>"
        f"<wps:txbx><w:txbxContent>{_p('Shown in Word.')}</w:txbxContent></wps:txbx>"
        "</wps:wsp></w:drawing></mc:Choice><mc:Fallback><w:pict><v:shape><v:textbox>"
        f"<w:txbxContent>{_p('Shown by older readers.')}</w:txbxContent></v:textbox>"
        "</v:shape></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>"
    )

    text = _word(tmp_path, _docx_with(body)).text

    assert "Shown in Word." in text and "Shown by older readers." in text


@pytest.mark.slow
def test_a_draft_hidden_in_a_content_control_is_searchable_and_flagged_by_the_registry(
    lawyer_api: Client,
    case: Case,
    lawyer: Any,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    registry.artifact_register(
        data=DRAFT.encode("utf-8"),
        text=DRAFT,
        kind=GeneratedArtifact.Kind.MODEL_OUTPUT,
        media_type="text/markdown",
        title="Summary judgment draft (run 1)",
        case=case,
        created_by=lawyer,
    )
    hidden = {
        "control": _sdt(_p(DRAFT)),
        "box": _text_box(DRAFT),
        "insertion": (
            f"<w:p><w:ins w:id='1' w:author='X'><w:r><w:t>{DRAFT}</w:t></w:r></w:ins></w:p>"
        ),
    }
    for name, body in hidden.items():
        response = post_files(lawyer_api, case, upload(f"{name}.docx", _docx_with(body)))
        assert response.status_code == 201, response.content
    run_jobs()

    for name in hidden:
        document = Document.objects.get(filename=f"{name}.docx")
        assert document.status == Document.Status.READY, document.error
        assert "Quillfeather" in Page.objects.get(document=document).text
        assert document.provenance == Document.Provenance.FLAGGED, name
        assert document.artifact_matches.filter(by=ArtifactMatch.By.TEXT).exists()
    found = lawyer_api.get(f"/api/v1/cases/{case.pk}/search", {"q": "Tallahassee"})
    assert found.status_code == 200
    assert len(found.json()["items"]) == 3


# --- Word: hostile parts -------------------------------------------------------------------------


def test_hostile_word_parts_are_refused_with_their_reason_and_nothing_is_stored(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
) -> None:
    deep = _docx_with("<w:sdt><w:sdtContent>" * 400 + _p("Deep") + "</w:sdtContent></w:sdt>" * 400)
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        + "".join(
            f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">'
            for i in range(1, 10)
        )
        + f"]><w:comments {W}><w:comment>{_p('&lol9;')}</w:comment></w:comments>"
    )
    bomb = _docx_with(_p("Fine"), extra_parts={"word/comments.xml": laughs})

    started = time.monotonic()
    response = post_files(lawyer_api, case, upload("deep.docx", deep), upload("lol.docx", bomb))

    assert time.monotonic() - started < 30
    assert response.status_code == 400, response.content
    results = {r["filename"]: r for r in response.json()["results"]}
    assert results["deep.docx"]["status"] == "error"
    assert "nested more than 256 levels" in results["deep.docx"]["error"]
    assert results["lol.docx"]["status"] == "error"
    assert "entity bomb" in results["lol.docx"]["error"]
    assert not Document.objects.exists()


@pytest.mark.slow
def test_a_huge_content_control_is_read_within_the_budget_and_flagged(
    tmp_path: Path, settings: Any
) -> None:
    # 50 MB of varied words in one content control (varied: a repeated word would be refused
    # as a zip bomb before it is read).
    rng = random.Random(7)  # noqa: S311  (test words, not secrets)
    vocabulary = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=7)) for _ in range(5000)]
    words = " ".join(rng.choices(vocabulary, k=6_300_000))
    assert len(words) > 50_000_000
    path = tmp_path / "huge.docx"
    path.write_bytes(_docx_with(_sdt(_p(words[:50_000_000]))))
    del words

    started = time.monotonic()
    sniffed = formats.sniff_zip(path)
    word = formats.word_text(path)

    assert sniffed.kind == "word"
    assert time.monotonic() - started < 60
    assert word.truncated
    assert len(word.text) < docx_text.MAX_TEXT_CHARS + 200
    assert word.text.endswith("characters of this document were read.]")
    # Under a smaller XML budget it is refused before it is read, with the figures.
    settings.LEXWEB_MAX_OFFICE_XML_BYTES = 10 * 1024 * 1024
    with pytest.raises(DomainError, match=r"unpacks to .* bytes of XML"):
        formats.sniff_zip(path)


# --- PDF: an image over a text layer -------------------------------------------------------------


def _page_image_of(text: str) -> bytes:
    """The draft printed on a page, as a PNG (what a scanner or a forger's tool would place)."""
    with pymupdf.open() as printed:
        page = printed.new_page()
        page.insert_textbox(pymupdf.Rect(60, 60, 550, 780), text, fontsize=12)
        return page.get_pixmap(dpi=200, colorspace=pymupdf.csGRAY).tobytes("png")


def _forged_pdf(image_text: str, layer_text: str) -> bytes:
    """One page: a full-page image of `image_text`, and `layer_text` as an invisible text
    layer (render mode 3, as OCR tools write theirs)."""
    with pymupdf.open() as forged:
        page = forged.new_page()
        page.insert_image(page.rect, stream=_page_image_of(image_text))
        page.insert_textbox(pymupdf.Rect(60, 60, 550, 780), layer_text, fontsize=9, render_mode=3)
        return forged.tobytes()


@pytest.mark.slow
def test_a_page_whose_image_is_a_draft_over_a_small_text_layer_is_ocrd_flagged_and_caught(
    lawyer_api: Client,
    lawyer_client: Client,
    case: Case,
    lawyer: Any,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    registry.artifact_register(
        data=DRAFT.encode("utf-8"),
        text=DRAFT,
        kind=GeneratedArtifact.Kind.MODEL_OUTPUT,
        media_type="text/markdown",
        title="Summary judgment draft (run 1)",
        case=case,
        created_by=lawyer,
    )
    cover = " ".join(
        ["Invoice for storage services rendered during the second quarter, paid in full."] * 6
    )
    assert len(cover.split()) > 60  # more than LEXWEB_OCR_MIN_TEXT_WORDS: a usable layer

    response = post_files(lawyer_api, case, upload("scan.pdf", _forged_pdf(DRAFT, cover)))
    assert response.status_code == 201, response.content
    run_jobs()

    document = Document.objects.get()
    assert document.status == Document.Status.READY, document.error
    page = Page.objects.get(document=document)
    assert page.text.startswith("Invoice for storage services")  # the layer, then the OCR
    assert "Quillfeather" in page.text and "Tallahassee" in page.text
    assert page.needs_review
    assert "image and its text layer disagree" in page.review_reason
    assert document.provenance == Document.Provenance.FLAGGED
    detail = lawyer_client.get(f"/cases/{case.pk}/documents/{document.pk}/")
    assert detail.status_code == 200
    assert "image and its text layer disagree" in detail.content.decode()


def test_a_searchable_scan_whose_layer_matches_its_image_is_not_flagged() -> None:
    """The rule on its own (no Tesseract): OCR that reads what the layer says, with a few
    misreads, adds nothing and flags nothing; OCR that reads a different text is kept beside
    the layer and flagged; a few words stamped over a scan are kept but not judged."""
    layer = extraction.PageText(1, DRAFT, "text_layer", margin_boxes=[[1, 2, 3, 4]])

    def ocr_of(text: str) -> extraction.PageText:
        words: list[extraction.Word] = [[w, 0, 0, 1, 1, 91.0] for w in text.split()]
        return extraction.PageText(1, text, "ocr", 91.0, words, 300, margin_boxes=[])

    misread = DRAFT.replace("Quillfeather", "Qui1lfeather", 1).replace("juror", "jurer")
    same = extraction.combine_layer_and_ocr(layer, ocr_of(misread))
    assert (same.text, same.source, same.damaged, same.review_reason) == (
        DRAFT,
        "text_layer",
        False,
        "",
    )

    other = "The storage invoice for the second quarter was paid in full on receipt by wire."
    forged = extraction.combine_layer_and_ocr(
        extraction.PageText(1, other * 3, "text_layer"), ocr_of(DRAFT)
    )
    assert forged.damaged and "disagree" in forged.review_reason
    assert forged.text.startswith(other) and "Tallahassee" in forged.text
    assert forged.source == "ocr"

    stamp = extraction.PageText(1, "Case 1:21-cv-00042 Document 7 Filed 05/04/21", "text_layer")
    scanned = extraction.combine_layer_and_ocr(stamp, ocr_of(DRAFT), judge=False)
    assert not scanned.damaged and "Tallahassee" in scanned.text
