"""Rendering to PDF (issue 13 req. 4): our own layout of text files and e-mails, LibreOffice for
Word and Excel files, each deterministic; the time budget, the output budget and a missing
LibreOffice. Real LibreOffice (installed by `make system-deps`; required under CI=true)."""

import hashlib
import os
import shutil
import time
import zipfile
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import docx
import openpyxl
import pymupdf
import pytest

from apps.documents import rendering
from tests.documents.test_formats_office import msg_bytes

SOFFICE = shutil.which("soffice")


@pytest.fixture
def soffice() -> str:
    if SOFFICE is None:
        if os.environ.get("CI") == "true":
            raise RuntimeError("LibreOffice is required under CI=true: make system-deps")
        pytest.skip("LibreOffice is not installed (make system-deps installs it)")
    return SOFFICE


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Any]:
    """A fresh, empty work folder per call, as the job gives each rendering."""
    count = iter(range(1000))

    def make() -> Path:
        folder = tmp_path / f"work{next(count)}"
        folder.mkdir()
        return folder

    yield make


def word_file(path: Path, paragraphs: int = 30) -> Path:
    document = docx.Document()
    document.add_heading("Memorandum on the lease", level=1)
    for k in range(paragraphs):
        document.add_paragraph(f"Paragraph {k}: the tenant owes the rent for March and April.")
    document.save(str(path))
    return path


def excel_file(path: Path, rows: int = 120) -> Path:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["Invoice", "Client", "Amount"])
    for k in range(1, rows + 1):
        sheet.append([f"INV-{k:04d}", "Acme Holdings", k * 12.5])
    workbook.save(path)
    return path


def email_file(path: Path) -> Path:
    message = EmailMessage()
    message["From"] = "Client <client@acme.test>"
    message["To"] = "Counsel <counsel@firm.test>"
    message["Subject"] = "The lease, as discussed"
    message["Date"] = "Mon, 02 Nov 2026 10:00:00 +0000"
    message.set_content("Dear counsel,\n\nthe landlord wrote again.\n\nRegards")
    path.write_bytes(message.as_bytes())
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _texts(path: Path) -> list[str]:
    with pymupdf.open(path) as pdf:
        return [page.get_text() for page in pdf]


def test_a_text_file_is_laid_out_in_pages_the_same_bytes_every_time(
    tmp_path: Path, work: Any
) -> None:
    source = tmp_path / "notes.txt"
    long_line = "word " * 60
    lines = "\n".join(f"line {k}" for k in range(120))
    source.write_text(f"First\tpage\n{long_line}\n\fSecond page\n{lines}\n", encoding="utf-8")

    first = rendering.render("text", source, work=work())
    second = rendering.render("text", source, work=work())

    assert _sha(first.path) == _sha(second.path)
    assert (first.transform, first.version) == ("render-text", "1")
    assert first.tool == f"PyMuPDF {pymupdf.VersionBind} Story"
    texts = _texts(first.path)
    assert first.page_count == len(texts) >= 3
    assert texts[0].startswith("First   page")  # the tab expanded to column 8
    assert "word word" in texts[0] and "Second page" not in texts[0]  # form feed: new page
    assert texts[1].startswith("Second page")
    assert "line 119" in texts[-1]
    with pymupdf.open(first.path) as pdf:
        assert pdf.metadata is not None
        assert pdf.metadata["creationDate"] == "D:20000101000000Z"
        assert pdf.xref_get_key(-1, "ID") == ("null", "null")


def test_an_email_is_its_headers_then_a_rule_then_its_body(tmp_path: Path, work: Any) -> None:
    source = email_file(tmp_path / "mail.eml")

    rendered = rendering.render("email", source, work=work())
    again = rendering.render("email", source, work=work())

    assert _sha(rendered.path) == _sha(again.path)
    assert rendered.transform == "render-email"
    text = _texts(rendered.path)[0]
    assert text.index("From: Client <client@acme.test>") < text.index("Subject: The lease")
    assert text.index("Subject: The lease") < text.index("Dear counsel,")
    with pymupdf.open(rendered.path) as pdf:
        spans = [
            span
            for block in pdf[0].get_text("dict")["blocks"]
            for line in block.get("lines", [])
            for span in line["spans"]
        ]
        bold = {span["text"] for span in spans if "Bold" in span["font"]}
        drawings = pdf[0].get_drawings()
    assert {"From:", "To:", "Subject:", "Date:"} <= bold  # the labels, not the values
    assert drawings  # the rule between headers and body


def test_an_empty_text_file_is_one_empty_page(tmp_path: Path, work: Any) -> None:
    source = tmp_path / "empty.txt"
    source.write_bytes(b"\n")

    assert rendering.render("text", source, work=work()).page_count == 1


def test_text_past_the_page_limit_is_refused_with_the_limit(
    tmp_path: Path, work: Any, settings: Any
) -> None:
    settings.LEXWEB_MAX_PDF_PAGES = 2
    source = tmp_path / "long.txt"
    source.write_text("\n".join(f"line {k}" for k in range(500)), encoding="utf-8")

    with pytest.raises(rendering.RenderFailedError, match="more than 2 pages"):
        rendering.render("text", source, work=work())


@pytest.mark.slow
def test_word_and_excel_files_go_through_libreoffice_deterministically(
    soffice: str, tmp_path: Path, work: Any
) -> None:
    word = word_file(tmp_path / "memo.docx", paragraphs=80)
    excel = excel_file(tmp_path / "invoices.xlsx")

    memo, memo_again = (rendering.render("word", word, work=work()) for _ in range(2))
    sheet = rendering.render("spreadsheet", excel, work=work())

    assert _sha(memo.path) == _sha(memo_again.path)
    assert memo.transform == "render-office" and memo.tool.startswith("LibreOffice ")
    assert memo.page_count >= 2
    memo_text = " ".join(_texts(memo.path))
    assert "Memorandum on the lease" in memo_text and "Paragraph 79" in memo_text
    sheet_text = " ".join(_texts(sheet.path))
    assert "INV-0001" in sheet_text and "INV-0120" in sheet_text
    # This machine (root) lets unshare make the sandbox's namespaces; plain files lose nothing.
    assert memo.network_isolated is True and memo.filesystem_isolated is True
    assert memo.links_removed == {} and sheet.links_removed == {}


def unreadable_word_file(path: Path) -> Path:
    """A Word package that is a sound ZIP but whose document is not XML: LibreOffice cannot
    load it."""
    with zipfile.ZipFile(path, "w") as package:
        package.writestr(
            "[Content_Types].xml",
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
        package.writestr(
            "_rels/.rels",
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/'
            '2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
        )
        package.writestr("word/document.xml", b"\x00garbage" * 500)
    return path


@pytest.mark.slow
def test_a_damaged_word_file_fails_with_the_reason(soffice: str, tmp_path: Path, work: Any) -> None:
    not_a_zip = tmp_path / "broken.docx"
    not_a_zip.write_bytes(b"PK\x03\x04" + os.urandom(4000))
    unreadable = unreadable_word_file(tmp_path / "unreadable.docx")

    # A package that cannot be read cannot have its links taken out: LibreOffice never sees it.
    with pytest.raises(rendering.RenderFailedError, match="not given to LibreOffice: The ZIP"):
        rendering.render("word", not_a_zip, work=work())
    with pytest.raises(rendering.RenderFailedError, match="could not convert the file"):
        rendering.render("word", unreadable, work=work())


@pytest.mark.slow
def test_a_pdf_past_the_byte_budget_is_refused(
    soffice: str, tmp_path: Path, work: Any, settings: Any
) -> None:
    settings.LEXWEB_RENDER_MAX_BYTES = 8_000
    source = word_file(tmp_path / "memo.docx", paragraphs=200)

    with pytest.raises(rendering.RenderFailedError, match="LEXWEB_RENDER_MAX_BYTES"):
        rendering.render("word", source, work=work())


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _all_gone(pids: list[int], seconds: float = 10.0) -> bool:
    """Whether every process is gone (or a zombie) within `seconds`: a SIGKILL is delivered
    when its target next runs, which on a busy machine can be a moment after the group's
    leader has been reaped."""
    deadline = time.monotonic() + seconds
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.slow
def test_a_conversion_over_its_time_is_killed_with_its_whole_process_group(
    tmp_path: Path, work: Any, settings: Any
) -> None:
    """A stand-in program that starts a child and hangs, as a stuck soffice.bin does: both
    are gone when the budget runs out. They run in the sandbox (their own PID namespace), so
    they are found by a mark in the child's command line, not by the PIDs they see."""
    mark = f"300.{os.getpid()}{time.monotonic_ns() % 10**6}"  # seconds, unique to this run
    program_folder = tmp_path / "bin"
    program_folder.mkdir()
    program = program_folder / "soffice"
    program.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then echo "LibreOffice 0.0 stand-in"; exit 0; fi\n'
        f"sleep {mark} &\n"
        "echo started > started\n"  # in its working folder, the job's
        "wait\n"
    )
    program.chmod(0o755)
    settings.LEXWEB_SOFFICE = str(program)
    # Time enough for the stand-in to start its child on a busy machine; it hangs regardless.
    settings.LEXWEB_RENDER_SECONDS = 3
    folder = work()

    with pytest.raises(rendering.RenderFailedError, match="longer than 3 s"):
        rendering.render("word", word_file(tmp_path / "memo.docx"), work=folder)

    assert (folder / "job" / "started").read_text() == "started\n"
    assert _all_gone(_processes_with(mark.encode()))


def _processes_with(text: bytes) -> list[int]:
    """The live processes whose command line holds `text`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except (FileNotFoundError, PermissionError, NotADirectoryError):
            continue
        if text in cmdline and _alive(int(proc.name)):
            found.append(int(proc.name))
    return found


@pytest.mark.slow
def test_real_libreoffice_over_its_time_leaves_no_process(
    soffice: str, tmp_path: Path, work: Any, settings: Any
) -> None:
    settings.LEXWEB_RENDER_SECONDS = 1
    folder = work()
    source = word_file(tmp_path / "long.docx", paragraphs=6000)

    with pytest.raises(rendering.RenderFailedError, match="longer than 1 s"):
        rendering.render("word", source, work=folder)

    left = _processes_with(str(folder).encode())
    assert _all_gone(left), left


@pytest.mark.parametrize("where", ["nowhere", "not on PATH"])
def test_without_libreoffice_office_files_are_unavailable_not_failed(
    tmp_path: Path, work: Any, settings: Any, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    if where == "nowhere":
        settings.LEXWEB_SOFFICE = str(tmp_path / "no" / "soffice")
    else:
        settings.LEXWEB_SOFFICE = "soffice"
        monkeypatch.setenv("PATH", str(tmp_path))

    with pytest.raises(rendering.RenderUnavailableError, match="rendering unavailable"):
        rendering.render("word", word_file(tmp_path / "memo.docx"), work=work())
    # Text and e-mails need no LibreOffice.
    assert rendering.render("email", email_file(tmp_path / "m.eml"), work=work()).page_count == 1


def test_an_outlook_message_is_its_headers_then_its_body(tmp_path: Path, work: Any) -> None:
    source = tmp_path / "terms.msg"
    source.write_bytes(msg_bytes(subject="Lease terms", body="The body of the message."))

    rendered = rendering.render("outlook", source, work=work())
    again = rendering.render("outlook", source, work=work())

    assert _sha(rendered.path) == _sha(again.path)
    page = _texts(rendered.path)[0]
    assert rendered.transform == "render-email"
    assert page.index("Subject: Lease terms") < page.index("The body of the message.")


def test_kinds_that_are_not_rendered_are_refused(tmp_path: Path, work: Any) -> None:
    with pytest.raises(rendering.RenderFailedError, match="not rendered"):
        rendering.render("archive", tmp_path / "a.zip", work=work())
