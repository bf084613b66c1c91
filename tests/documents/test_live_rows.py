"""The review list's live rows (issue 25 req 3): a row the page adds or reads again is the row
the page renders (one template), with every column and badge, and the list's count comes with
it, for the list's own filters."""

import re
from typing import Any

import pytest
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case, Membership
from apps.documents import review_services
from apps.documents.list_forms import cursor_encode
from apps.documents.models import Derivation, Document
from tests.documents.test_review_list import _doc
from tests.factories import CaseFactory, MembershipFactory

pytestmark = pytest.mark.django_db


def _row(html: str, document: Document) -> str:
    found = re.search(rf'<tr data-document-id="{document.pk}">.*?</tr>', html, re.S)
    assert found, f"no row of {document.filename}"
    return found.group(0)


def _rows(client: Client, case: Case, **params: Any) -> str:
    response = client.get(f"/cases/{case.pk}/documents/rows/", params)
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


def _attachment(case: Case, lawyer: User) -> tuple[Document, Document]:
    mail = _doc(case, lawyer, "letter.eml", kind=Document.Kind.EMAIL, custodian="Jane Roe")
    pdf = _doc(
        case,
        lawyer,
        "invoice.pdf",
        custodian="Jane Roe",
        origin=Document.Origin.OPPOSING,
        page_count=3,
        pages_done=3,
        size=52_000,
    )
    Derivation.objects.create(
        child=pdf,
        parent=mail,
        transform=Derivation.EMAIL_ATTACHMENT,
        version="1",
        deterministic=True,
    )
    return mail, pdf


def test_a_row_read_again_is_the_row_the_page_renders(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    mail, pdf = _attachment(case, lawyer)
    page = lawyer_client.get(f"/cases/{case.pk}/documents/").content.decode()

    fragment = _rows(lawyer_client, case, ids=f"{pdf.pk},{mail.pk}")

    assert _row(fragment, pdf) == _row(page, pdf)
    assert _row(fragment, mail) == _row(page, mail)
    row = _row(fragment, pdf)
    # Every column an attachment's live row used to lose: kind, origin, custodian, pages, size,
    # and its family badge.
    assert '<td data-field="kind">PDF</td>' in row
    assert "Opposing" in row or "opposing" in row
    assert '<td data-field="custodian">Jane Roe</td>' in row
    assert '<td class="num" data-field="page_count">3</td>' in row
    assert "50.8 KiB" in row
    assert "attachment of" in row and "letter.eml" in row
    assert 'data-provenance="' in row


def test_the_count_comes_with_the_rows_for_the_lists_filters(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    # The page was drawn empty: "0 documents."
    assert ">0 documents.<" in lawyer_client.get(f"/cases/{case.pk}/documents/").content.decode()
    made = [_doc(case, lawyer, f"d{n}.pdf") for n in range(18)]
    _doc(case, lawyer, "mail.eml", kind=Document.Kind.EMAIL)

    fragment = _rows(lawyer_client, case, newer_than=0)
    assert 'id="list-count">19 documents.</p>' in fragment
    newer = re.findall(r'<tbody id="rows-newer">(.*?)</tbody>', fragment, re.S)[0]
    ids = [int(n) for n in re.findall(r'<tr data-document-id="(\d+)">', newer)]
    assert ids == sorted(ids, reverse=True) and len(ids) == 19  # newest first, each once

    filtered = _rows(lawyer_client, case, kind="pdf", newer_than=made[9].pk)
    assert 'id="list-count">18 documents match these filters.</p>' in filtered
    newer = re.findall(r'<tbody id="rows-newer">(.*?)</tbody>', filtered, re.S)[0]
    assert re.findall(r'data-document-id="(\d+)"', newer) == [str(d.pk) for d in made[:9:-1]]


def test_a_row_that_left_the_list_is_not_returned(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    kept, gone = _doc(case, lawyer, "kept.pdf"), _doc(case, lawyer, "gone.pdf")
    review_services.documents_withdraw(actor=lawyer, case=case, document_ids=[gone.pk], reason="x")

    fragment = _rows(lawyer_client, case, ids=f"{kept.pk},{gone.pk}")

    assert f'data-document-id="{kept.pk}"' in fragment
    assert f'data-document-id="{gone.pk}"' not in fragment
    assert 'id="list-count">1 document.</p>' in fragment
    withdrawn = _rows(lawyer_client, case, ids=str(gone.pk), withdrawn="yes")
    assert f'data-document-id="{gone.pk}"' in withdrawn and "Restore" in withdrawn


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"ids": "1,x"}, "ids must be document ids"),
        ({"ids": "0"}, "ids must be document ids"),
        ({"ids": ",".join(["1"] * 201)}, "at most 200"),
        ({"newer_than": "-1"}, "newer_than"),
        ({"kind": "spreadsheet-ish"}, "kind"),
        ({"order": "2"}, "order"),
        ({"order": "1", "shown": "1,x"}, "shown"),
    ],
)
def test_bad_parameters_are_a_400_that_says_why(
    lawyer_client: Client, case: Case, params: dict[str, str], reason: str
) -> None:
    response = lawyer_client.get(f"/cases/{case.pk}/documents/rows/", params)
    assert response.status_code == 400
    assert reason in response.content.decode()


def test_an_outsider_gets_404_and_a_member_read_is_audited(
    lawyer: User, lawyer_client: Client, outsider_client: Client, case: Case
) -> None:
    secret = _doc(case, lawyer, "secret.pdf")
    response = outsider_client.get(f"/cases/{case.pk}/documents/rows/", {"ids": secret.pk})
    assert response.status_code == 404 and b"secret.pdf" not in response.content
    before = AuditEvent.objects.filter(action="document.list", case=case).count()
    _rows(lawyer_client, case, ids=str(secret.pk))
    assert AuditEvent.objects.filter(action="document.list", case=case).count() == before + 1


def test_the_page_names_where_its_rows_are_read_with_its_filters(
    lawyer_client: Client, case: Case
) -> None:
    html = lawyer_client.get(f"/cases/{case.pk}/documents/?kind=pdf").content.decode()
    assert f'data-documents-rows="/cases/{case.pk}/documents/rows/?kind=pdf"' in html
    # The rows a live page adds come from the server, not from a copy of the row in the page.
    assert "document-row-template" not in html


def _order(fragment: str) -> list[int]:
    found = re.search(r'id="page-order" data-order="([0-9,]*)"', fragment)
    assert found, fragment[:500]
    return [int(pk) for pk in found.group(1).split(",") if pk]


def _newer_ids(fragment: str) -> list[int]:
    newer = fragment.split('id="rows-newer"', 1)[1]
    return [int(pk) for pk in re.findall(r'<tr data-document-id="(\d+)"', newer)]


def test_a_sorted_view_gets_a_new_document_in_its_place_and_its_page_order(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    bravo, delta = _doc(case, lawyer, "bravo.pdf"), _doc(case, lawyer, "delta.pdf")
    page = lawyer_client.get(f"/cases/{case.pk}/documents/?sort=name").content.decode()
    assert "data-documents-first-page" not in page  # not the newest-first view: no newer_than
    charlie = _doc(case, lawyer, "charlie.pdf")  # added since, between the two by name

    fragment = _rows(lawyer_client, case, sort="name", order="1", shown=f"{bravo.pk},{delta.pk}")

    assert _order(fragment) == [bravo.pk, charlie.pk, delta.pk]
    assert _newer_ids(fragment) == [charlie.pk]
    assert "charlie.pdf" in _row(fragment, charlie)
    assert "3 documents" in fragment


def test_a_later_page_gets_only_what_a_reload_of_it_shows(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    bravo, delta = _doc(case, lawyer, "bravo.pdf"), _doc(case, lawyer, "delta.pdf")
    # The page after "bravo" by name: what its next-page link's cursor reads.
    cursor = cursor_encode("bravo.pdf", bravo.pk)
    page = lawyer_client.get(f"/cases/{case.pk}/documents/?sort=name&after={cursor}")
    assert f"after={cursor}" in page.content.decode()  # its live rows are read with its cursor
    _doc(case, lawyer, "alpha.pdf")  # before the page: on the first page, not this one
    echo = _doc(case, lawyer, "echo.pdf")  # after delta: on this page

    fragment = _rows(lawyer_client, case, sort="name", after=cursor, order="1", shown=str(delta.pk))

    assert _order(fragment) == [delta.pk, echo.pk]
    assert _newer_ids(fragment) == [echo.pk]


def test_a_row_whose_sort_value_changed_moves_in_the_page_order(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    small = _doc(case, lawyer, "small.pdf", page_count=2, pages_done=2)
    large = _doc(case, lawyer, "large.pdf", page_count=9, pages_done=9)
    Document.objects.filter(pk=small.pk).update(page_count=40, pages_done=40)  # read further

    fragment = _rows(
        lawyer_client, case, sort="-pages", order="1", ids=str(small.pk),
        shown=f"{large.pk},{small.pk}",
    )  # fmt: skip

    assert _order(fragment) == [small.pk, large.pk]
    assert _newer_ids(fragment) == []


def test_a_sorted_view_counts_its_documents_without_saying_filters(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    """The sort and the page size are not filters: the count line of a view that is only sorted
    (on the page and in the rows a live page reads again) says how many documents there are,
    not that they "match these filters"; a filter beside the sort still says so."""
    for n in range(3):
        _doc(case, lawyer, f"d{n}.pdf")
    _doc(case, lawyer, "mail.eml", kind=Document.Kind.EMAIL)
    url = f"/cases/{case.pk}/documents/"

    page = lawyer_client.get(url, {"sort": "name", "per_page": "50"}).content.decode()
    rows = _rows(lawyer_client, case, sort="name", per_page="50", newer_than=0)
    for html in (page, rows):
        assert 'id="list-count">4 documents.</p>' in html
        assert "these filters" not in html

    page = lawyer_client.get(url, {"sort": "name", "kind": "email"}).content.decode()
    rows = _rows(lawyer_client, case, sort="name", kind="email", newer_than=0)
    for html in (page, rows):
        assert 'id="list-count">1 document matches these filters.</p>' in html

    # An empty sorted view is a case without documents yet, not a filter that found none.
    other = CaseFactory.create(created_by=lawyer, number="CV-2026-0998", title="Empty v. Matter")
    MembershipFactory(case=other, user=lawyer, role=Membership.Role.LAWYER)
    empty = lawyer_client.get(f"/cases/{other.pk}/documents/", {"sort": "name"})
    assert "No documents yet." in empty.content.decode()
    assert "No documents match these filters." not in empty.content.decode()
