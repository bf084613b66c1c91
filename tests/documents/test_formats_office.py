"""Issue 13, requirement 4 (reading): Word, Excel, Outlook and ZIP files are recognised by their
bytes and read for search; containers' contents become documents of the family at any depth;
bad input (corrupt, encrypted, zip bombs, traversal names) is refused per file with its reason
and leaves nothing behind. Every file here is a real one, written by the format's own library
(python-docx, openpyxl, zipfile, msoffcrypto-tool) or, for Outlook, by extract-msg's OLE writer
with the streams Outlook writes."""

import io
import struct
import zipfile
import zlib
from collections.abc import Callable, Sequence
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import docx
import extract_msg
import msoffcrypto
import openpyxl
import pytest
from django.test import Client
from extract_msg.ole_writer import OleWriter
from msoffcrypto.format.ooxml import OOXMLFile

from apps.cases.models import Case
from apps.documents import formats
from apps.documents.models import Blob, Derivation, Document, Page
from tests.documents.files import upload
from tests.documents.test_formats import assert_store_matches_rows, build_email

pytestmark = pytest.mark.django_db(databases="__all__")


# --- Real files --------------------------------------------------------------------------------


def docx_bytes(
    paragraphs: Sequence[str] = ("Memorandum of understanding", "The parties agree to mediate."),
    table: Sequence[Sequence[str]] = (("Party", "Counsel"), ("Acme", "Laura Lawyer")),
    header: str = "PRIVILEGED AND CONFIDENTIAL",
    footer: str = "Draft 3 of the memorandum",
) -> bytes:
    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, text in enumerate(row):
                grid.cell(r, c).text = text
    section = document.sections[0]
    section.header.paragraphs[0].text = header
    section.footer.paragraphs[0].text = footer
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def xlsx_bytes(sheets: dict[str, Sequence[Sequence[object]]] | None = None) -> bytes:
    sheets = sheets or {
        "Damages": [("Item", "Amount"), ("Lost profits", 125000), ("Interest", 8421.5)],
        "Timeline": [("Date", "Event"), ("2021-03-04", "Contract signed")],
    }
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets.items():
        sheet = workbook.create_sheet(title)
        for row in rows:
            sheet.append(list(row))
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _property(tag: int, kind: int, value: bytes) -> bytes:
    """One fixed-size entry of an Outlook properties stream: type, id, flags, 8 value bytes."""
    return struct.pack("<HHI", kind, tag, 6) + value.ljust(8, b"\x00")


def msg_bytes(
    *,
    subject: str = "Settlement terms",
    body: str = "Please see the attached draft.\r\nRegards, Alice",
    sender: str = "Alice Smith <alice@example.com>",
    to: str = "Bob Jones <bob@example.com>",
    cc: str = "Carol White <carol@example.com>",
    date: str = "Mon, 02 Nov 2026 10:00:00 +0000",
    attachments: Sequence[tuple[str, bytes]] = (),
) -> bytes:
    """An Outlook message (IPM.Note) as Outlook stores it: an OLE2 compound file with the
    message's string properties as __substg1.0_ streams, the fixed ones in
    __properties_version1.0, the named-property storage, and one storage per attachment."""
    ole = OleWriter()

    def string(name: str, text: str) -> None:
        ole.addEntry(name, text.encode("utf-16-le"))

    ole.addEntry("__nameid_version1.0", storage=True)
    for stream in ("00020102", "00030102", "00040102"):
        ole.addEntry(f"__nameid_version1.0/__substg1.0_{stream}", b"")
    string("__substg1.0_001A001F", "IPM.Note")
    string("__substg1.0_0037001F", subject)
    string("__substg1.0_1000001F", body)
    string("__substg1.0_0C1A001F", sender)
    string("__substg1.0_0E04001F", to)
    string("__substg1.0_0E03001F", cc)
    string(
        "__substg1.0_007D001F",
        f"From: {sender}\r\nTo: {to}\r\nCc: {cc}\r\nSubject: {subject}\r\nDate: {date}\r\n\r\n",
    )
    filetime = int(parsedate_to_datetime(date).timestamp() * 10_000_000) + 116444736000000000
    count = len(attachments)
    properties = (
        bytes(8)
        + struct.pack("<IIII", 0, count, 0, count)
        + bytes(8)
        + _property(0x0E07, 0x0003, struct.pack("<I", 1))  # message flags: read, sent
        + _property(0x0039, 0x0040, struct.pack("<Q", filetime))  # client submit time
    )
    ole.addEntry("__properties_version1.0", properties)
    for index, (name, data) in enumerate(attachments):
        folder = f"__attach_version1.0_#{index:08X}"
        ole.addEntry(folder, storage=True)
        ole.addEntry(f"{folder}/__substg1.0_37010102", data)
        ole.addEntry(f"{folder}/__substg1.0_3707001F", name.encode("utf-16-le"))
        attach = (
            bytes(8)
            + _property(0x3705, 0x0003, struct.pack("<I", 1))  # attach method: by value
            + _property(0x0E21, 0x0003, struct.pack("<I", index))
        )
        ole.addEntry(f"{folder}/__properties_version1.0", attach)
    buffer = io.BytesIO()
    ole.write(buffer)
    return buffer.getvalue()


def msg_with_an_attached_message(inner_subject: str, inner_body: str) -> bytes:
    """An Outlook message with another message attached as Outlook embeds one (attach
    method 5: the inner message's streams in the attachment's __substg1.0_3701000D storage)."""
    ole = OleWriter()

    def strings(prefix: str, items: dict[str, str]) -> None:
        for name, text in items.items():
            ole.addEntry(prefix + name, text.encode("utf-16-le"))

    ole.addEntry("__nameid_version1.0", storage=True)
    for stream in ("00020102", "00030102", "00040102"):
        ole.addEntry(f"__nameid_version1.0/__substg1.0_{stream}", b"")
    note = {"__substg1.0_001A001F": "IPM.Note"}
    strings("", {**note, "__substg1.0_0037001F": "Fwd: the draft", "__substg1.0_1000001F": "FYI"})
    ole.addEntry("__properties_version1.0", bytes(8) + struct.pack("<IIII", 0, 1, 0, 1) + bytes(8))
    folder = "__attach_version1.0_#00000000"
    ole.addEntry(folder, storage=True)
    method = _property(0x3705, 0x0003, struct.pack("<I", 5))  # attach method: embedded message
    ole.addEntry(f"{folder}/__properties_version1.0", bytes(8) + method)
    strings(f"{folder}/", {"__substg1.0_3707001F": "original.msg"})
    inner = f"{folder}/__substg1.0_3701000D"
    ole.addEntry(inner, storage=True)
    strings(
        f"{inner}/",
        {**note, "__substg1.0_0037001F": inner_subject, "__substg1.0_1000001F": inner_body},
    )
    ole.addEntry(f"{inner}/__properties_version1.0", bytes(8) + struct.pack("<IIII", 0, 0, 0, 0))
    buffer = io.BytesIO()
    ole.write(buffer)
    return buffer.getvalue()


def zip_bytes(members: Sequence[tuple[str | zipfile.ZipInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def encrypted_zip_member(name: str, data: bytes, password: bytes) -> bytes:
    """A one-member ZIP whose member is encrypted with PKWARE's traditional cipher (what
    `zip -P` writes); zipfile reads it back with the password."""
    keys = [0x12345678, 0x23456789, 0x34567890]

    def crc(value: int, byte: int) -> int:
        return zlib.crc32(bytes([byte]), value ^ 0xFFFFFFFF) ^ 0xFFFFFFFF

    def update(byte: int) -> None:
        keys[0] = crc(keys[0], byte)
        keys[1] = ((keys[1] + (keys[0] & 0xFF)) * 134775813 + 1) & 0xFFFFFFFF
        keys[2] = crc(keys[2], keys[1] >> 24)

    def encrypt(plain: bytes) -> bytes:
        out = bytearray()
        for byte in plain:
            temp = (keys[2] | 2) & 0xFFFF
            out.append(byte ^ (((temp * (temp ^ 1)) >> 8) & 0xFF))
            update(byte)
        return bytes(out)

    for byte in password:
        update(byte)
    checksum = zlib.crc32(data)
    sealed = encrypt(bytes(11) + bytes([checksum >> 24])) + encrypt(data)
    raw = name.encode()
    local = struct.pack(
        "<IHHHHHIIIHH", 0x04034B50, 20, 1, 0, 0, 0, checksum, len(sealed), len(data), len(raw), 0
    )
    central = struct.pack(
        "<IHHHHHHIIIHHHHHII",
        0x02014B50, 20, 20, 1, 0, 0, 0, checksum, len(sealed), len(data), len(raw),
        0, 0, 0, 0, 0, 0,
    )  # fmt: skip
    body = local + raw + sealed
    directory = central + raw
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(directory), len(body), 0)
    return body + directory + end


def encrypted_docx() -> bytes:
    """A Word document encrypted with a password by msoffcrypto-tool (ECMA-376 agile
    encryption, as Word does: an OLE2 file with EncryptionInfo and EncryptedPackage)."""
    sealed = io.BytesIO()
    OOXMLFile(io.BytesIO(docx_bytes())).encrypt("secret", sealed)
    return sealed.getvalue()


def text_of(document: Document) -> str:
    return "\n".join(Page.objects.filter(document=document).values_list("text", flat=True))


def flat(text: str) -> str:
    return " ".join(text.split())


def family(parent: Document) -> dict[str, Document]:
    return {
        d.filename: d
        for d in Document.objects.filter(derived_from__parent=parent).order_by("filename")
    }


def assert_nothing_stored(root: Path) -> None:
    assert not Document.objects.exists() and not Blob.objects.exists()
    assert_store_matches_rows(root)


# --- Each format is read -------------------------------------------------------------------


@pytest.mark.slow
def test_word_document_is_read_with_its_tables_headers_and_footers(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    response = post_files(lawyer_api, case, upload("memo.bin", docx_bytes()))

    assert response.status_code == 201, response.content
    (result,) = response.json()["results"]
    assert result["document"]["kind"] == "word"
    run_jobs()
    document = Document.objects.get()
    assert (document.status, document.page_count, document.content_type) == (
        "ready",
        1,
        formats.WORD_CONTENT_TYPE,
    )
    text = text_of(document)
    for words in (
        "PRIVILEGED AND CONFIDENTIAL",
        "Memorandum of understanding",
        "The parties agree to mediate.",
        "Party\tCounsel",
        "Acme\tLaura Lawyer",
        "Draft 3 of the memorandum",
    ):
        assert words in text
    assert text.index("PRIVILEGED") < text.index("Memorandum") < text.index("Draft 3")
    page = Page.objects.get(document=document)
    assert (page.source, page.needs_review) == ("text_file", False)
    found = lawyer_api.get(f"/api/v1/cases/{case.pk}/search", {"q": "mediate"})
    assert found.status_code == 200
    assert [hit["document_id"] for hit in found.json()["items"]] == [document.pk]


@pytest.mark.slow
def test_excel_workbook_is_read_sheet_by_sheet(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    response = post_files(lawyer_api, case, upload("damages.xlsx", xlsx_bytes()))

    assert response.status_code == 201, response.content
    assert response.json()["results"][0]["document"]["kind"] == "spreadsheet"
    run_jobs()
    document = Document.objects.get()
    assert (document.status, document.page_count) == ("ready", 1)
    text = text_of(document)
    assert "Sheet: Damages\nItem\tAmount\nLost profits\t125000\nInterest\t8421.5" in text
    assert "Sheet: Timeline\nDate\tEvent\n2021-03-04\tContract signed" in text
    assert Page.objects.get(document=document).needs_review is False


@pytest.mark.slow
def test_a_workbook_past_the_cell_budget_is_read_up_to_it_and_flagged(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
    settings: Any,
) -> None:
    settings.LEXWEB_MAX_SHEET_CELLS = 100
    rows = [(f"row {n}", n, n * 2) for n in range(1, 101)]  # 300 cells

    post_files(lawyer_api, case, upload("big.xlsx", xlsx_bytes({"Ledger": rows})))
    run_jobs()

    document = Document.objects.get()
    page = Page.objects.get(document=document)
    assert document.status == "ready" and page.needs_review is True
    assert "row 33\t33\t66" in page.text and "row 34" not in page.text
    assert "[Only the first 100 cells of this workbook were read.]" in page.text


@pytest.mark.slow
def test_outlook_message_is_read_like_an_eml_and_its_attachments_join_the_family(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    message = msg_bytes(
        attachments=[("terms.docx", docx_bytes()), ("notes.txt", b"Call the mediator Friday.\n")]
    )

    response = post_files(lawyer_api, case, upload("terms.msg", message), origin="opposing")

    (result,) = response.json()["results"]
    assert result["status"] == "created" and result["notes"] == []
    assert result["document"]["kind"] == "outlook"
    run_jobs()
    parent = Document.objects.get(filename="terms.msg")
    assert parent.status == "ready" and parent.content_type == formats.OUTLOOK_CONTENT_TYPE
    text = text_of(parent)
    assert text.startswith(
        "From: Alice Smith <alice@example.com>\nTo: Bob Jones <bob@example.com>\n"
        "Cc: Carol White <carol@example.com>\nDate: 2026-11-02 10:00:00+00:00\n"
        "Subject: Settlement terms\n\nPlease see the attached draft.\nRegards, Alice"
    )
    children = family(parent)
    assert set(children) == {"terms.docx", "notes.txt"}
    assert {(d.kind, d.status, d.origin) for d in children.values()} == {
        ("word", "ready", "opposing"),
        ("text", "ready", "opposing"),
    }
    assert "The parties agree to mediate." in text_of(children["terms.docx"])
    assert set(
        Derivation.objects.filter(parent=parent).values_list("transform", "deterministic")
    ) == {("email-attachment", True)}
    # The family shows in the API like an e-mail's.
    listed = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents").json()["items"]
    assert sorted(d["filename"] for d in listed if d["parent_id"] == parent.pk) == [
        "notes.txt",
        "terms.docx",
    ]


@pytest.mark.slow
def test_zip_members_become_documents_and_nested_families_are_kept(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    eml = build_email([("inner.txt", b"The inner attachment.\n", "text/plain")])
    inner_zip = zip_bytes([("deep/budget.xlsx", xlsx_bytes())])
    outlook = msg_bytes(subject="Fwd: numbers", attachments=[("more.zip", inner_zip)])
    archive = zip_bytes(
        [
            ("production/", b""),
            ("production/memo.docx", docx_bytes()),
            ("production/letter.eml", eml),
            ("production/fwd.msg", outlook),
            ("readme.txt", b"Produced by Widget Corp.\n"),
        ]
    )

    response = post_files(lawyer_api, case, upload("production.zip", archive), origin="opposing")

    (result,) = response.json()["results"]
    assert result["status"] == "created" and result["notes"] == []
    assert result["document"]["kind"] == "archive"
    run_jobs()
    assert set(Document.objects.values_list("status", flat=True)) == {"ready"}
    root = Document.objects.get(filename="production.zip")
    members = family(root)
    assert set(members) == {"memo.docx", "letter.eml", "fwd.msg", "readme.txt"}
    assert dict(
        Derivation.objects.filter(parent=root).values_list("child__filename", "parameters__member")
    ) == {
        "memo.docx": "production/memo.docx",
        "letter.eml": "production/letter.eml",
        "fwd.msg": "production/fwd.msg",
        "readme.txt": "readme.txt",
    }
    assert set(Derivation.objects.filter(parent=root).values_list("transform", flat=True)) == {
        "archive-member"
    }
    assert set(family(members["letter.eml"])) == {"inner.txt"}
    (more,) = family(members["fwd.msg"]).values()
    assert more.filename == "more.zip" and more.kind == "archive"
    (budget,) = family(more).values()
    assert budget.filename == "budget.xlsx" and "Lost profits\t125000" in text_of(budget)
    assert {d.origin for d in Document.objects.all()} == {"opposing"}
    listing = text_of(root)
    assert "production/memo.docx\t" in listing and "readme.txt\t25 bytes" in listing
    # The API shows the archive's family like an e-mail's.
    listed = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents").json()["items"]
    assert len([d for d in listed if d["parent_id"] == root.pk]) == 4


def test_a_message_attached_to_an_outlook_message_becomes_a_message_of_the_family(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    outer = msg_with_an_attached_message("Draft v2", "The inner message's own words.")

    response = post_files(lawyer_api, case, upload("fwd.msg", outer))
    run_jobs()

    assert response.json()["results"][0]["notes"] == []
    parent = Document.objects.get(filename="fwd.msg")
    (inner,) = family(parent).values()
    assert (inner.filename, inner.kind, inner.status) == ("original.msg", "outlook", "ready")
    assert "Subject: Draft v2\n\nThe inner message's own words." in text_of(inner)


# --- Bad input -----------------------------------------------------------------------------


def test_zip_bomb_by_ratio_is_refused_whole_and_nothing_is_stored(
    lawyer_api: Client, case: Case, blob_root: Path, post_files: Callable[..., Any]
) -> None:
    bomb = zip_bytes([("a.txt", b"fine\n"), ("zeros.txt", bytes(64 * 1024 * 1024))])
    assert len(bomb) < 200_000

    response = post_files(lawyer_api, case, upload("bomb.zip", bomb))

    assert response.status_code == 400
    (result,) = response.json()["results"]
    assert result["error"] == (
        "The ZIP file unpacks to more than 100 times its size (a possible zip bomb); it was "
        "not opened."
    )
    assert_nothing_stored(blob_root)


def test_word_document_that_is_a_zip_bomb_is_refused_before_it_is_opened(
    lawyer_api: Client, case: Case, blob_root: Path, post_files: Callable[..., Any]
) -> None:
    source = zipfile.ZipFile(io.BytesIO(docx_bytes()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bomb:
        for info in source.infolist():
            bomb.writestr(info, source.read(info))
        bomb.writestr("word/media/image1.bin", bytes(64 * 1024 * 1024))

    response = post_files(lawyer_api, case, upload("memo.docx", buffer.getvalue()))

    assert response.json()["results"][0]["error"].startswith(
        "The ZIP file unpacks to more than 100 times its size (a possible zip bomb)"
    )
    assert_nothing_stored(blob_root)


def test_office_file_with_too_much_xml_is_refused_before_it_is_read(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    settings: Any,
) -> None:
    settings.LEXWEB_MAX_OFFICE_XML_BYTES = 64 * 1024
    paragraphs = [f"Paragraph {n} of a long memorandum." for n in range(2000)]

    response = post_files(lawyer_api, case, upload("long.docx", docx_bytes(paragraphs)))

    error = response.json()["results"][0]["error"]
    assert error.startswith("The Office file's text unpacks to ")
    assert error.endswith("bytes of XML; the limit is 65,536. Split it and upload the parts.")
    assert_nothing_stored(blob_root)


def test_hostile_member_names_are_shown_printable_and_bounded(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
) -> None:
    long_name = "folder/" + "n" * 3000 + ".txt"
    archive = zip_bytes(
        [
            ("evil\x1b[31m\x07name.txt", b"control characters\n"),
            (long_name, b"a very long name\n"),
            ("..\x00/hidden.txt", b"nul\n"),
        ]
    )

    response = post_files(lawyer_api, case, upload("names.zip", archive))

    (result,) = response.json()["results"]
    assert result["notes"] == [
        # zipfile ends a name at a NUL, as ZIP tools do: what is left climbs out.
        "File .. was not added: its name points outside the archive (path traversal)."
    ]
    members = {d.parameters["member"]: d.child for d in Derivation.objects.select_related("child")}
    assert set(members) == {"evil[31mname.txt", long_name[:500]}
    assert members["evil[31mname.txt"].filename == "evil[31mname.txt"
    assert len(members[long_name[:500]].filename) <= 200


def test_zip_over_the_member_count_or_size_is_refused_whole(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    settings: Any,
) -> None:
    settings.LEXWEB_ZIP_MAX_MEMBERS = 3
    many = zip_bytes([(f"file-{n}.txt", f"file {n}\n".encode()) for n in range(4)])
    settings.LEXWEB_ZIP_MAX_BYTES = 10_000
    large = zip_bytes([("random.bin", bytes(range(256)) * 50)])

    response = post_files(lawyer_api, case, upload("many.zip", many), upload("large.zip", large))

    assert [r["error"] for r in response.json()["results"]] == [
        "The ZIP file has 4 members; the limit is 3. Split it and upload the parts.",
        "The ZIP file unpacks to 12,800 bytes; the limit is 10,000. Split it and upload the parts.",
    ]
    assert_nothing_stored(blob_root)


def test_nested_archives_share_one_budget_and_one_past_it_is_refused_whole(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
    settings: Any,
) -> None:
    settings.LEXWEB_ZIP_MAX_MEMBERS = 3
    inner = zip_bytes([("one.txt", b"one\n"), ("two.txt", b"two\n")])
    outer = zip_bytes([("inner.zip", inner), ("top.txt", b"top\n")])

    response = post_files(lawyer_api, case, upload("outer.zip", outer))

    (result,) = response.json()["results"]
    assert result["notes"] == [
        "File inner.zip was not added: With the archives around it, this ZIP file goes past "
        "the limit of 3 files or 2,147,483,648 bytes unpacked for one upload; it was not "
        "opened."
    ]
    run_jobs()
    assert sorted(Document.objects.values_list("filename", flat=True)) == ["outer.zip", "top.txt"]
    assert_store_matches_rows(blob_root)


def test_traversal_names_symlinks_and_encrypted_members_are_refused_each_with_its_reason(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    link = zipfile.ZipInfo("link-to-passwd")
    link.external_attr = 0o120777 << 16
    archive = zip_bytes(
        [
            ("../../etc/cron.d/evil.txt", b"climb\n"),
            ("/etc/absolute.txt", b"absolute\n"),
            ("C:/Windows/drive.txt", b"drive\n"),
            ("docs\\..\\..\\backslash.txt", b"backslash\n"),
            (link, b"/etc/passwd"),
            ("kept.txt", b"The one good file.\n"),
        ]
    )
    sealed = encrypted_zip_member("secret.txt", b"hidden words\n", b"pw")
    with zipfile.ZipFile(io.BytesIO(sealed)) as check:  # a real encrypted member
        assert check.read("secret.txt", pwd=b"pw") == b"hidden words\n"

    response = post_files(lawyer_api, case, upload("mixed.zip", archive), upload("s.zip", sealed))

    mixed, locked = response.json()["results"]
    traversal = "was not added: its name points outside the archive (path traversal)."
    assert mixed["status"] == "created" and mixed["notes"] == [
        f"File ../../etc/cron.d/evil.txt {traversal}",
        f"File /etc/absolute.txt {traversal}",
        f"File C:/Windows/drive.txt {traversal}",
        f"File docs/../../backslash.txt {traversal}",
        "File link-to-passwd was not added: it is a symbolic link.",
    ]
    assert locked["status"] == "created" and locked["notes"] == [
        "File secret.txt was not added: it is encrypted (password-protected)."
    ]
    run_jobs()
    assert sorted(Document.objects.values_list("filename", flat=True)) == [
        "kept.txt",
        "mixed.zip",
        "s.zip",
    ]
    assert "(not added: it is a symbolic link)" in text_of(
        Document.objects.get(filename="mixed.zip")
    )
    assert_store_matches_rows(blob_root)


def test_a_damaged_member_is_refused_and_the_others_go_in(
    lawyer_api: Client, case: Case, blob_root: Path, post_files: Callable[..., Any]
) -> None:
    good = b"The good member.\n"
    archive = bytearray(zip_bytes([("bad.txt", b"x" * 4000), ("good.txt", good)]))
    start = archive.index(b"bad.txt") + len(b"bad.txt") + 10
    archive[start : start + 4] = b"\xff\xff\xff\xff"  # inside bad.txt's deflated data

    response = post_files(lawyer_api, case, upload("damaged.zip", bytes(archive)))

    (result,) = response.json()["results"]
    assert result["notes"] == ["File bad.txt was not added: Its data in the ZIP file is damaged."]
    assert sorted(Document.objects.values_list("filename", flat=True)) == [
        "damaged.zip",
        "good.txt",
    ]
    assert_store_matches_rows(blob_root)


def test_containers_nested_past_the_limit_are_refused(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    settings: Any,
) -> None:
    settings.LEXWEB_MAX_NESTING = 2
    level3 = zip_bytes([("deepest.txt", b"three down\n")])
    level2 = zip_bytes([("level3.zip", level3)])
    level1 = zip_bytes([("level2.zip", level2)])

    response = post_files(lawyer_api, case, upload("level1.zip", level1))

    (result,) = response.json()["results"]
    assert result["notes"] == [
        "File deepest.txt was not added: It is nested more than 2 containers (ZIP, e-mail) "
        "deep; it was not opened."
    ]
    assert sorted(Document.objects.values_list("filename", flat=True)) == [
        "level1.zip",
        "level2.zip",
        "level3.zip",
    ]


def test_encrypted_office_file_is_refused_with_what_to_do(
    lawyer_api: Client, case: Case, blob_root: Path, post_files: Callable[..., Any]
) -> None:
    sealed = encrypted_docx()
    assert msoffcrypto.OfficeFile(io.BytesIO(sealed)).is_encrypted()

    response = post_files(lawyer_api, case, upload("locked.docx", sealed))

    assert response.status_code == 400
    assert response.json()["results"][0]["error"] == formats.ENCRYPTED_OFFICE
    assert_nothing_stored(blob_root)


def corrupt_part(data: bytes, part: str) -> bytes:
    """The same Office file with one XML part replaced by broken XML."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            body = source.read(info)
            target.writestr(
                info, b"<w:document><w:body><unclosed" if info.filename == part else body
            )
    return buffer.getvalue()


def test_corrupt_word_excel_and_outlook_files_are_refused_each_with_its_reason(
    lawyer_api: Client, case: Case, blob_root: Path, post_files: Callable[..., Any]
) -> None:
    outlook = msg_bytes()
    files = [
        upload("broken.docx", corrupt_part(docx_bytes(), "word/document.xml")),
        upload("broken.xlsx", corrupt_part(xlsx_bytes(), "xl/workbook.xml")),
        upload("broken-sheet.xlsx", corrupt_part(xlsx_bytes(), "xl/worksheets/sheet1.xml")),
        upload("cut.docx", docx_bytes()[:3000]),
        upload("cut.msg", outlook[: len(outlook) // 2]),
        upload("garbage.msg", formats.OLE_MAGIC + bytes(range(256)) * 8),
        upload("legacy.doc", _legacy_word()),
    ]

    response = post_files(lawyer_api, case, *files)

    assert response.status_code == 400
    assert [r["error"] for r in response.json()["results"]] == [
        "The Word document is damaged and cannot be read; open and save it again in Word.",
        "The Excel workbook is damaged and cannot be read; open and save it again in Excel.",
        "The Excel workbook is damaged and cannot be read; open and save it again in Excel.",
        "The ZIP file is damaged or truncated and cannot be read.",
        "The Outlook message is damaged and cannot be read; save it again from Outlook (or as "
        ".eml) and upload it again.",
        "The file looks like an Office file but is damaged and cannot be read.",
        formats.LEGACY_OFFICE,
    ]
    assert_nothing_stored(blob_root)


def test_workbook_well_formed_but_unreadable_fails_in_the_worker_with_the_same_reason(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    """Upload checks a workbook's XML only (its cells are read by the worker): a workbook
    whose relationships do not name its sheets is refused when the worker opens it."""
    source = zipfile.ZipFile(io.BytesIO(xlsx_bytes()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for name in source.namelist():
            rels = name == "xl/_rels/workbook.xml.rels"
            target.writestr(name, b"<Relationships/>" if rels else source.read(name))

    response = post_files(lawyer_api, case, upload("sheetless.xlsx", buffer.getvalue()))
    assert response.status_code == 201
    run_jobs()

    document = Document.objects.get()
    assert (document.status, document.error) == (
        "failed",
        "The Excel workbook is damaged and cannot be read; open and save it again in Excel.",
    )
    assert not Page.objects.exists()


def _legacy_word() -> bytes:
    """An OLE2 compound file with a WordDocument stream, as Word 97-2003 writes (.doc)."""
    ole = OleWriter()
    ole.addEntry("WordDocument", b"\xec\xa5" + bytes(510))
    buffer = io.BytesIO()
    ole.write(buffer)
    return buffer.getvalue()


def test_the_test_outlook_file_is_one_extract_msg_reads_as_a_message() -> None:
    """The builder above writes what Outlook writes: extract-msg opens it as a Message."""
    message = extract_msg.openMsg(io.BytesIO(msg_bytes(attachments=[("a.txt", b"a")])))
    try:
        assert isinstance(message, extract_msg.Message)
        assert (message.subject, message.sender) == (
            "Settlement terms",
            "Alice Smith <alice@example.com>",
        )
        assert [a.longFilename for a in message.attachments] == ["a.txt"]
    finally:
        message.close()


# --- Custodian on the browser's upload form ------------------------------------------------


def test_upload_form_sets_the_custodian_on_the_files_and_what_comes_out_of_them(
    lawyer_client: Client, case: Case, blob_root: Path
) -> None:
    archive = zip_bytes([("memo.docx", docx_bytes()), ("terms.msg", msg_bytes())])

    page = lawyer_client.get(f"/cases/{case.pk}/documents/").content.decode()
    assert 'name="custodian"' in page
    response = lawyer_client.post(
        f"/cases/{case.pk}/documents/",
        {
            "origin": "client",
            # Control characters and runs of spaces are cleaned to one printable line.
            "custodian": "  J. Smith\t(CFO)\x07  ",
            "files": [upload("from-smith.zip", archive)],
        },
    )

    assert response.status_code == 200
    assert "<strong>1</strong> added" in response.content.decode()
    assert dict(Document.objects.values_list("filename", "custodian")) == {
        "from-smith.zip": "J. Smith (CFO)",
        "memo.docx": "J. Smith (CFO)",
        "terms.msg": "J. Smith (CFO)",
    }


def test_upload_form_refuses_an_oversized_custodian_and_stores_nothing(
    lawyer_client: Client, case: Case, blob_root: Path
) -> None:
    response = lawyer_client.post(
        f"/cases/{case.pk}/documents/",
        {
            "origin": "client",
            "custodian": "x" * 201,
            "files": [upload("memo.docx", docx_bytes())],
        },
    )

    assert response.status_code == 400
    assert "Ensure this value has at most 200 characters" in response.content.decode()
    assert_nothing_stored(blob_root)


def test_upload_form_of_another_case_is_404_and_stores_nothing(
    outsider_client: Client, case: Case, blob_root: Path
) -> None:
    response = outsider_client.post(
        f"/cases/{case.pk}/documents/",
        {"origin": "client", "custodian": "Mallory", "files": [upload("a.zip", zip_bytes([]))]},
    )

    assert response.status_code == 404
    assert_nothing_stored(blob_root)
