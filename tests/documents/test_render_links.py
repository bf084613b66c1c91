"""Rendering reads the uploaded file and nothing else (issue 21, finding 1).

A Word or Excel file can point outside itself: a picture relationship with
TargetMode="External" and a file:// target (Word, and Excel drawings), INCLUDETEXT and
INCLUDEPICTURE fields. LibreOffice drew such a picture from the server's disk, another case's
original from the blob store among them. Two layers now stand in the way, each tested alone
and together, with real LibreOffice and files written here:

- office_links.strip_links takes the links out of a copy before LibreOffice sees it;
- LibreOffice runs in a sandbox (mount, network and PID namespaces, an unprivileged user)
  whose root holds the system's programs and the job's own folder, nothing else.

The targets are blobs of another case in the store (file://) and a loopback HTTP listener
this test runs; the listener must get no connection and the PDF must hold neither the secret
text nor any picture (the uploads themselves have none)."""

import io
import os
import re
import shutil
import socket
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openpyxl
import pymupdf
import pytest
from django.conf import settings as django_settings
from openpyxl.drawing.image import Image as SheetImage

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import office_links, rendering, storage
from apps.documents.models import Document, Rendition
from lexweb.errors import DomainError
from tests.conftest import token_client
from tests.documents.files import upload

SOFFICE = shutil.which("soffice")
SECRET_TEXT = "PRIVILEGED-MEMO-7Q2X"
COVER = "Cover text of the upload."

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
IMAGE_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/image"
PICTURE_URI = "http://schemas.openxmlformats.org/drawingml/2006/picture"


@pytest.fixture
def soffice() -> str:
    if SOFFICE is None:
        if os.environ.get("CI") == "true":
            raise RuntimeError("LibreOffice is required under CI=true: make system-deps")
        pytest.skip("LibreOffice is not installed (make system-deps installs it)")
    return SOFFICE


class Listener:
    """A loopback TCP listener that counts the connections it accepts (an HTTP client's
    request for a linked picture would be one)."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.port = self.socket.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.socket.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.socket.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    served = Listener()
    # It answers: a connection from this process reaches it.
    with socket.create_connection(("127.0.0.1", served.port), timeout=5):
        pass
    for _ in range(50):
        if served.connections:
            break
        threading.Event().wait(0.05)
    assert served.connections == 1
    served.connections = 0
    yield served
    served.close()


def png_bytes() -> bytes:
    """A 120x120 picture, solid blue."""
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 120, 120), False)
    pixmap.set_rect(pixmap.irect, (0, 0, 255))
    return pixmap.tobytes("png")


def store(data: bytes) -> Path:
    """Put `data` in the blob store as an upload is stored (another case's original)."""
    with storage.blob_receive(source=io.BytesIO(data), max_bytes=10**7) as received:
        return received.commit().path


@pytest.fixture
def secrets(blob_root: Path) -> dict[str, str]:
    """Another case's originals in the store: a picture and a text file, as file:// URLs."""
    picture, text = store(png_bytes()), store(f"{SECRET_TEXT}\n".encode())
    assert picture.is_relative_to(blob_root) and text.is_relative_to(blob_root)
    return {"picture": picture.as_uri(), "text": text.as_uri()}


def _linked_picture(rel_id: str, number: int) -> str:
    return (
        f'<w:p><w:r><w:drawing><wp:inline><wp:extent cx="1143000" cy="1143000"/>'
        f'<wp:docPr id="{number}" name="Picture {number}"/><a:graphic>'
        f'<a:graphicData uri="{PICTURE_URI}"><pic:pic><pic:nvPicPr>'
        f'<pic:cNvPr id="{number}" name="Picture {number}"/><pic:cNvPicPr/></pic:nvPicPr>'
        f'<pic:blipFill><a:blip r:link="{rel_id}"/><a:stretch><a:fillRect/></a:stretch>'
        f'</pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="1143000" '
        f'cy="1143000"/></a:xfrm><a:prstGeom prst="rect"/></pic:spPr></pic:pic>'
        f"</a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>"
    )


def _complex_field(instruction: str, result: str) -> str:
    """A field whose instruction is split over two runs, as Word often writes it."""
    head, tail = instruction[:8], instruction[8:]
    return (
        '<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        f'<w:r><w:instrText xml:space="preserve">{head}</w:instrText></w:r>'
        f'<w:r><w:instrText xml:space="preserve">{tail}</w:instrText></w:r>'
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
        f"<w:r><w:t>{result}</w:t></w:r>"
        '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>'
    )


def linking_docx(path: Path, targets: dict[str, str]) -> Path:
    """A Word document whose own text is COVER, with every kind of link in `targets`:
    `picture` and `web_picture` as external picture relationships, `text` and `web_text` as
    INCLUDETEXT fields, `picture` and `web_picture` as INCLUDEPICTURE fields (fldSimple)."""
    rels = [
        ("rIdFile", targets["picture"]),
        ("rIdWeb", targets["web_picture"]),
    ]
    body = [f"<w:p><w:r><w:t>{COVER}</w:t></w:r></w:p>"]
    body += [_linked_picture(rel_id, k + 1) for k, (rel_id, _) in enumerate(rels)]
    for name in ("text", "web_text"):
        body.append(_complex_field(f' INCLUDETEXT "{targets[name]}" ', f"Field result {name}."))
    for name in ("picture", "web_picture"):
        body.append(
            f'<w:p><w:fldSimple w:instr=" INCLUDEPICTURE &quot;{targets[name]}&quot; \\d ">'
            f"<w:r><w:t>Picture result {name}.</w:t></w:r></w:fldSimple></w:p>"
        )
    document = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f'<w:document xmlns:w="{W_NS}" xmlns:r="{R_NS}" '
        'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
        'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
        f'xmlns:pic="{PICTURE_URI}"><w:body>{"".join(body)}</w:body></w:document>'
    )
    relationships = "".join(
        f'<Relationship Id="{rel_id}" Type="{IMAGE_REL}" Target="{target}" TargetMode="External"/>'
        for rel_id, target in rels
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" '
            'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
        package.writestr(
            "_rels/.rels",
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/'
            '2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
        )
        package.writestr("word/document.xml", document)
        package.writestr(
            "word/_rels/document.xml.rels",
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f"{relationships}</Relationships>",
        )
    return path


def linking_xlsx(path: Path, target: str) -> Path:
    """An Excel workbook whose first sheet's drawing links its one picture to `target`."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet["A1"] = COVER
    sheet.add_image(SheetImage(io.BytesIO(png_bytes())), "B3")
    buffer = io.BytesIO()
    workbook.save(buffer)
    with (
        zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as made,
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package,
    ):
        for name in made.namelist():
            data = made.read(name)
            if name.startswith("xl/media/"):
                continue  # the picture is only at the link's target
            if name == "xl/drawings/_rels/drawing1.xml.rels":
                data, count = re.subn(
                    rb'Target="[^"]*image1\.png"',
                    f'Target="{target}" TargetMode="External"'.encode(),
                    data,
                )
                assert count == 1
            if name == "xl/drawings/drawing1.xml":
                assert b"r:embed=" in data
                data = data.replace(b"r:embed=", b"r:link=")
            package.writestr(name, data)
    return path


def _pdf(path: Path) -> tuple[str, int]:
    """The text of every page, and how many pictures the pages show."""
    with pymupdf.open(path) as pdf:
        return (
            "\n".join(page.get_text() for page in pdf),
            sum(len(page.get_images()) for page in pdf),
        )


def _plain_soffice(program: str, source: Path, folder: Path) -> Path:
    """LibreOffice as it ran before: no sandbox, the file as uploaded."""
    folder.mkdir()
    subprocess.run(
        [
            program,
            f"-env:UserInstallation={(folder / 'profile').as_uri()}",
            "--headless",
            "--norestore",
            "--convert-to",
            "pdf",
            "--outdir",
            str(folder),
            str(source),
        ],
        capture_output=True,
        timeout=120,
        check=True,
        env={**rendering._environment(folder), "PATH": "/usr/bin:/bin"},
    )
    return folder / f"{source.stem}.pdf"


def _targets(secrets: dict[str, str], listener: Listener) -> dict[str, str]:
    return {
        **secrets,
        "web_picture": listener.url("picture.png"),
        "web_text": listener.url("memo.txt"),
    }


@pytest.mark.slow
def test_no_link_reaches_the_rendition_of_a_word_or_excel_file(
    soffice: str, tmp_path: Path, secrets: dict[str, str], listener: Listener
) -> None:
    word = linking_docx(tmp_path / "links.docx", _targets(secrets, listener))
    sheet_on_disk = linking_xlsx(tmp_path / "disk.xlsx", secrets["picture"])
    sheet_on_web = linking_xlsx(tmp_path / "web.xlsx", listener.url("sheet.png"))

    results = {}
    for name, kind, source in (
        ("word", "word", word),
        ("disk", "spreadsheet", sheet_on_disk),
        ("web", "spreadsheet", sheet_on_web),
    ):
        work = tmp_path / f"work-{name}"
        work.mkdir()
        results[name] = rendering.render(kind, source, work=work)

    for rendered in results.values():
        text, pictures = _pdf(rendered.path)
        assert COVER in text
        assert SECRET_TEXT not in text and pictures == 0
        assert rendered.filesystem_isolated is True and rendered.network_isolated is True
    assert listener.connections == 0
    # The fields keep the text Word last showed; what was taken out is on the record.
    word_text, _ = _pdf(results["word"].path)
    assert "Field result text." in word_text and "Picture result picture." in word_text
    assert results["word"].links_removed == {
        "external relationship (image)": 2,
        "field INCLUDEPICTURE": 2,
        "field INCLUDETEXT": 2,
    }
    assert results["disk"].links_removed == {"external relationship (image)": 1}


@pytest.mark.slow
def test_each_layer_alone_keeps_the_other_cases_picture_out(
    soffice: str, tmp_path: Path, secrets: dict[str, str], listener: Listener
) -> None:
    """Without either layer the picture is read from the store (the finding, reproduced);
    links stripped but no sandbox, and sandbox but links left in, each keep it out."""
    word = linking_docx(tmp_path / "links.docx", _targets(secrets, listener))
    sheet = linking_xlsx(tmp_path / "sheet.xlsx", secrets["picture"])
    stripped = tmp_path / "stripped.docx"
    office_links.strip_links(word, stripped)

    _, shown_before = _pdf(_plain_soffice(soffice, word, tmp_path / "plain"))
    _, shown_stripped = _pdf(_plain_soffice(soffice, stripped, tmp_path / "stripped"))
    sandboxed = {}
    for kind, source in (("word", word), ("spreadsheet", sheet)):
        work = tmp_path / f"sandboxed-{kind}"
        work.mkdir()
        converted, isolation = rendering._convert(soffice, source, kind=kind, work=work)
        assert isolation.sandbox is True  # this machine (root) makes the namespaces
        sandboxed[kind] = _pdf(converted)

    assert shown_before >= 1  # LibreOffice does follow the link when nothing stops it
    assert shown_stripped == 0
    for text, pictures in sandboxed.values():
        assert COVER in text and SECRET_TEXT not in text and pictures == 0


def test_the_sandbox_shows_the_job_folder_and_the_system_only(
    tmp_path: Path, secrets: dict[str, str], settings: Any, listener: Listener
) -> None:
    """A stand-in LibreOffice reports what it can see and do from inside the sandbox."""
    blob = secrets["picture"].removeprefix("file://")
    hidden = [
        blob,
        str(django_settings.LEXWEB_BLOB_ROOT),
        str(django_settings.BASE_DIR),
        str(tmp_path / "secret.txt"),
        "/root",
        "/home",
        "/etc/shadow",
        "/etc/hostname",
        "/work",
        "/var/lib",
    ]
    (tmp_path / "secret.txt").write_text(SECRET_TEXT)
    program_folder = tmp_path / "bin"
    program_folder.mkdir()
    program = program_folder / "soffice"
    checks = "".join(f'[ -e "{path}" ] && echo "visible {path}"\n' for path in hidden)
    program.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then echo "LibreOffice 0.0 stand-in"; exit 0; fi\n'
        "exec > report 2>&1\n"  # in its working folder: the job's
        f"{checks}"
        "echo uid $(id -u)\n"
        "grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status\n"
        "echo processes $(ls /proc | grep -c '^[0-9]')\n"
        "echo interfaces $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ')\n"
        f"bash -c 'echo > /dev/tcp/127.0.0.1/{listener.port}' 2>/dev/null && echo reached\n"
        "touch /usr/written /written 2>/dev/null && echo wrote\n"
        "ls\n"
        "exit 3\n"
    )
    program.chmod(0o755)
    settings.LEXWEB_SOFFICE = str(program)
    targets = _targets(secrets, listener)
    work = tmp_path / "work"
    work.mkdir()

    with pytest.raises(rendering.RenderFailedError, match="could not convert"):
        rendering.render("word", linking_docx(tmp_path / "a.docx", targets), work=work)

    report = (work / "job" / "report").read_text()
    assert "visible" not in report, report
    # As root the sandbox runs as nobody; otherwise as root of a user namespace of its own.
    uid = rendering._unprivileged_user()[0] if os.geteuid() == 0 else 0
    assert f"uid {uid}\n" in report, report
    for line in report.splitlines():
        if line.startswith("Cap"):
            assert line.split()[1] == "0000000000000000", report  # no capabilities at all
    processes = int(re.search(r"processes (\d+)", report)[1])  # type: ignore[index]
    assert processes < 8, report  # its own PID namespace: the stand-in and its commands
    assert "interfaces lo" in report.replace("\n", " "), report
    assert "reached" not in report and "wrote" not in report, report
    assert "original.docx" in report and listener.connections == 0


@pytest.mark.django_db(databases="__all__")
@pytest.mark.slow
def test_an_upload_linking_to_another_cases_original_renders_without_it(
    soffice: str,
    blob_root: Path,
    lawyer_api: Any,
    case: Case,
    outsider: User,
    other_case: Case,
    run_jobs: Any,
    tmp_path: Path,
) -> None:
    """Through the product: another case's picture and memo are uploaded there; a Word file
    uploaded here links to their paths in the store (a member sees a document's SHA-256). The
    rendition shows neither, and its record says what was taken out and how it ran."""
    theirs, outsider_api = {}, token_client(outsider)
    for name, data in (("photo.png", png_bytes()), ("memo.txt", f"{SECRET_TEXT}\n".encode())):
        response = outsider_api.post(
            f"/api/v1/cases/{other_case.pk}/documents",
            {"files": [upload(name, data)], "origin": "client"},
        )
        assert response.status_code == 201, response.content
        stored = Document.objects.get(pk=response.json()["results"][0]["document"]["id"]).blob
        theirs[name] = storage.blob_path(stored.sha256)
        assert theirs[name].is_file()
    targets = {
        "picture": theirs["photo.png"].as_uri(),
        "text": theirs["memo.txt"].as_uri(),
        "web_picture": theirs["photo.png"].as_uri(),
        "web_text": theirs["memo.txt"].as_uri(),
    }
    word = linking_docx(tmp_path / "links.docx", targets)
    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/documents",
        {"files": [upload("links.docx", word.read_bytes())], "origin": "client"},
    )
    assert response.status_code == 201, response.content
    document = Document.objects.get(pk=response.json()["results"][0]["document"]["id"])

    run_jobs()

    rendition = Rendition.objects.get(document=document)
    assert rendition.status == Rendition.Status.READY, rendition.error
    assert rendition.output is not None
    text, pictures = _pdf(storage.blob_path(rendition.output.sha256))
    assert COVER in text and SECRET_TEXT not in text and pictures == 0
    assert rendition.parameters == {
        "network_isolated": True,
        "filesystem_isolated": True,
        "links_removed": {
            "external relationship (image)": 2,
            "field INCLUDEPICTURE": 2,
            "field INCLUDETEXT": 2,
        },
    }


def _package(members: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as package:
        for name, data in members.items():
            package.writestr(name, data)
    return buffer.getvalue()


def test_strip_links_drops_external_relationships_and_linking_fields_only(
    tmp_path: Path, settings: Any
) -> None:
    rels_head = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    )
    hyperlink = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink"
    ole = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/oleObject"
    chunk = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/aFChunk"
    link_path = (
        "http://schemas.openxmlformats.org/officeDocument/2006/relationships/externalLinkPath"
    )
    members: dict[str, bytes | str] = {
        "[Content_Types].xml": "<Types/>",
        "word/_rels/document.xml.rels": rels_head
        + f'<Relationship Id="a" Type="{IMAGE_REL}" Target="media/image1.png"/>'
        + f'<Relationship Id="b" Type="{IMAGE_REL}" Target="file:///etc/passwd" '
        'TargetMode="External"/>'
        + f'<Relationship Id="c" Type="{hyperlink}" Target="https://example.test/" '
        'TargetMode="external"/>'
        + f'<Relationship Id="d" Type="{ole}" Target="\\\\server\\share\\x.xls"/>'
        + f'<Relationship Id="e" Type="{chunk}" Target="chunk.htm"/>'
        + f'<Relationship Id="f" Type="{IMAGE_REL}" Target="C:/secret.png"/>'
        + "</Relationships>",
        "xl/externalLinks/_rels/externalLink1.xml.rels": rels_head
        + f'<Relationship Id="rId1" Type="{link_path}" Target="/srv/other/book.xlsx" '
        'TargetMode="External"/></Relationships>',
        "word/document.xml": (
            f'<w:document xmlns:w="{W_NS}" xmlns:v="urn:schemas-microsoft-com:vml" '
            'xmlns:o="urn:schemas-microsoft-com:office:office"><w:body>'
            + _complex_field(' INCLUDETEXT "file:///etc/passwd" ', "kept result")
            + _complex_field(" PAGE ", "1")
            + '<w:p><w:fldSimple w:instr="LINK Excel.Sheet.8 &quot;C:\\\\a.xls&quot;">'
            "<w:r><w:t>simple result</w:t></w:r></w:fldSimple>"
            '<w:fldSimple w:instr=" NUMPAGES "><w:r><w:t>9</w:t></w:r></w:fldSimple></w:p>'
            '<w:p><w:r><w:pict><v:shape><v:imagedata src="file:///etc/passwd" '
            'o:href="file:///x.png" o:title="t"/></v:shape></w:pict></w:r></w:p>'
            "</w:body></w:document>"
        ),
        "word/media/image1.png": png_bytes(),
        "word/styles.xml": "<w:styles xmlns:w='" + W_NS + "'/>",
    }
    source = tmp_path / "in.docx"
    source.write_bytes(_package(members))
    target = tmp_path / "out.docx"

    removed = office_links.strip_links(source, target)

    assert removed == {
        "external relationship (image)": 2,
        "external relationship (hyperlink)": 1,
        "external relationship (oleobject)": 1,
        "external relationship (externallinkpath)": 1,
        "linked part (afchunk)": 1,
        "field INCLUDETEXT": 1,
        "field LINK": 1,
        "VML link attribute": 2,
    }
    with zipfile.ZipFile(target) as out:
        rels = out.read("word/_rels/document.xml.rels").decode()
        document = out.read("word/document.xml").decode()
        assert re.findall(r'Id="(\w)"', rels) == ["a"]
        assert b"Relationship " not in out.read("xl/externalLinks/_rels/externalLink1.xml.rels")
        assert "INCLUDETEXT" not in document and "LINK" not in document
        assert "kept result" in document and "simple result" in document
        assert " PAGE " in document and "NUMPAGES" in document  # other fields stay
        assert "file:" not in document and 'o:title="t"' in document
        for name in ("word/media/image1.png", "word/styles.xml", "[Content_Types].xml"):
            assert out.read(name) == (
                members[name] if isinstance(members[name], bytes) else members[name].encode()
            )

    # Entities could spell a link the bytes never show (here "fldSimple"): a Word or Excel
    # part that declares any is refused, as is an external entity (XML's own link to a
    # file); an SVG picture's own entities (drawing programs write them) are left alone.
    hidden = (
        "<!DOCTYPE w:document [<!ENTITY f '<w:fld&#83;imple w:instr=\"INCLUDETEXT "
        "&#34;file:///etc/passwd&#34;\"><w:r><w:t>hidden result</w:t></w:r></w:fld&#83;imple>'>]>"
        f'<w:document xmlns:w="{W_NS}"><w:body><w:p>&f;</w:p></w:body></w:document>'
    )
    svg = (
        '<!DOCTYPE svg [<!ENTITY ns_svg "http://www.w3.org/2000/svg">]>'
        '<svg xmlns="&ns_svg;" width="10" height="10"/>'
    )
    spelled = tmp_path / "spelled.docx"
    spelled.write_bytes(_package({"word/document.xml": hidden}))
    with pytest.raises(DomainError, match="declares XML entities"):
        office_links.strip_links(spelled, tmp_path / "spelled-out.docx")
    drawing = tmp_path / "drawing.docx"
    drawing.write_bytes(_package({"word/media/image1.svg": svg}))
    assert office_links.strip_links(drawing, tmp_path / "drawing-out.docx") == {}
    external = tmp_path / "external.docx"
    external.write_bytes(
        _package(
            {
                "word/document.xml": '<!DOCTYPE w:document [<!ENTITY e SYSTEM "file:///etc/'
                f'passwd">]><w:document xmlns:w="{W_NS}"><w:body>&e;</w:body></w:document>'
            }
        )
    )
    with pytest.raises(DomainError, match="entity that is another file"):
        office_links.strip_links(external, tmp_path / "external-out.docx")

    # A package whose part names repeat (as a reader may take them) is refused, as is a bomb.
    twice = tmp_path / "twice.docx"
    with zipfile.ZipFile(twice, "w") as package:
        package.writestr("word/_rels/document.xml.rels", rels_head + "</Relationships>")
        package.writestr("Word/_rels/Document.xml.rels", members["word/_rels/document.xml.rels"])
    with pytest.raises(DomainError, match="two parts of the same name"):
        office_links.strip_links(twice, tmp_path / "twice-out.docx")
    settings.LEXWEB_ZIP_MAX_MEMBERS = 3
    with pytest.raises(DomainError, match="members; the limit is 3"):
        office_links.strip_links(source, tmp_path / "bomb-out.docx")
