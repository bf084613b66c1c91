"""Every search input gets results or a clear 400, never a server error: hypothesis over the
web-search syntax against the real PostgreSQL (websearch_to_tsquery, GIN index, ts_headline),
through the selector, the API and the browser page.

Fifty dashes used to be a 500 ("tsquery stack too small": each "-" that starts a word is a NOT,
and PostgreSQL's parser holds 32); the examples below include that and its relatives.
"""

import io
import re
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import selectors
from apps.documents import services as document_services
from apps.documents.models import Document
from apps.documents.selectors import MAX_QUERY_LENGTH, search_query_clean
from lexweb.errors import DomainError
from tests.conftest import session_client, token_client

pytestmark = pytest.mark.django_db

# Few examples each: every one is a real query (or request) against PostgreSQL.
DB_EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PAGE_TEXT = "The ledger of Acme shows the novation of the lease, page one."
KNOWN_ERRORS = {
    "Type something to search for.",
    f"A search is at most {MAX_QUERY_LENGTH} characters.",
    "That search is too complex; use fewer operators (-, or, quotes).",
}

# The web-search syntax and what breaks parsers: operators, quotes, tsquery's own operators
# (which websearch must treat as text), whitespace of every kind, NUL, and other scripts.
SYNTAX = st.sampled_from(
    ["-", "--", " ", '"', "or", "OR", "ledger", "acme", "x", "!", "&", "|", "(", ")", "<->",
     ":*", "'", "\\", "\u2013", "\t", "\n", "\u3000", "\x00", "ß", "é", "日本", "\u0301", "_",
     ".", ",", "-ledger", " or ", "\ufffd", "%", "*", "1"]
)  # fmt: skip
QUERIES = st.one_of(
    st.lists(SYNTAX, max_size=120).map("".join),
    st.text(max_size=MAX_QUERY_LENGTH + 20),
    st.text(alphabet='- "or', max_size=MAX_QUERY_LENGTH + 20),
)
HOSTILE = [
    "-" * 50,
    "- " * 100,
    "-" * 40 + "ledger",
    "ledger " + "-" * 40,
    "-(" * 40,
    "-!" * 40,
    '"' + "-" * 60 + '"',
    "OR OR",
    "or or or",
    "ledger or or or acme",
    '"',
    '"ledger',
    "\x00",
    "\x00ledger\x00",
    "ledger " * 80,
    "日本語の検索",
    "\u0000-\u0000-" * 30,
]


@pytest.fixture
def searchable(lawyer: User, case: Case, settings: Any, tmp_path: Any) -> Document:
    settings.LEXWEB_BLOB_ROOT = tmp_path / "blobs"
    outcome = document_services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="ledger.txt",
        source=io.BytesIO(PAGE_TEXT.encode()),
        origin="client",
    )
    assert outcome.document is not None, outcome.error
    document_services.document_extract_text(document_id=outcome.document.pk)
    return outcome.document


@pytest.fixture
def api(lawyer: User) -> Client:
    return token_client(lawyer)


@pytest.fixture
def web(lawyer: User) -> Client:
    return session_client(lawyer)


# --- The selector ---------------------------------------------------------------------------


@DB_EXAMPLES
@given(query=QUERIES)
@example(query="-" * 50)
@example(query="- " * 50 + "ledger")
@example(query="x" * MAX_QUERY_LENGTH)
@pytest.mark.slow
def test_any_text_is_results_or_a_domain_error_never_a_database_error(
    lawyer: User, case: Case, searchable: Document, query: str
) -> None:
    try:
        results = selectors.page_search_for_user(user=lawyer, case_id=case.pk, query=query)
    except DomainError as error:
        assert error.message in KNOWN_ERRORS
    else:
        assert all(hit.document_id == searchable.pk for hit in results)
        # Snippets are escaped page text: the only tags are the hit marks.
        assert all("<" not in re.sub(r"</?mark>", "", hit.snippet) for hit in results)


@DB_EXAMPLES
@given(dashes=st.integers(min_value=0, max_value=120), spaced=st.booleans())
@pytest.mark.slow
def test_a_run_of_dashes_before_a_word_negates_it_once_per_dash(
    lawyer: User, case: Case, searchable: Document, dashes: int, spaced: bool
) -> None:
    """websearch_to_tsquery reads "--ledger" as NOT NOT ledger; the cleaned query keeps that
    meaning for any length of run (odd: the page is excluded; even: found)."""
    run = ("- " if spaced else "-") * dashes

    results = selectors.page_search_for_user(user=lawyer, case_id=case.pk, query=run + "ledger")

    assert len(results) == (0 if dashes % 2 else 1)


# --- The edges ------------------------------------------------------------------------------


def _assert_result_or_clear_400(response: Any, *, api: bool) -> None:
    assert response.status_code in (200, 400), response.content[:300]
    if response.status_code == 400:
        if api:
            body = response.json()
            assert set(body) == {"detail", "code"} and body["code"] == "invalid"
            assert body["detail"]
        else:
            assert 'role="alert"' in response.content.decode() or "errorlist" in (
                response.content.decode()
            )


@settings(DB_EXAMPLES, max_examples=25)
@given(query=QUERIES)
@pytest.mark.slow
def test_api_search_answers_any_query_with_results_or_a_clear_400(
    api: Client, case: Case, searchable: Document, query: str
) -> None:
    response = api.get(f"/api/v1/cases/{case.pk}/search", {"q": query})

    _assert_result_or_clear_400(response, api=True)


@settings(DB_EXAMPLES, max_examples=25)
@given(query=QUERIES)
@pytest.mark.slow
def test_browser_search_answers_any_query_with_results_or_a_clear_400(
    web: Client, case: Case, searchable: Document, query: str
) -> None:
    response = web.get(f"/cases/{case.pk}/search/", {"q": query})

    _assert_result_or_clear_400(response, api=False)


@pytest.mark.parametrize("query", HOSTILE)
@pytest.mark.parametrize("edge", ["api", "web"])
def test_hostile_queries_get_results_or_a_clear_400_on_both_edges(
    lawyer: User, case: Case, searchable: Document, query: str, edge: str
) -> None:
    if edge == "api":
        response = token_client(lawyer).get(f"/api/v1/cases/{case.pk}/search", {"q": query})
    else:
        response = session_client(lawyer).get(f"/cases/{case.pk}/search/", {"q": query})

    _assert_result_or_clear_400(response, api=edge == "api")


def test_fifty_dashes_is_a_search_that_finds_nothing_not_a_server_error(
    lawyer: User, case: Case, searchable: Document
) -> None:
    response = token_client(lawyer).get(f"/api/v1/cases/{case.pk}/search", {"q": "-" * 50})

    assert response.status_code == 200
    assert response.json()["items"] == []


@pytest.mark.parametrize(
    ("length", "status"),
    [(MAX_QUERY_LENGTH - 1, 200), (MAX_QUERY_LENGTH, 200), (MAX_QUERY_LENGTH + 1, 400)],
    ids=["below", "at", "above"],
)
def test_query_length_limit(
    lawyer: User, case: Case, searchable: Document, length: int, status: int
) -> None:
    query = ("ledger " * MAX_QUERY_LENGTH)[:length]

    response = token_client(lawyer).get(f"/api/v1/cases/{case.pk}/search", {"q": query})

    assert response.status_code == status


# --- Cleaning, on its own -------------------------------------------------------------------


@given(query=st.text(max_size=MAX_QUERY_LENGTH))
# Found by the property: an even run of "-" at an end left a space there, or only spaces.
@example(query="0--")
@example(query="--")
@example(query="- -x")
def test_cleaning_is_idempotent_and_leaves_no_run_of_negations(query: str) -> None:
    try:
        cleaned = search_query_clean(query)
    except DomainError:
        return

    assert search_query_clean(cleaned) == cleaned
    assert "\x00" not in cleaned
    assert "--" not in cleaned and "- -" not in cleaned


@given(words=st.lists(st.from_regex(r"[a-z]{1,12}(-[a-z]{1,12})?", fullmatch=True), min_size=1))
@pytest.mark.slow
def test_cleaning_leaves_plain_words_and_hyphenated_words_alone(words: list[str]) -> None:
    query = " ".join(words)[:MAX_QUERY_LENGTH].strip(" -")
    if not query:
        return

    assert search_query_clean(query) == " ".join(query.split())
