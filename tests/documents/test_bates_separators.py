"""Bates prefixes that end with a space or a hyphen (issue 20 req. 2): "ABC 000123" and
"ABC-000123" are stamped as typed, looked up with or without the separator, and share one
numbering with "ABC"; malformed prefixes are clear errors on the form, the API and the
service, and nothing is written."""

import io
import re
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.urls import reverse

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import (
    bates,
    production_preview,
    production_selectors,
    production_services,
    storage,
)
from apps.documents import services as document_services
from apps.documents.models import BatesPage, Document, Production
from apps.documents.production_forms import StampForm
from lexweb.errors import Conflict, DomainError
from tests.conftest import session_client, token_client

pytestmark = pytest.mark.django_db

JSON = "application/json"

# (typed, what the form/API/service says); each refused everywhere, nothing written.
MALFORMED = [
    ("   ", "empty or only spaces"),
    ("ABC  ", "not two"),
    ("ABC\t", "never a tab"),
    ("ABC\n", "never a tab"),
    ("ABC--", "not two"),
    ("ABC -", "not two"),
    ("ABC-_", "not two"),
    ("A" * 21, "at most 20"),
    ("\u0410BC", "U+0410"),  # Cyrillic capital A
    ("\uff21BC", "U+FF21"),  # fullwidth A
    ("\u212aAY", "U+212A"),  # the Kelvin sign
    ("AB\u00a0", "U+00A0"),  # a no-break space is not a space
    ("A--B", "The Bates prefix is 1-20"),
    ("-ABC", "The Bates prefix is 1-20"),
    ("ACME<b>", "The Bates prefix is 1-20"),
]


@pytest.fixture(autouse=True)
def _blobs(blob_root: Path) -> None:
    """Every test stores its files in a blob root of its own."""


def _pdf(pages: int, words: str) -> bytes:
    with pymupdf.open() as pdf:
        for n in range(pages):
            pdf.new_page().insert_text((72, 72), f"{words}, page {n + 1}.", fontsize=11)
        return pdf.tobytes()


def _doc(case: Case, user: User, name: str, pages: int = 2) -> Document:
    outcome = document_services.document_upload(
        case=case,
        uploaded_by=user,
        filename=name,
        source=io.BytesIO(_pdf(pages, f"The {name} papers")),
        origin="client",
    )
    assert outcome.document is not None, outcome.error
    document_services.document_extract_text(document_id=outcome.document.pk)
    return outcome.document


def _produce(
    case: Case, user: User, documents: list[Document], prefix: str, **kw: Any
) -> Production:
    production = production_services.production_create(
        case=case,
        actor=user,
        volume=kw.pop("volume", "VOL001"),
        prefix=prefix,
        document_ids=[d.pk for d in documents],
        **kw,
    )
    production_services.production_stamp(production_id=production.pk)
    production.refresh_from_db()
    assert production.status == Production.Status.READY, production.error
    return production


def _stamped_text(production: Production) -> list[str]:
    assert production.output is not None
    with pymupdf.open(storage.blob_path(production.output.sha256)) as volume:
        return [page.get_text() for page in volume]


def _lookup(user: User, case: Case, reference: str) -> list[str]:
    hits = production_selectors.bates_lookup_for_user(
        user=user, case_id=case.pk, reference=reference
    )
    return [hit.bates for hit in hits]


# --- The rule --------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["ABC", "ABC ", "ABC-", "AB-2", "HX_", "A.B.", "Q", "ZZ-"])
def test_letters_and_digits_with_one_separator_at_the_end_are_prefixes(prefix: str) -> None:
    assert bates.prefix_problem(prefix) is None


@pytest.mark.parametrize(("prefix", "words"), MALFORMED)
def test_malformed_prefixes_are_refused_saying_why(prefix: str, words: str) -> None:
    problem = bates.prefix_problem(prefix)

    assert problem is not None and words in problem
    with pytest.raises(DomainError, match=re.escape(words)):
        production_services.production_stamp_check(
            prefix=prefix,
            digits=6,
            font_size=9,
            margin=18,
            legend="",
            position="bottom_right",
            legend_position="bottom_left",
        )


def test_every_spelling_of_a_prefix_has_one_key() -> None:
    assert {bates.prefix_key(p) for p in ("ABC", "ABC ", "ABC-", "ABC_", "ABC.")} == {"ABC"}
    assert bates.prefix_key("AB-2") == "AB-2"
    assert bates.label("ABC ", 123, 6) == "ABC 000123"


# --- Stamped as typed, looked up either way --------------------------------------------------


@pytest.mark.parametrize(("prefix", "printed"), [("ABC ", "ABC 000001"), ("ABC-", "ABC-000001")])
def test_a_prefix_ending_with_a_separator_is_stamped_and_indexed_as_typed(
    lawyer: User, case: Case, prefix: str, printed: str
) -> None:
    production = _produce(case, lawyer, [_doc(case, lawyer, "a.pdf")], prefix)

    assert production.prefix == prefix
    assert production.bates(production.first_number) == printed
    assert set(BatesPage.objects.values_list("prefix", flat=True)) == {prefix}
    texts = _stamped_text(production)
    assert printed in texts[0]
    assert printed.replace(prefix, "ABC") not in texts[0]  # not the number without its separator


@pytest.mark.parametrize("prefix", ["ABC ", "ABC-", "ABC"])
@pytest.mark.parametrize(
    "reference",
    [
        "ABC000002",
        "ABC 000002",
        "ABC-000002",
        "abc 000002",
        "ABC_000002",
        "  ABC \t000002 ",
    ],
)
def test_a_number_is_found_with_or_without_the_separator(
    lawyer: User, case: Case, prefix: str, reference: str
) -> None:
    _produce(case, lawyer, [_doc(case, lawyer, "a.pdf", pages=3)], prefix)

    assert _lookup(lawyer, case, reference) == [f"{prefix}000002"]


@pytest.mark.parametrize(
    "reference", ["ABC 000001-ABC 000003", "ABC000001-ABC-000003", "ABC-000001 - 3", "ABC 1-3"]
)
def test_a_range_is_found_in_any_spelling(lawyer: User, case: Case, reference: str) -> None:
    _produce(case, lawyer, [_doc(case, lawyer, "a.pdf", pages=3)], "ABC ")

    assert _lookup(lawyer, case, reference) == ["ABC 000001", "ABC 000002", "ABC 000003"]


def test_the_api_and_the_page_find_a_spaced_number_written_without_its_space(
    lawyer: User, case: Case
) -> None:
    _produce(case, lawyer, [_doc(case, lawyer, "a.pdf")], "ABC ")

    api = token_client(lawyer).get(f"/api/v1/cases/{case.pk}/bates/ABC-000002")
    page = session_client(lawyer).get(f"/cases/{case.pk}/bates/", {"ref": "ABC000002"})

    assert api.status_code == 200, api.content
    assert [hit["bates"] for hit in api.json()] == ["ABC 000002"]
    assert page.status_code == 200 and "ABC 000002" in page.content.decode()


def test_an_unknown_prefix_message_shows_the_space_of_a_prefix_in_use(
    lawyer: User, case: Case
) -> None:
    _produce(case, lawyer, [_doc(case, lawyer, "a.pdf")], "ABC ")

    with pytest.raises(DomainError) as refused:
        _lookup(lawyer, case, "XYZ000001")

    assert refused.value.message.endswith("(prefixes in use: 'ABC ').")


# --- One numbering a key ---------------------------------------------------------------------


def test_spellings_of_one_prefix_continue_one_numbering_and_never_share_a_number(
    lawyer: User, case: Case
) -> None:
    a, b, c = (_doc(case, lawyer, f"{n}.pdf") for n in "abc")
    _produce(case, lawyer, [a], "ABC")
    assert production_preview.next_number(case=case, prefix="ABC ") == 3

    spaced = _produce(case, lawyer, [b], "ABC ", volume="VOL002")

    assert (spaced.first_number, spaced.last_number) == (3, 4)
    with pytest.raises(Conflict, match="ABC 000004 is already used"):
        production_services.production_create(
            case=case,
            actor=lawyer,
            volume="VOL003",
            prefix="ABC-",
            document_ids=[c.pk],
            start_number=4,
        )
    assert _lookup(lawyer, case, "ABC-000001-4") == [
        "ABC000001",
        "ABC000002",
        "ABC 000003",
        "ABC 000004",
    ]


def test_where_two_spellings_carry_a_number_the_one_written_wins(lawyer: User, case: Case) -> None:
    # Productions made before one key shared one numbering: both carry number 1.
    a, b = _doc(case, lawyer, "a.pdf", pages=1), _doc(case, lawyer, "b.pdf", pages=1)
    first = _produce(case, lawyer, [a], "ABC")
    second = _produce(case, lawyer, [b], "ABC-", volume="VOL002")
    BatesPage.objects.filter(production=second).update(number=1)

    assert first.pk != second.pk
    assert _lookup(lawyer, case, "ABC000001") == ["ABC000001"]
    assert _lookup(lawyer, case, "ABC-000001") == ["ABC-000001"]
    assert len(_lookup(lawyer, case, "ABC 000001")) == 1


# --- Edges: the form, the API ----------------------------------------------------------------


def _form_data(documents: list[Document], prefix: str) -> dict[str, str]:
    return {
        "documents": ",".join(str(d.pk) for d in documents),
        "volume": "VOL001",
        "bates_prefix": prefix,
        "digits": "6",
        "position": "bottom_right",
        "legend": "",
        "legend_position": "bottom_left",
        "font_size": "9",
        "margin": "18",
        "op": "commit",
    }


def test_the_form_keeps_a_trailing_space_and_capitalises(lawyer: User, case: Case) -> None:
    form = StampForm(_form_data([], "  abc "))
    assert form.is_valid(), form.errors
    assert form.stamp().prefix == "ABC "

    a = _doc(case, lawyer, "a.pdf")
    response = session_client(lawyer).post(
        reverse("documents:production_new", kwargs={"case_id": case.pk}), _form_data([a], "abc ")
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    assert Production.objects.get().prefix == "ABC "


@pytest.mark.parametrize(("prefix", "words"), [*MALFORMED, ("\ufb00", "U+FB00")])
def test_malformed_prefixes_are_form_errors_and_nothing_is_written(
    lawyer: User, case: Case, prefix: str, words: str
) -> None:
    # U+FB00 (the ligature "ff") would become "FF" if capitalised before the check.
    a = _doc(case, lawyer, "a.pdf")

    response = session_client(lawyer).post(
        reverse("documents:production_new", kwargs={"case_id": case.pk}), _form_data([a], prefix)
    )

    html = response.content.decode()
    assert response.status_code == 400
    assert words in html, html[-3000:]
    assert not Production.objects.exists() and not BatesPage.objects.exists()


@pytest.mark.parametrize(("prefix", "words"), MALFORMED)
def test_malformed_prefixes_are_api_errors_and_nothing_is_written(
    lawyer: User, case: Case, prefix: str, words: str
) -> None:
    a = _doc(case, lawyer, "a.pdf")

    response = token_client(lawyer).post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "VOL001", "prefix": prefix, "document_ids": [a.pk]},
        content_type=JSON,
    )

    assert response.status_code in (400, 422), response.content
    assert response.json()["detail"]
    assert not Production.objects.exists() and not BatesPage.objects.exists()


def test_the_api_takes_a_prefix_ending_with_a_space(lawyer: User, case: Case) -> None:
    a = _doc(case, lawyer, "a.pdf")

    response = token_client(lawyer).post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "VOL001", "prefix": "ABC ", "document_ids": [a.pk]},
        content_type=JSON,
    )

    assert response.status_code == 201, response.content
    assert (response.json()["first_bates"], response.json()["last_bates"]) == (
        "ABC 000001",
        "ABC 000002",
    )


def test_the_list_s_produce_action_carries_a_trailing_space_to_the_production_page(
    lawyer: User, case: Case
) -> None:
    a = _doc(case, lawyer, "a.pdf")
    client = session_client(lawyer)

    ticked = client.post(
        reverse("documents:bulk", kwargs={"case_id": case.pk}),
        {"action": "produce", "ids": [a.pk], "volume": "V1", "bates_prefix": "ABC "},
    )
    page = client.get(ticked["Location"])

    assert ticked.status_code == 302 and "bates_prefix=ABC+" in ticked["Location"]
    assert 'value="ABC "' in page.content.decode()
