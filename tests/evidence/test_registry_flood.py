"""The registry cannot be flooded (issue 20 req 6): the same text registered again in other
bytes adds no postings, so copies never push a text's hashes past the boilerplate cap; and
exports of one version are the same bytes every time."""

import threading

import pytest
from django.db import connections
from django.test import Client

from apps.accounts.models import User
from apps.cases.models import Case
from apps.drafting.models import Draft
from apps.evidence import fingerprint as fp
from apps.evidence.models import ArtifactFingerprint, GeneratedArtifact
from apps.evidence.selectors import registry as selectors
from apps.evidence.services import registry
from tests.drafting.makers import verified
from tests.drafting.test_exports_and_diffs import _export, draft  # noqa: F401 (a fixture)
from tests.evidence.test_fingerprint import draft_text

pytestmark = pytest.mark.django_db


def _register(text: str, data: bytes, case: Case | None = None) -> GeneratedArtifact:
    return registry.artifact_register(
        data=data,
        text=text,
        kind=GeneratedArtifact.Kind.EXPORT,
        media_type="application/pdf",
        title="Motion v2 (PDF export)",
        case=case,
    )


@pytest.mark.slow
def test_copies_of_a_text_in_new_bytes_add_no_postings_and_it_is_still_found(
    case: Case,
) -> None:
    text = draft_text(3)
    first = _register(text, b"export 0", case)
    postings = ArtifactFingerprint.objects.count()
    assert postings == first.fingerprint_count > 100

    # More copies than the boilerplate cap: each export a new file of the same words.
    copies = [
        _register(text, f"export {n}".encode(), case)
        for n in range(1, selectors.STOP_POSTINGS + 50)
    ]

    assert ArtifactFingerprint.objects.count() == postings
    assert {copy.postings_of_id for copy in copies} == {first.pk}
    assert len({copy.pk for copy in copies}) == len(copies)  # each file is on record
    assert all(copy.fingerprint_count == first.fingerprint_count for copy in copies)
    # The text (or a page of it) is still found: its hashes nominate it as before.
    [match] = selectors.artifact_matches_for_text(text=text)
    assert match.artifact == first and match.share == 1.0
    page = " ".join(text.split()[:400])
    assert [m.artifact for m in selectors.artifact_matches_for_text(text=page)] == [first]


def test_whitespace_alone_is_the_same_text_and_other_words_are_not(case: Case) -> None:
    text = draft_text(4)
    first = _register(text, b"a", case)
    spaced = _register("\n\n".join(text.split("\n")) + "\n", b"b", case)
    other = _register(draft_text(5), b"c", case)

    assert spaced.postings_of == first
    assert other.postings_of is None
    assert ArtifactFingerprint.objects.filter(artifact=other).count() == len(
        fp.fingerprint(draft_text(5))
    )


@pytest.mark.slow
def test_the_boilerplate_cap_counts_distinct_texts_not_copies(case: Case) -> None:
    # Before: 250 copies put every hash of the text in 250 artifacts, past STOP_POSTINGS, and
    # the text nominated no candidate at all: every copy was "clear".
    text = draft_text(6)
    for n in range(selectors.STOP_POSTINGS + 50):
        _register(text, f"copy {n}".encode(), case)
    counts = ArtifactFingerprint.objects.values("hash").distinct().count()
    assert counts == len(fp.fingerprint(text))
    assert selectors.artifact_matches_for_text(text=text)


@pytest.mark.django_db(transaction=True)
def test_two_copies_registered_at_once_share_one_set_of_postings() -> None:
    text = draft_text(7)
    results: list[GeneratedArtifact] = []
    barrier = threading.Barrier(2)

    def run(n: int) -> None:
        try:
            barrier.wait()
            results.append(_register(text, f"bytes {n}".encode()))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == 2 and results[0].pk != results[1].pk
    holders = GeneratedArtifact.objects.filter(postings_of__isnull=True)
    assert holders.count() == 1
    assert ArtifactFingerprint.objects.count() == holders.get().fingerprint_count


@pytest.mark.parametrize("fmt", ["pdf", "docx"])
def test_a_version_exported_again_is_the_same_bytes_and_the_same_artifact(
    lawyer_api: Client,
    lawyer: User,
    draft: Draft,  # noqa: F811
    fmt: str,
) -> None:
    verified(draft=draft, user=lawyer, statuses=["supported"])

    first = _export(lawyer_api, draft, fmt)
    again = [_export(lawyer_api, draft, fmt) for _ in range(3)]

    assert first.status_code == 200, first.content
    assert all(response.content == first.content for response in again)
    artifacts = {r["X-Lexweb-Artifact"] for r in [first, *again]}
    assert len(artifacts) == 1
    assert GeneratedArtifact.objects.filter(kind=GeneratedArtifact.Kind.EXPORT).count() == 1
