"""The drafts API: create by pasting or uploading, list, detail, versions; and the bad input of
the issue (empty, oversized, hostile text, unfrozen or another case's packet)."""

import io
import zipfile

import docx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.drafting.models import Draft, DraftVersion
from apps.evidence.models import Packet
from tests.drafting.makers import draft_of, packet_of, read_pdf

pytestmark = pytest.mark.django_db

TEXT = "On 3 March 2024 the tenant paid $12,450.00 (ACME000001).\n"


@pytest.fixture
def packet(lawyer: User, case: Case) -> Packet:
    document = read_pdf(case=case, user=lawyer, lines=["Paid $12,450.00 on 03/03/2024."])
    return packet_of(case=case, user=lawyer, documents=[document])


def _url(case: Case, tail: str = "") -> str:
    return f"/api/v1/cases/{case.pk}/drafts{tail}"


def _create(client: Client, case: Case, packet: Packet, **changes: object) -> object:
    body = {"title": "Brief", "kind": "brief", "packet_id": packet.pk, "text": TEXT, **changes}
    return client.post(_url(case), body, content_type="application/json")


def test_staff_pastes_a_draft_and_gets_version_one_as_firm_work_product(
    staff_api: Client, staff: User, case: Case, packet: Packet
) -> None:
    response = _create(staff_api, case, packet)

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["title"], body["kind"], body["packet_id"]) == ("Brief", "brief", packet.pk)
    (version,) = body["versions"]
    assert (version["number"], version["media_type"], version["written_by"]) == (
        1,
        "markdown",
        "person",
    )
    assert version["characters"] == len(TEXT)
    stored = DraftVersion.objects.get(draft_id=body["id"])
    assert stored.text == TEXT and stored.created_by == staff
    assert AuditEvent.objects.filter(action="draft.create", actor=staff, case=case).count() == 1


def test_upload_of_markdown_plain_text_and_docx_reads_their_text(
    lawyer_api: Client, case: Case, packet: Packet
) -> None:
    document = docx.Document()
    document.add_paragraph("The lease began on 3 March 2024.")
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "Rent"
    table.rows[0].cells[1].text = "$1,200"
    data = io.BytesIO()
    document.save(data)
    uploads = [
        ("brief.md", b"# Brief\n\nSee ACME000001.\n", "markdown"),
        ("brief.txt", "Plain words, caf\u00e9\u00a0\u2014 \u201cquoted\u201d.".encode(), "plain"),
        ("brief.docx", data.getvalue(), "docx"),
    ]
    for name, payload, media in uploads:
        response = lawyer_api.post(
            _url(case),
            {
                "title": name,
                "kind": "memo",
                "packet_id": packet.pk,
                "file": SimpleUploadedFile(name, payload),
            },
        )
        assert response.status_code == 201, response.content
        version = DraftVersion.objects.get(draft_id=response.json()["id"])
        assert version.media_type == media and version.filename == name
    docx_text = DraftVersion.objects.get(media_type="docx").text
    assert "The lease began on 3 March 2024." in docx_text and "Rent\t$1,200" in docx_text


def test_versions_are_numbered_and_earlier_ones_never_change(
    lawyer_api: Client, lawyer: User, case: Case, packet: Packet
) -> None:
    draft = draft_of(case=case, user=lawyer, packet=packet, text="First text.")

    second = lawyer_api.post(
        _url(case, f"/{draft.pk}/versions"),
        {"text": "Second text."},
        content_type="application/json",
    )
    third = lawyer_api.post(
        _url(case, f"/{draft.pk}/versions"), {"file": SimpleUploadedFile("v3.txt", b"Third.")}
    )

    assert (second.status_code, third.status_code) == (201, 201)
    assert [second.json()["number"], third.json()["number"]] == [2, 3]
    assert list(draft.versions.order_by("number").values_list("text", flat=True)) == [
        "First text.",
        "Second text.",
        "Third.",
    ]
    detail = lawyer_api.get(_url(case, f"/{draft.pk}")).json()
    assert [v["number"] for v in detail["versions"]] == [1, 2, 3]
    one = lawyer_api.get(_url(case, f"/{draft.pk}/versions/1")).json()
    assert one["text"] == "First text."


def test_list_shows_the_case_drafts_within_a_query_ceiling(
    lawyer_api: Client,
    lawyer: User,
    case: Case,
    packet: Packet,
    django_assert_max_num_queries: object,
) -> None:
    for n in range(5):
        draft_of(case=case, user=lawyer, packet=packet, title=f"Brief {n}")

    with django_assert_max_num_queries(12):  # type: ignore[operator]
        response = lawyer_api.get(_url(case))

    assert response.status_code == 200
    assert sorted(item["title"] for item in response.json()["items"]) == [
        f"Brief {n}" for n in range(5)
    ]


@pytest.mark.parametrize(
    ("changes", "status", "words"),
    [
        ({"text": ""}, 400, "empty"),
        ({"text": " \n\t "}, 400, "empty"),
        ({"text": "Hostile\x07bell"}, 400, "control character"),
        ({"text": "NUL\x00byte"}, 422, "NUL"),
        ({"text": "lone \ud800 surrogate"}, 422, "unicode"),
        ({"title": "   "}, 422, "title"),
        ({"kind": "sonnet"}, 422, "kind"),
        ({"media_type": "docx"}, 422, "media_type"),
        ({"packet_id": 0}, 422, "packet_id"),
        ({"extra": 1}, 422, "extra"),
    ],
    ids=["empty", "blank", "control", "nul", "surrogate", "title", "kind", "media", "id", "extra"],
)
def test_bad_pasted_drafts_are_refused_and_nothing_is_stored(
    lawyer_api: Client,
    case: Case,
    packet: Packet,
    changes: dict[str, object],
    status: int,
    words: str,
) -> None:
    response = _create(lawyer_api, case, packet, **changes)

    assert response.status_code == status, response.content
    assert words in response.json()["detail"]
    assert not Draft.objects.exists()


def test_oversized_drafts_are_refused_pasted_and_uploaded(
    lawyer_api: Client, case: Case, packet: Packet, settings: object
) -> None:
    settings.LEXWEB_MAX_DRAFT_BYTES = 2048  # type: ignore[attr-defined]
    big = "word " * 1000

    pasted = _create(lawyer_api, case, packet, text=big)
    uploaded = lawyer_api.post(
        _url(case),
        {
            "title": "Big",
            "packet_id": packet.pk,
            "file": SimpleUploadedFile("big.md", big.encode()),
        },
    )

    assert pasted.status_code == 400 and "limit is 2,048 bytes" in pasted.json()["detail"]
    assert uploaded.status_code == 413 and uploaded.json()["code"] == "too_large"
    assert not Draft.objects.exists()


@pytest.mark.parametrize(
    ("name", "payload", "words"),
    [
        ("brief.md", b"\xff\xfe not utf-8", "not UTF-8"),
        ("brief.pdf", b"%PDF-1.7", "not a draft lexweb can read"),
        ("brief.docx", b"PK\x03\x04 broken zip", "could not be read as a Word document"),
        ("empty.txt", b"", "empty"),
    ],
)
def test_unreadable_uploads_are_refused_with_what_to_do(
    lawyer_api: Client, case: Case, packet: Packet, name: str, payload: bytes, words: str
) -> None:
    response = lawyer_api.post(
        _url(case),
        {"title": "X", "packet_id": packet.pk, "file": SimpleUploadedFile(name, payload)},
    )

    assert response.status_code == 400, response.content
    assert words in response.json()["detail"]
    assert not Draft.objects.exists()


def test_an_editable_packet_is_refused_and_another_cases_packet_is_not_found(
    lawyer_api: Client, lawyer: User, outsider: User, case: Case, other_case: Case
) -> None:
    document = read_pdf(case=case, user=lawyer, lines=["A page."])
    editable = packet_of(case=case, user=lawyer, documents=[document], freeze=False)
    theirs_doc = read_pdf(case=other_case, user=outsider, lines=["Theirs."])
    theirs = packet_of(case=other_case, user=outsider, documents=[theirs_doc])

    unfrozen = _create(lawyer_api, case, editable)
    foreign = _create(lawyer_api, case, theirs)

    assert unfrozen.status_code == 400 and unfrozen.json()["code"] == "packet_not_frozen"
    assert "Freeze it" in unfrozen.json()["detail"]
    assert foreign.status_code == 404 and foreign.json()["code"] == "not_found"
    assert other_case.title not in foreign.content.decode()
    assert not Draft.objects.exists()


def test_non_member_cannot_create_or_read_and_nothing_is_stored(
    outsider_api: Client, lawyer: User, case: Case, packet: Packet
) -> None:
    draft = draft_of(case=case, user=lawyer, packet=packet)

    answers = [
        _create(outsider_api, case, packet).status_code,
        outsider_api.get(_url(case)).status_code,
        outsider_api.get(_url(case, f"/{draft.pk}")).status_code,
        outsider_api.get(_url(case, f"/{draft.pk}/versions/1")).status_code,
        outsider_api.post(
            _url(case, f"/{draft.pk}/versions"), {"text": "x"}, content_type="application/json"
        ).status_code,
    ]

    assert answers == [404] * 5
    assert Draft.objects.count() == 1 and DraftVersion.objects.count() == 1


def test_a_draft_of_two_hundred_pages_is_stored_whole(
    lawyer_api: Client, case: Case, packet: Packet
) -> None:
    page = "The tenant paid rent on 3 March 2024 as the ledger shows (ACME000001). " * 40 + "\n\n"
    text = page * 200  # some 600 KB

    response = _create(lawyer_api, case, packet, text=text)

    assert response.status_code == 201, response.content[:200]
    assert DraftVersion.objects.get().text == text


def _docx_with_footnote(body: str, footnote: str) -> bytes:
    """A DOCX whose body cites footnote 1 (python-docx writes no footnotes: the part, its
    content type and its relationship are added to the package by hand)."""
    document = docx.Document()
    document.add_paragraph(body)
    saved = io.BytesIO()
    document.save(saved)
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    notes = (
        f'<w:footnotes xmlns:w="{w}">'
        '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:t>---</w:t></w:r></w:p></w:footnote>'
        f'<w:footnote w:id="1"><w:p><w:r><w:t>{footnote}</w:t></w:r></w:p></w:footnote>'
        "</w:footnotes>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(saved) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "[Content_Types].xml":
                data = data.replace(
                    b"</Types>",
                    b'<Override PartName="/word/footnotes.xml" ContentType="application/'
                    b'vnd.openxmlformats-officedocument.wordprocessingml.footnotes+xml"/></Types>',
                )
            if item.filename == "word/_rels/document.xml.rels":
                data = data.replace(
                    b"</Relationships>",
                    b'<Relationship Id="rIdNotes" Type="http://schemas.openxmlformats.org/'
                    b'officeDocument/2006/relationships/footnotes" Target="footnotes.xml"/>'
                    b"</Relationships>",
                )
            target.writestr(item, data)
        target.writestr("word/footnotes.xml", notes)
    return out.getvalue()


def test_docx_footnotes_are_read_after_the_body_and_separators_are_not(
    lawyer_api: Client, case: Case, packet: Packet
) -> None:
    data = _docx_with_footnote("The tenant paid rent.", "See ACME000001 (the ledger).")

    response = lawyer_api.post(
        _url(case),
        {"title": "Notes", "packet_id": packet.pk, "file": SimpleUploadedFile("n.docx", data)},
    )

    assert response.status_code == 201, response.content
    text = DraftVersion.objects.get().text
    assert text == "The tenant paid rent.\n\n[1] See ACME000001 (the ledger)."


def test_openapi_lists_the_draft_operations_with_json_and_multipart_bodies(
    lawyer_api: Client,
) -> None:
    paths = lawyer_api.get("/api/v1/openapi.json").json()["paths"]
    base = "/api/v1/cases/{case_id}/drafts"
    version = base + "/{draft_id}/versions/{number}"

    assert {
        base,
        base + "/{draft_id}",
        base + "/{draft_id}/versions",
        version,
        version + "/verify",
        version + "/findings",
        version + "/findings/{finding_id}/override",
        version + "/approve",
    } <= set(paths)
    for path in (base, base + "/{draft_id}/versions"):
        body = paths[path]["post"]["requestBody"]["content"]
        assert {"application/json", "multipart/form-data"} <= set(body)
        assert "text" in body["application/json"]["schema"]["properties"]
        assert "file" in body["multipart/form-data"]["schema"]["properties"]
    assert "409" in paths[version + "/approve"]["post"]["responses"]
