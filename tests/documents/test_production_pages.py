"""Productions in the browser (issue 13 req. 1): the new production page (pick, order, stamp,
preview, commit), a production's page, the case's Productions tab, and their bad input."""

import io
import threading
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test import Client
from django.urls import reverse
from PIL import Image

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents import production_services, review_services, stamping
from apps.documents import services as document_services
from apps.documents.models import BatesPage, Document, Production, ProductionExport
from apps.evidence.services import packets as packet_services
from tests.conftest import session_client, ws_connect

pytestmark = pytest.mark.django_db

DASH = "\u2013"  # between the first and last Bates number of a range


def _pdf(pages: int, text: str) -> bytes:
    with pymupdf.open() as pdf:
        for n in range(pages):
            pdf.new_page().insert_text((72, 72), f"{text}, page {n + 1}.", fontsize=11)
        return pdf.tobytes()


def _doc(
    case: Case, user: User, name: str, pages: int = 1, *, read: bool = True, custodian: str = ""
) -> Document:
    outcome = document_services.document_upload(
        case=case,
        uploaded_by=user,
        filename=name,
        source=io.BytesIO(_pdf(pages, f"The {Path(name).stem} papers of Acme")),
        origin="client",
        custodian=custodian,
    )
    assert outcome.document is not None, outcome.error
    if read:
        document_services.document_extract_text(document_id=outcome.document.pk)
    outcome.document.refresh_from_db()
    return outcome.document


def _new(case: Case) -> str:
    return reverse("documents:production_new", kwargs={"case_id": case.pk})


def _form(documents: list[Document], **fields: Any) -> dict[str, Any]:
    data = {
        "documents": ",".join(str(d.pk) for d in documents),
        "volume": "ACME001",
        "bates_prefix": "ACME",
        "digits": "6",
        "position": "bottom_right",
        "legend": "",
        "legend_position": "bottom_left",
        "font_size": "9",
        "margin": "18",
        "op": "commit",
    }
    data.update(fields)
    return data


def _order(response: Any) -> list[str]:
    """The picked documents' ids, in the page's order (its rows, and the order it posts)."""
    html = response.content.decode()
    rows = [chunk.split('"', 1)[0] for chunk in html.split('<tr data-document-id="')[1:]]
    posted = html.split('name="documents" value="', 1)[1].split('"', 1)[0]
    assert posted == ",".join(rows)
    return rows


def _nothing_written() -> None:
    assert not Production.objects.exists()
    assert not BatesPage.objects.exists()


@pytest.fixture(autouse=True)
def _blobs(blob_root: Path) -> None:
    """Every test stores its files in a blob root of its own."""


# --- Picking ------------------------------------------------------------------------------


def test_the_page_picks_ticked_documents_in_order_with_volume_and_prefix_filled_in(
    lawyer: User, case: Case
) -> None:
    a, b, c = (_doc(case, lawyer, f"{n}.pdf") for n in "abc")

    response = session_client(lawyer).get(
        _new(case), {"ids": [c.pk, a.pk, c.pk], "volume": "ACME009", "bates_prefix": "ACME"}
    )

    assert response.status_code == 200
    assert _order(response) == [str(c.pk), str(a.pk)]
    assert 'value="ACME009"' in response.content.decode()
    assert b.filename not in response.content.decode()


def test_the_bulk_produce_action_goes_to_the_page_with_the_ticked_or_all_matching(
    lawyer: User, case: Case
) -> None:
    a = _doc(case, lawyer, "a.pdf", custodian="Ann")
    _doc(case, lawyer, "b.pdf", custodian="Bob")
    client = session_client(lawyer)
    bulk = reverse("documents:bulk", kwargs={"case_id": case.pk})

    ticked = client.post(
        bulk, {"action": "produce", "ids": [a.pk], "volume": "V1", "bates_prefix": "ACME"}
    )
    matching = client.post(
        bulk, {"action": "produce", "scope": "all", "filters": "custodian=Bob", "volume": "V2"}
    )

    assert ticked.status_code == 302 and ticked["Location"].startswith(_new(case))
    assert _order(client.get(ticked["Location"])) == [str(a.pk)]
    page = client.get(matching["Location"])
    assert [Document.objects.get(pk=i).custodian for i in _order(page)] == ["Bob"]
    _nothing_written()


def test_a_search_and_a_packet_add_their_documents_after_the_picked_ones(
    lawyer: User, case: Case
) -> None:
    a = _doc(case, lawyer, "ledger.pdf")
    b = _doc(case, lawyer, "invoice.pdf")
    c = _doc(case, lawyer, "contract.pdf")
    packet = packet_services.packet_create(user=lawyer, case_id=case.pk, title="Key papers")
    packet_services.packet_items_add(
        user=lawyer,
        case_id=case.pk,
        packet_id=packet.pk,
        selections=[packet_services.Selection(document_id=c.pk, reason="Signed")],
    )
    client = session_client(lawyer)

    searched = client.get(_new(case), {"ids": [b.pk], "q": "ledger"})
    packed = client.get(_new(case), {"ids": [b.pk], "packet": packet.pk})
    # The page's own Add buttons post the same, keeping the order and what was typed.
    added = client.post(_new(case), _form([c], op="add", q="ledger", legend="KEEP"))

    assert _order(searched) == [str(b.pk), str(a.pk)]
    assert _order(packed) == [str(b.pk), str(c.pk)]
    assert _order(added) == [str(c.pk), str(a.pk)]
    assert 'value="KEEP"' in added.content.decode()
    _nothing_written()


@pytest.mark.slow
def test_order_buttons_move_remove_and_sort_keeping_what_was_typed(
    lawyer: User, case: Case
) -> None:
    b = _doc(case, lawyer, "b.pdf", custodian="Zed")
    a = _doc(case, lawyer, "a.pdf", custodian="Amy")
    c = _doc(case, lawyer, "c.pdf", custodian="Max")
    client = session_client(lawyer)
    picked = [b, a, c]

    def press(op: str, documents: list[Document]) -> list[str]:
        response = client.post(_new(case), _form(documents, op=op, legend="KEEP ME"))
        assert response.status_code == 200
        assert 'value="KEEP ME"' in response.content.decode()
        return _order(response)

    assert press(f"up:{a.pk}", picked) == [str(a.pk), str(b.pk), str(c.pk)]
    assert press(f"down:{a.pk}", picked) == [str(b.pk), str(c.pk), str(a.pk)]
    assert press(f"up:{b.pk}", picked) == [str(b.pk), str(a.pk), str(c.pk)]  # already first
    assert press(f"remove:{a.pk}", picked) == [str(b.pk), str(c.pk)]
    assert press("sort:name", picked) == [str(a.pk), str(b.pk), str(c.pk)]
    assert press("sort:custodian", picked) == [str(a.pk), str(c.pk), str(b.pk)]
    assert press("sort:date", picked) == [str(b.pk), str(a.pk), str(c.pk)]
    assert press("sort:nonsense", picked) == [str(b.pk), str(a.pk), str(c.pk)]
    _nothing_written()


# --- Preview ------------------------------------------------------------------------------


def _preview(client: Client, case: Case, document: Document, **query: Any) -> Any:
    url = reverse(
        "documents:production_preview", kwargs={"case_id": case.pk, "document_id": document.pk}
    )
    return client.get(url, {"bates_prefix": "ACME", **query})


def test_preview_is_page_one_stamped_as_it_will_be_and_writes_nothing_but_the_read(
    lawyer: User, case: Case
) -> None:
    document = _doc(case, lawyer, "a.pdf", pages=3)
    client = session_client(lawyer)
    audit_before = AuditEvent.objects.count()

    plain = _preview(client, case, document, legend="", margin="18")
    stamped = _preview(client, case, document, legend="CONFIDENTIAL", start_number="41")

    assert plain.status_code == stamped.status_code == 200
    assert stamped["Content-Type"] == "image/png"
    assert plain.content != stamped.content
    image = pymupdf.Pixmap(stamped.content)
    assert (image.width, image.height) == (827, 1170)  # an A4 page at 100 dpi
    _nothing_written()
    audit = AuditEvent.objects.filter(action="production.preview").order_by("pk")
    assert [(e.detail["bates"], e.target_id) for e in audit] == [
        ("ACME000001", str(document.pk)),
        ("ACME000041", str(document.pk)),
    ]
    assert AuditEvent.objects.count() == audit_before + 2


def test_the_preview_stamps_with_the_stampings_own_code(lawyer: User, case: Case) -> None:
    document = _doc(case, lawyer, "a.pdf", pages=2)
    source = production_services.production_source(
        document=document, first_number=7, first_page_only=True
    )
    settings = stamping.StampSettings(prefix="ACME", digits=6, legend="CONFIDENTIAL")

    with stamping.stamp_first_page(source, settings) as one:
        text = one[0].get_text()
        pages = one.page_count

    assert pages == 1
    assert "ACME000007" in text and "CONFIDENTIAL" in text and "page 1." in text


def test_the_preview_of_a_multi_page_image_stamps_its_first_frame_only(tmp_path: Path) -> None:
    frames = [Image.new("L", (850, 1100), shade) for shade in (255, 128, 0)]
    path = tmp_path / "scan.tif"
    frames[0].save(path, save_all=True, append_images=frames[1:], dpi=(100, 100))
    source = stamping.Source(path=path, kind="image", first_number=1)

    with stamping.stamp_first_page(source, stamping.StampSettings(prefix="IMG", digits=4)) as one:
        pages, text = one.page_count, one[0].get_text()
        pixel = one[0].get_pixmap(dpi=10).pixel(10, 10)

    assert (pages, "IMG0001" in text, pixel) == (1, True, (255, 255, 255))


def test_the_preview_image_is_bounded_by_the_render_pixel_cap(
    lawyer: User, case: Case, settings: Any
) -> None:
    document = _doc(case, lawyer, "a.pdf")
    settings.LEXWEB_MAX_RENDER_PIXELS = 40_000

    response = _preview(session_client(lawyer), case, document)

    image = pymupdf.Pixmap(response.content)
    assert 30_000 < image.width * image.height <= 40_000


def test_the_preview_says_why_it_cannot_be_drawn(lawyer: User, case: Case) -> None:
    ready = _doc(case, lawyer, "a.pdf")
    reading = _doc(case, lawyer, "b.pdf", read=False)
    client = session_client(lawyer)

    cases = [
        (_preview(client, case, ready, bates_prefix="acme!"), "Bates prefix"),
        (_preview(client, case, ready, digits="40"), "digits"),
        (_preview(client, case, ready, font_size="nan"), "font_size"),
        (_preview(client, case, ready, legend="x" * 5000), "legend"),
        (_preview(client, case, ready, position="middle"), "position"),
        (_preview(client, case, ready, start_number="1000000", digits="6"), "more than 6"),
        (_preview(client, case, ready, legend="A", legend_position="bottom_right"), "different"),
        (_preview(client, case, reading), "not ingested yet"),
    ]

    for response, words in cases:
        assert response.status_code == 400, words
        assert response["Content-Type"].startswith("text/plain")
        assert words in response.content.decode(), response.content
    _nothing_written()


def test_the_preview_press_shows_page_ones_number_after_the_numbers_used(
    lawyer: User, case: Case
) -> None:
    first = _doc(case, lawyer, "first.pdf", pages=2)
    second = _doc(case, lawyer, "second.pdf")
    production_services.production_create(
        case=case, actor=lawyer, volume="ACME001", prefix="ACME", document_ids=[first.pk]
    )

    response = session_client(lawyer).post(_new(case), _form([second], op="preview"))

    html = response.content.decode()
    assert response.status_code == 200
    assert "Page 1 will carry <strong>ACME000003</strong>" in html
    assert f"/preview/{second.pk}.png?" in html


# --- Commit ---------------------------------------------------------------------------------


def test_commit_makes_the_production_in_the_pages_order_and_opens_its_page(
    lawyer: User, case: Case
) -> None:
    a, b = _doc(case, lawyer, "a.pdf", pages=2), _doc(case, lawyer, "b.pdf", pages=3)
    client = session_client(lawyer)

    response = client.post(
        _new(case),
        _form(
            [b, a],
            start_number="100",
            digits="7",
            position="top_right",
            legend="CONFIDENTIAL",
            legend_position="top_left",
            font_size="11",
            margin="24",
        ),
    )

    production = Production.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse(
        "documents:production_detail", kwargs={"case_id": case.pk, "production_id": production.pk}
    )
    assert [(i.document_id, i.first_number, i.last_number) for i in production.items.all()] == [
        (b.pk, 100, 102),
        (a.pk, 103, 104),
    ]
    assert (production.digits, production.position, production.legend) == (
        7,
        "top_right",
        "CONFIDENTIAL",
    )
    assert (production.legend_position, production.font_size, production.margin) == (
        "top_left",
        11.0,
        24.0,
    )
    page = client.get(response["Location"])
    assert f"ACME0000100{DASH}ACME0000104" in page.content.decode()
    assert "queued for stamping" in page.content.decode()


# --- Bad input ------------------------------------------------------------------------------


def _refused(client: Client, case: Case, data: dict[str, Any], words: str) -> str:
    response = client.post(_new(case), data)
    html = response.content.decode()
    assert response.status_code == 400, html
    assert words in html, words
    _nothing_written()
    return html


def test_a_production_of_nothing_is_refused_on_the_form(lawyer: User, case: Case) -> None:
    client = session_client(lawyer)

    _refused(client, case, _form([]), "Pick at least one document.")
    _refused(client, case, _form([], op="preview"), "Pick at least one document.")


def test_documents_still_being_read_or_withdrawn_are_refused_by_name(
    lawyer: User, case: Case
) -> None:
    ready = _doc(case, lawyer, "ready.pdf")
    reading = _doc(case, lawyer, "reading.pdf", read=False)
    gone = _doc(case, lawyer, "gone.pdf")
    review_services.documents_withdraw(
        actor=lawyer, case=case, document_ids=[gone.pk], reason="uploaded to the wrong case"
    )
    client = session_client(lawyer)

    _refused(client, case, _form([ready, reading]), "reading.pdf is not ingested yet")
    html = _refused(client, case, _form([ready, gone]), "gone.pdf was withdrawn")
    assert "uploaded to the wrong case" in html
    # The picked list says the same before anything is pressed, and keeps the documents.
    listed = client.get(_new(case), {"ids": [ready.pk, reading.pk, gone.pk]})
    assert "reading.pdf is not ingested yet" in listed.content.decode()
    assert _order(listed) == [str(ready.pk), str(reading.pk), str(gone.pk)]


def test_a_document_of_another_case_is_refused_and_not_shown(
    lawyer: User, case: Case, other_case: Case, outsider: User
) -> None:
    mine = _doc(case, lawyer, "mine.pdf")
    theirs = _doc(other_case, outsider, "theirs-secret.pdf")
    client = session_client(lawyer)

    html = _refused(client, case, _form([mine, theirs]), f"No document {theirs.pk} in this case")
    assert "theirs-secret" not in html
    assert _order(client.get(_new(case), {"ids": [theirs.pk]})) == []
    assert _preview(client, case, theirs).status_code == 404


def test_a_second_production_on_used_numbers_or_volume_is_refused(lawyer: User, case: Case) -> None:
    a, b = _doc(case, lawyer, "a.pdf", pages=2), _doc(case, lawyer, "b.pdf")
    client = session_client(lawyer)
    assert client.post(_new(case), _form([a])).status_code == 302

    _refused_again = client.post(_new(case), _form([b], volume="ACME002", start_number="2"))
    assert _refused_again.status_code == 400
    assert "ACME000002 is already used in this case" in _refused_again.content.decode()
    assert "next free number is 3" in _refused_again.content.decode()
    same_volume = client.post(_new(case), _form([b]))
    assert "There is already a volume ACME001" in same_volume.content.decode()
    assert Production.objects.count() == 1 and BatesPage.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_two_productions_started_at_once_on_one_prefix_never_share_a_number(
    lawyer: User, case: Case
) -> None:
    a, b = _doc(case, lawyer, "a.pdf", pages=3), _doc(case, lawyer, "b.pdf", pages=3)
    barrier = threading.Barrier(2)
    answers: dict[str, int] = {}

    def commit(volume: str, document: Document) -> None:
        try:
            client = session_client(lawyer)
            barrier.wait()
            answers[volume] = client.post(
                _new(case), _form([document], volume=volume, start_number="1")
            ).status_code
        finally:
            connection.close()

    threads = [
        threading.Thread(target=commit, args=("V1", a)),
        threading.Thread(target=commit, args=("V2", b)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(answers.values()) == [302, 400]
    assert Production.objects.count() == 1
    assert list(BatesPage.objects.order_by("number").values_list("number", flat=True)) == [1, 2, 3]


@pytest.mark.slow
def test_hostile_and_oversized_fields_are_form_errors_and_nothing_is_written(
    lawyer: User, case: Case
) -> None:
    a = _doc(case, lawyer, "a.pdf")
    client = session_client(lawyer)

    cases = [
        (_form([a], volume="x" * 10_000), "at most 40 characters"),
        (_form([a], bates_prefix="A" * 1_000_000), "at most 20 characters"),
        (_form([a], legend="L" * 500), "at most 120 characters"),
        (_form([a], legend="two\nlines"), "one line"),
        (_form([a], volume="<script>alert(1)</script>"), "The volume name is 1-40"),
        (_form([a], bates_prefix="ACME<b>"), "The Bates prefix is 1-20"),
        (_form([a], digits="99"), "less than or equal to 12"),
        (_form([a], font_size="inf"), "Enter a number."),
        (_form([a], margin="-5"), "greater than or equal to 4"),
        (_form([a], start_number="0"), "greater than or equal to 1"),
        (_form([a], start_number="9" * 40), "less than or equal to"),
        (_form([a], position="<img src=x>"), "Select a valid choice."),
        ({**_form([a]), "documents": "1 OR 1=1"}, "Those are not document ids."),
        ({**_form([a]), "documents": "1,-2"}, "Those are not document ids."),
        ({**_form([a]), "documents": "99999999999999999999999"}, "Those are not document ids."),
        ({**_form([a]), "documents": ",".join([str(a.pk)] * 10_001)}, "at most 10,000 documents"),
        (_form([a], op="commit", volume=""), "Name the volume"),
    ]

    for data, words in cases:
        html = _refused(client, case, data, words)
        assert "<script>alert" not in html and "<img src=x>" not in html


def test_hostile_pick_parameters_are_refused_clearly(lawyer: User, case: Case) -> None:
    client = session_client(lawyer)

    for query, words in [
        ({"ids": ["abc"]}, "Those are not document ids."),
        ({"q": "x" * 5000}, "at most 500 characters"),
        ({"q": "bad\x00query"}, "Null characters are not allowed"),
        ({"packet": "999999"}, "No packet 999999 in this case"),
        ({"packet": "-1"}, "greater than or equal to 1"),
        ({"filters": "added_from=30000-01-01"}, "not valid"),
    ]:
        response = client.get(_new(case), query)
        assert response.status_code == 400, query
        assert words in response.content.decode(), words


# --- A production's page, its exports, the Productions tab -----------------------------------


def _made(case: Case, lawyer: User, *, stamped: bool = True) -> Production:
    a, b = _doc(case, lawyer, "a.pdf", pages=2), _doc(case, lawyer, "b.pdf")
    production = production_services.production_create(
        case=case, actor=lawyer, volume="ACME001", prefix="ACME", document_ids=[b.pk, a.pk]
    )
    if stamped:
        production_services.production_stamp(production_id=production.pk)
    production.refresh_from_db()
    return production


def _detail(case: Case, production: Production) -> str:
    return reverse(
        "documents:production_detail", kwargs={"case_id": case.pk, "production_id": production.pk}
    )


def test_the_production_page_shows_its_range_documents_maker_status_and_downloads(
    lawyer: User, staff: User, case: Case
) -> None:
    production = _made(case, lawyer)

    response = session_client(staff).get(_detail(case, production))

    html = response.content.decode()
    assert response.status_code == 200
    assert f"ACME000001{DASH}ACME000003" in html
    assert html.index("b.pdf") < html.index("a.pdf")
    assert "ACME000002</td>" in html and "ACME000003</td>" in html
    assert "Laura Lawyer" in html and "Ready" in html
    pdf = reverse(
        "api:download_production", kwargs={"case_id": case.pk, "production_id": production.pk}
    )
    assert pdf in html
    assert session_client(staff).get(pdf).status_code == 200


def test_a_production_still_stamping_or_failed_says_so(lawyer: User, case: Case) -> None:
    production = _made(case, lawyer, stamped=False)
    client = session_client(lawyer)

    queued = client.get(_detail(case, production)).content.decode()
    Production.objects.filter(pk=production.pk).update(
        status=Production.Status.FAILED, error="Stamping failed (OSError); the worker log has it."
    )
    failed = client.get(_detail(case, production)).content.decode()

    assert "Queued" in queued and "can be downloaded when the stamping has finished" in queued
    assert "download_production" not in queued and "/pdf" not in queued
    assert "Stamping failed (OSError)" in failed


def test_an_export_starts_from_the_page_and_its_zip_is_linked_when_built(
    lawyer: User, case: Case
) -> None:
    production = _made(case, lawyer)
    client = session_client(lawyer)
    url = reverse(
        "documents:production_export",
        kwargs={"case_id": case.pk, "production_id": production.pk},
    )

    response = client.post(url, {"encoding": "cp1252", "image_dpi": "100"})

    export = ProductionExport.objects.get()
    assert response.status_code == 302 and response["Location"] == _detail(case, production)
    assert (export.encoding, export.image_dpi, export.status) == ("cp1252", 100, "queued")
    production_services.production_export_build(export_id=export.pk)
    html = client.get(_detail(case, production)).content.decode()
    zip_url = reverse(
        "api:download_export",
        kwargs={"case_id": case.pk, "production_id": production.pk, "export_id": export.pk},
    )
    assert zip_url in html
    assert client.get(zip_url).status_code == 200


def test_bad_export_requests_say_why_and_queue_nothing(lawyer: User, case: Case) -> None:
    production = _made(case, lawyer, stamped=False)
    client = session_client(lawyer)
    url = reverse(
        "documents:production_export",
        kwargs={"case_id": case.pk, "production_id": production.pk},
    )

    for data, words in [
        ({"encoding": "utf-8", "image_dpi": "300"}, "is not stamped yet"),
        ({"encoding": "ebcdic", "image_dpi": "300"}, "Select a valid choice"),
        ({"encoding": "utf-8", "image_dpi": "99999"}, "less than or equal to 600"),
        ({"encoding": "utf-8", "image_dpi": "x" * 100_000}, "Enter a whole number"),
    ]:
        page = client.post(url, data, follow=True)
        assert words in page.content.decode(), words
    assert not ProductionExport.objects.exists()


def test_the_productions_tab_lists_each_production_with_its_exports(
    lawyer: User, case: Case, django_assert_max_num_queries: Any
) -> None:
    production = _made(case, lawyer)
    export = production_services.production_export_request(
        production=production, actor=lawyer, image_dpi=100
    )
    production_services.production_export_build(export_id=export.pk)
    url = reverse("documents:production_list", kwargs={"case_id": case.pk})
    client = session_client(lawyer)

    with django_assert_max_num_queries(12):
        response = client.get(url)

    html = response.content.decode()
    assert response.status_code == 200
    assert "ACME001" in html and f"ACME000001{DASH}ACME000003" in html
    assert "Laura Lawyer" in html and "Ready" in html
    assert "UTF-8, 100 dpi" in html and "/zip" in html
    assert 'aria-current="page">Productions' in html
    # Its tab is on every case page.
    case_page = client.get(reverse("cases:detail", kwargs={"case_id": case.pk}))
    assert url in case_page.content.decode()


def test_non_members_get_404_on_every_production_page(
    lawyer: User, outsider: User, case: Case
) -> None:
    production = _made(case, lawyer)
    document = production.items.first().document  # type: ignore[union-attr]
    client = session_client(outsider)
    kwargs = {"case_id": case.pk, "production_id": production.pk}

    for url in [
        reverse("documents:production_list", kwargs={"case_id": case.pk}),
        _new(case) + f"?ids={document.pk}",
        reverse(
            "documents:production_preview",
            kwargs={"case_id": case.pk, "document_id": document.pk},
        )
        + "?bates_prefix=ACME",
        reverse("documents:production_detail", kwargs=kwargs),
    ]:
        assert client.get(url).status_code == 404, url
    assert client.post(_new(case), _form([document], volume="X2")).status_code == 404
    export = reverse("documents:production_export", kwargs=kwargs)
    assert client.post(export, {"encoding": "utf-8", "image_dpi": "300"}).status_code == 404
    assert Production.objects.count() == 1 and not ProductionExport.objects.exists()
    other = reverse(
        "documents:production_detail", kwargs={"case_id": case.pk, "production_id": 987654321}
    )
    assert session_client(lawyer).get(other).status_code == 404


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True, databases="__all__")
async def test_building_an_export_is_followed_live_on_the_case_stream(
    lawyer: User, case: Case
) -> None:
    production = await sync_to_async(_made)(case, lawyer)
    export = await sync_to_async(production_services.production_export_request)(
        production=production, actor=lawyer, image_dpi=100
    )
    socket, _ = await ws_connect(f"/ws/cases/{case.pk}/events/", cookie_user=lawyer)

    await sync_to_async(production_services.production_export_build)(export_id=export.pk)

    seen = [await socket.receive_json_from(10) for _ in range(2)]
    assert [(e["type"], e["export_id"], e["status"]) for e in seen] == [
        ("documents.export_progress", export.pk, "processing"),
        ("documents.export_progress", export.pk, "ready"),
    ]
    assert seen[0]["production_id"] == production.pk
    await socket.disconnect()


@pytest.mark.slow
def test_the_new_page_and_the_production_page_read_in_a_bounded_number_of_queries(
    lawyer: User, case: Case, django_assert_max_num_queries: Any
) -> None:
    documents = [_doc(case, lawyer, f"d{n:02}.pdf") for n in range(12)]
    production = production_services.production_create(
        case=case,
        actor=lawyer,
        volume="ACME001",
        prefix="ACME",
        document_ids=[d.pk for d in documents],
    )
    client = session_client(lawyer)

    with django_assert_max_num_queries(12):
        picked = client.get(_new(case), {"ids": [d.pk for d in documents]})
    with django_assert_max_num_queries(14):
        shown = client.get(_detail(case, production))

    assert len(_order(picked)) == 12
    assert shown.content.decode().count('<td class="nowrap">ACME0000') == 24
