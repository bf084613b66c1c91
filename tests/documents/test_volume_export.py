"""A production volume with load files: parsed back, every page and path must round-trip."""

import io
import zipfile
from collections.abc import Callable
from email.message import EmailMessage

import pytest
from django.test import Client
from PIL import Image

from apps.cases.models import Case
from apps.documents import loadfiles
from tests.documents.files import real, upload

pytestmark = pytest.mark.django_db(databases="__all__")

JSON = "application/json"
SEP, QUOTE, NL = "\x14", "\u00fe", "\u00ae"


def _email_with_attachment() -> bytes:
    message = EmailMessage()
    message["From"] = "Client <client@acme.test>"
    message["To"] = "Counsel <counsel@firm.test>"
    message["Subject"] = "Invoices, as discussed"
    message["Date"] = "Mon, 02 Nov 2026 10:00:00 +0000"
    message.set_content("Dear counsel,\nattached is the order.\nRegards")
    message.add_attachment(
        real("ca10_order_in-re-liebowitz_21-800.pdf"),
        maintype="application",
        subtype="pdf",
        filename="order.pdf",
    )
    return message.as_bytes()


def _build(
    client: Client, case: Case, run_jobs: Callable[[], None], encoding: str
) -> tuple[zipfile.ZipFile, list[dict]]:
    uploaded = client.post(
        f"/api/v1/cases/{case.pk}/documents",
        {
            "files": [
                upload("notice.pdf", real("ca2_docketing-notice_17-3510.pdf")),
                upload("scan.png", _scan_png()),
            ],
            "origin": "client",
            "custodian": "Jane Roe (CFO)",
        },
    ).json()
    run_jobs()
    ids = [r["document"]["id"] for r in uploaded["results"]]
    production = client.post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "ACME001", "prefix": "ACME", "document_ids": ids},
        content_type=JSON,
    ).json()
    run_jobs()
    base = f"/api/v1/cases/{case.pk}/productions/{production['id']}/exports"
    export = client.post(base, {"encoding": encoding, "image_dpi": 150}, content_type=JSON)
    assert export.status_code == 202, export.content
    run_jobs()
    assert client.get(f"{base}/{export.json()['id']}").json()["status"] == "ready"
    response = client.get(f"{base}/{export.json()['id']}/zip")
    assert response.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    return archive, uploaded["results"]


def _scan_png() -> bytes:
    image = Image.new("L", (1275, 1650), 255)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", dpi=(150, 150))
    return buffer.getvalue()


def _parse_dat(raw: bytes, encoding: str) -> list[dict[str, str]]:
    text = raw.decode("utf-8-sig" if encoding == "utf-8" else "cp1252")
    rows = [line for line in text.split("\r\n") if line]
    fields = [f.strip(QUOTE) for f in rows[0].split(SEP)]
    return [
        dict(zip(fields, (v.strip(QUOTE) for v in row.split(SEP)), strict=True)) for row in rows[1:]
    ]


@pytest.mark.parametrize("encoding", ["utf-8", "cp1252"])
@pytest.mark.slow
def test_volume_load_files_round_trip_every_page_and_path(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None], encoding: str
) -> None:
    archive, _ = _build(lawyer_api, case, run_jobs, encoding)
    names = set(archive.namelist())

    documents = _parse_dat(archive.read("ACME001/ACME001.dat"), encoding)
    assert [d["BEGBATES"] for d in documents] == ["ACME000001", "ACME000003"]
    assert [d["ENDBATES"] for d in documents] == ["ACME000002", "ACME000003"]
    assert [d["PGCOUNT"] for d in documents] == ["2", "1"]
    assert {d["CUSTODIAN"] for d in documents} == {"Jane Roe (CFO)"}
    assert set(loadfiles.DAT_FIELDS) <= set(documents[0])
    for document in documents:
        text_path = "ACME001/" + document["TEXTPATH"].replace("\\", "/")
        assert text_path in names
        assert len(document["SHA256"]) == 64
    notice_text = archive.read("ACME001/TEXT/0001/ACME000001.txt").decode(
        "utf-8-sig" if encoding == "utf-8" else "cp1252"
    )
    assert "Second Circuit" in notice_text

    opt = archive.read("ACME001/ACME001.opt").decode(
        "utf-8-sig" if encoding == "utf-8" else "cp1252"
    )
    lines = [line.split(",") for line in opt.split("\r\n") if line]
    assert [line[0] for line in lines] == ["ACME000001", "ACME000002", "ACME000003"]
    assert [line[3] for line in lines] == ["Y", "", "Y"]
    assert [line[6] for line in lines] == ["2", "", "1"]
    assert all(len(line) == 7 and line[1] == "ACME001" for line in lines)
    for line in lines:
        image_path = "ACME001/" + line[2].replace("\\", "/")
        assert image_path in names
        with Image.open(io.BytesIO(archive.read(image_path))) as tiff:
            assert tiff.format == "TIFF" and tiff.mode == "1"
            assert tiff.info.get("compression") == "group4"
    assert "ACME001/PDF/ACME001.pdf" in names


def test_an_email_and_its_attachment_are_produced_as_one_family(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    uploaded = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/documents",
        {"files": [upload("mail.eml", _email_with_attachment())], "origin": "client"},
    ).json()
    run_jobs()
    message_id = uploaded["results"][0]["document"]["id"]
    listed = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents").json()["items"]
    attachment_id = next(d["id"] for d in listed if d["parent_id"] == message_id)
    # The e-mail is stamped through its rendering to PDF (tests/documents/test_render_jobs.py).
    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "V1", "prefix": "ACME", "document_ids": [message_id, attachment_id]},
        content_type=JSON,
    )
    assert response.status_code == 201, response.content
    run_jobs()
    base = f"/api/v1/cases/{case.pk}/productions/{response.json()['id']}/exports"
    export = lawyer_api.post(base, {"encoding": "utf-8", "image_dpi": 100}, content_type=JSON)
    run_jobs()
    zipped = lawyer_api.get(f"{base}/{export.json()['id']}/zip")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(zipped.streaming_content)))
    rows = _parse_dat(archive.read("V1/V1.dat"), "utf-8")
    assert [r["BEGBATES"] for r in rows] == ["ACME000001", "ACME000002"]
    assert {(r["BEGATTACH"], r["ENDATTACH"]) for r in rows} == {("ACME000001", rows[1]["ENDBATES"])}


def test_folders_hold_at_most_a_thousand_files() -> None:
    assert loadfiles.folder(0) == "0001"
    assert loadfiles.folder(999) == "0001"
    assert loadfiles.folder(1000) == "0002"
    assert loadfiles.folder(12_345) == "0013"


def test_newlines_and_qualifiers_inside_fields_are_encoded() -> None:
    document = loadfiles.VolumeDocument(
        begbates="A1",
        endbates="A1",
        begattach="",
        endattach="",
        custodian="Roe\u00fe",
        filename="line one\r\nline two\x14.pdf",
        page_count=1,
        sha256="0" * 64,
        text="",
    )

    row = loadfiles.dat_text([document], ["TEXT\\0001\\A1.txt"]).split("\r\n")[1]

    values = [v.strip(QUOTE) for v in row.split(SEP)]
    assert values[5] == f"line one{NL}line two .pdf"
    assert values[4] == "Roe"


def test_export_before_stamping_is_a_conflict(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    uploaded = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/documents",
        {
            "files": [upload("a.pdf", real("ca10_order_in-re-liebowitz_21-800.pdf"))],
            "origin": "court",
        },
    ).json()
    run_jobs()
    production = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/productions",
        {
            "volume": "V1",
            "prefix": "ACME",
            "document_ids": [uploaded["results"][0]["document"]["id"]],
        },
        content_type=JSON,
    ).json()

    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/productions/{production['id']}/exports", {}, content_type=JSON
    )

    assert response.status_code == 409
