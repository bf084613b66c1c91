"""The Bates-range parser and lookup, by hypothesis: what a production prints is read back
exactly (any case, spacing, en dash, short range), anything else is a DomainError with a short
message, and the lookup answers every reference with pages, a clear 400 or a 404, on the API and
the browser page, never a server error (numbers past the index's bigint included)."""

import io
from typing import Any
from urllib.parse import quote

import pymupdf
import pytest
from django.test import Client
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import production_selectors, production_services
from apps.documents import services as document_services
from apps.documents.production_selectors import MAX_NUMBER, MAX_RANGE, _parse, _Reference
from lexweb.errors import DomainError, NotFound
from tests.conftest import session_client, token_client

# Prefix rules of production_create: 1-20 capital letters, digits, "-", "_" or ".".
PREFIXES = st.from_regex(r"[A-Z][A-Z0-9_.-]{0,19}", fullmatch=True)
DIGITS = st.integers(min_value=3, max_value=12)
NUMBERS = st.integers(min_value=0, max_value=10**12 - 1)
DB_EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _spell(text: str, flips: list[bool]) -> str:
    flips = (flips + [False] * len(text))[: len(text)]
    return "".join(c.lower() if flip else c for c, flip in zip(text, flips, strict=True))


@given(
    prefix=PREFIXES,
    digits=DIGITS,
    first=NUMBERS,
    span=st.integers(min_value=0, max_value=1000),
    style=st.sampled_from(["single", "full", "short", "en-dash", "spaced"]),
    flips=st.lists(st.booleans(), max_size=40),
    pad=st.sampled_from(["", " ", "  \t", "\n"]),
)
def test_what_a_production_prints_is_read_back_exactly(
    prefix: str, digits: int, first: int, span: int, style: str, flips: list[bool], pad: str
) -> None:
    last = first + span
    begin, end = f"{prefix}{first:0{digits}d}", f"{prefix}{last:0{digits}d}"
    reference = {
        "single": begin,
        "full": f"{begin}-{end}",
        "short": f"{begin}-{last}",
        "en-dash": f"{begin}\u2013{end}",
        "spaced": f"{begin} - {end}",
    }[style]
    expected_last = first if style == "single" else last

    parsed = _parse(pad + _spell(reference, flips) + pad, [prefix])

    # No page suffix written: none read (the whole document, where its number carries them).
    assert parsed == _Reference(prefix, first, expected_last, None, None)


@given(
    prefixes=st.lists(PREFIXES, min_size=1, max_size=5, unique=True),
    data=st.data(),
)
def test_with_several_prefixes_the_longest_that_fits_wins(
    prefixes: list[str], data: st.DataObject
) -> None:
    prefix = data.draw(st.sampled_from(prefixes))
    number = data.draw(NUMBERS)
    reference = f"{prefix}{number:06d}"

    parsed = _parse(reference, prefixes)
    parsed_prefix, first, last = parsed.prefix, parsed.first, parsed.last

    # The reference starts with the chosen prefix, and no longer prefix in use also fits it.
    assert reference.upper().startswith(parsed_prefix.upper()) and first == last
    assert int(reference[len(parsed_prefix) :]) == first
    assert len(parsed_prefix) >= len(prefix)


@given(reference=st.text(max_size=200), prefixes=st.lists(PREFIXES, max_size=4))
@example(reference="ACME\u0663\u0661", prefixes=["ACME"])  # Arabic-Indic digits
@example(reference="\u212aAY000001", prefixes=["KAY"])  # the Kelvin sign folds to "k"
@example(reference="ACME" + "9" * 150, prefixes=["ACME"])
@example(reference="\x00ACME000001", prefixes=["ACME"])
@example(reference="0" * 15 + "\x1f" * 9 + "\U0001342f" * 36, prefixes=[])  # escapes
def test_any_text_is_a_reference_or_a_domain_error_with_a_short_message(
    reference: str, prefixes: list[str]
) -> None:
    try:
        parsed = _parse(reference, prefixes)
        prefix, first, last = parsed.prefix, parsed.first, parsed.last
    except DomainError as error:
        assert len(error.message) < 200 + sum(len(p) + 2 for p in prefixes)
        return
    assert prefix in prefixes
    assert first >= 0 and last >= 0
    # Only ASCII digits are numbers.
    assert not any(c.isdigit() and not c.isascii() for c in reference)


# --- The lookup, against the real Bates index -----------------------------------------------


@pytest.fixture
def produced(lawyer: User, case: Case, settings: Any, tmp_path: Any) -> Case:
    """Three pages produced as PROP000001-PROP000003."""
    settings.LEXWEB_BLOB_ROOT = tmp_path / "blobs"
    with pymupdf.open() as pdf:
        for n in range(3):
            pdf.new_page().insert_text((72, 72), f"Property page {n + 1}.", fontsize=11)
        data = pdf.tobytes()
    outcome = document_services.document_upload(
        case=case, uploaded_by=lawyer, filename="p.pdf", source=io.BytesIO(data), origin="client"
    )
    assert outcome.document is not None, outcome.error
    document_services.document_extract_text(document_id=outcome.document.pk)
    production = production_services.production_create(
        case=case, actor=lawyer, volume="PROP1", prefix="PROP", document_ids=[outcome.document.pk]
    )
    production_services.production_stamp(production_id=production.pk)
    return case


REFERENCES = st.one_of(
    st.text(max_size=120),
    st.builds(
        lambda a, b, sep: f"PROP{a}{sep}{b}",
        st.integers(min_value=0, max_value=10**30),
        st.integers(min_value=0, max_value=10**30),
        st.sampled_from(["-", "-PROP", " - ", "\u2013"]),
    ),
    st.builds(lambda n: f"prop{n:06d}", st.integers(min_value=0, max_value=10**25)),
)


@pytest.mark.django_db
@DB_EXAMPLES
@given(reference=REFERENCES)
@example(reference="PROP" + "9" * 30)
@example(reference="PROP1-PROP" + "9" * 30)
@example(reference="PROP" + "9" * 25 + "-" + "9" * 25)
@example(reference="PROP000003-PROP000001")
@example(reference=f"PROP1-{MAX_RANGE + 1}")
def test_lookup_answers_pages_or_a_domain_error_never_a_database_error(
    lawyer: User, produced: Case, reference: str
) -> None:
    try:
        hits = production_selectors.bates_lookup_for_user(
            user=lawyer, case_id=produced.pk, reference=reference
        )
    except NotFound:
        return
    except DomainError as error:
        assert error.message
        return
    assert 1 <= len(hits) <= 3
    assert [hit.bates for hit in hits] == sorted(hit.bates for hit in hits)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("reference", "pages"),
    [("PROP000001", 1), ("prop000002", 1), ("PROP000001-PROP000003", 3), ("PROP1-3", 3)],
)
def test_lookup_finds_exactly_the_pages_in_the_range(
    lawyer: User, produced: Case, reference: str, pages: int
) -> None:
    hits = production_selectors.bates_lookup_for_user(
        user=lawyer, case_id=produced.pk, reference=reference
    )

    assert len(hits) == pages


@pytest.fixture
def api(lawyer: User) -> Client:
    return token_client(lawyer)


@pytest.fixture
def web(lawyer: User) -> Client:
    return session_client(lawyer)


@pytest.mark.django_db
@settings(DB_EXAMPLES, max_examples=25)
@given(reference=REFERENCES)
@example(reference="PROP" + "9" * 30)
@pytest.mark.slow
def test_api_and_browser_lookups_answer_200_400_or_404(
    api: Client, web: Client, produced: Case, reference: str
) -> None:
    from_api = api.get(f"/api/v1/cases/{produced.pk}/bates/{_path_safe(reference)}")
    from_web = web.get(f"/cases/{produced.pk}/bates/", {"ref": reference})

    assert from_api.status_code in (200, 400, 404), from_api.content[:300]
    assert from_web.status_code in (200, 400, 404), from_web.content[:300]
    if from_api.status_code != 200:
        assert set(from_api.json()) == {"detail", "code"}


def _path_safe(reference: str) -> str:
    # A path segment: "/" would be another route; an empty one is the list (not this route).
    return quote(reference.replace("/", "") or "x", safe="")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("span", "status"),
    [(MAX_RANGE - 1, 404), (MAX_RANGE, 404), (MAX_RANGE + 1, 400)],
    ids=["below", "at", "above"],
)
def test_range_limit(api: Client, produced: Case, span: int, status: int) -> None:
    # Past the produced pages: within the limit it is a lookup that finds nothing (404).
    first = 100
    response = api.get(f"/api/v1/cases/{produced.pk}/bates/PROP{first}-{first + span - 1}")

    assert response.status_code == status


@pytest.mark.django_db
@pytest.mark.parametrize(
    "number",
    [MAX_NUMBER - 1, MAX_NUMBER, MAX_NUMBER + 1, 10**40],
    ids=["below", "at", "above", "far-above"],
)
@pytest.mark.parametrize("edge", ["api", "web"])
def test_numbers_around_the_index_limit_are_not_found_not_a_server_error(
    api: Client, web: Client, produced: Case, number: int, edge: str
) -> None:
    if edge == "api":
        response = api.get(f"/api/v1/cases/{produced.pk}/bates/PROP{number}")
    else:
        response = web.get(f"/cases/{produced.pk}/bates/", {"ref": f"PROP{number}"})

    assert response.status_code == 404
    assert "No page carries" in response.content.decode()


@pytest.mark.django_db
def test_unknown_prefix_message_names_each_prefix_in_use_once(lawyer: User, produced: Case) -> None:
    # The index holds a row per page (three here); the message names the prefix, not the pages.
    with pytest.raises(DomainError) as refused:
        production_selectors.bates_lookup_for_user(
            user=lawyer, case_id=produced.pk, reference="NOPE000001"
        )

    assert refused.value.message.endswith("(prefixes in use: PROP).")
