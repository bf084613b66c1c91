"""Element ids are unique on the pages of a case: a label's `for`, aria-describedby and the
scripts find the element they mean (the upload form and the list's filters share field names)."""

from collections import Counter
from html.parser import HTMLParser

import pytest
from django.test import Client

from apps.cases.models import Case

pytestmark = pytest.mark.django_db


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: Counter[str] = Counter()
        self.references: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value:
                self.ids[value] += 1
            elif name in ("for", "aria-describedby") and value:
                self.references += value.split()


@pytest.mark.parametrize(
    "path",
    [
        "",
        "documents/",
        "documents/?origin=client&custodian=x&show=withdrawn",
        "search/",
        "productions/",
        "productions/new/",
        "packets/",
        "drafts/",
        "drafts/new/",
        "runs/",
        "runs/new/",
    ],
)
def test_every_id_on_the_page_is_unique_and_every_reference_finds_one(
    lawyer_client: Client, case: Case, path: str
) -> None:
    response = lawyer_client.get(f"/cases/{case.pk}/{path}")
    assert response.status_code == 200
    page = _Ids()
    page.feed(response.content.decode())

    assert [name for name, count in page.ids.items() if count > 1] == []
    assert "id_upload_origin" in page.ids or path != "documents/"
    # aria-describedby may name an error list that is absent while the field has no error.
    missing = {ref for ref in page.references if ref not in page.ids and not ref.endswith("_error")}
    assert missing == set()
