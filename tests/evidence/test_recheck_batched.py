"""The re-check at packet add and freeze looks every document up at once, with the fingerprint
kept from the document's last check while its text is the same (issue 20, Performance: a
500-item freeze against 100,000 artifacts under 2 s, bench/bench_freeze_recheck.py). The
verdicts are those of one lookup per document. Real PostgreSQL."""

import hashlib

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents.models import Document, Page
from apps.evidence import fingerprint as fp
from apps.evidence.models import ArtifactMatch, DocumentFingerprint, GeneratedArtifact
from apps.evidence.selectors import registry as selectors
from apps.evidence.services import checks, registry
from tests.drafting.test_stream_registry import prose
from tests.evidence.conftest import make_document

pytestmark = pytest.mark.django_db


def _register(text: str, data: bytes, case: Case) -> GeneratedArtifact:
    return registry.artifact_register(
        data=data, text=text, kind="model_output", media_type="text/markdown",
        title=f"Draft {data.decode()}", case=case,
    )  # fmt: skip


def _seen(matches: list[selectors.TextMatch]) -> list[tuple[int, float, float, float]]:
    return [(m.artifact.pk, m.share, m.document_share, m.own_document_share) for m in matches]


@pytest.mark.parametrize("candidates", [selectors.CANDIDATES, 1])
def test_looking_many_texts_up_at_once_finds_what_one_lookup_each_finds(
    case: Case, monkeypatch: pytest.MonkeyPatch, candidates: int
) -> None:
    # A passage in three drafts is a stop-shingle here (cap 2): it nominates nothing, but it
    # counts for the drafts that the rest of a text nominates; each text has its own.
    monkeypatch.setattr(selectors, "STOP_POSTINGS", 2)
    monkeypatch.setattr(selectors, "CANDIDATES", candidates)
    shared = prose(30, 80)
    one = _register(prose(21, 300), b"one", case)
    two = _register(prose(22, 300) + " " + shared, b"two", case)
    for n in (3, 4):
        _register(prose(20 + n * 10, 300) + " " + shared, f"{n}".encode(), case)
    texts = {
        1: prose(21, 300),  # all of draft one
        2: " ".join(prose(22, 300).split()[:150]) + " " + shared,  # a piece of two
        3: shared + " " + prose(50, 100),  # the boilerplate passage alone
        4: prose(51, 300),  # nothing generated
        5: prose(21, 300) + " " + prose(22, 300) + " " + shared,  # two drafts in one
        6: "",  # no words
        7: prose(21, 300),  # the same text as key 1: same hashes, its own verdict
    }
    hashes = {key: fp.fingerprint(text) for key, text in texts.items()}

    batched = selectors.artifact_matches_for_documents(hashes=hashes, limit=20)
    one_by_one = {
        key: selectors.artifact_matches_for_hashes(hashes=key_hashes, limit=20)
        for key, key_hashes in hashes.items()
    }

    assert {key: _seen(m) for key, m in batched.items()} == {
        key: _seen(m) for key, m in one_by_one.items() if m
    }
    assert [m.artifact for m in batched[1]] == [one]
    assert two in [m.artifact for m in batched[2]]
    assert 4 not in batched and 6 not in batched
    if candidates > 1:
        assert {m.artifact for m in batched[5]} >= {one, two}


def test_a_batch_larger_than_one_statement_finds_the_same(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selectors, "BATCH_HASHES", 50)
    drafts = [_register(prose(60 + n, 200), f"b{n}".encode(), case) for n in range(3)]
    hashes = {n: fp.fingerprint(prose(60 + n, 200)) for n in range(3)}
    hashes[9] = fp.fingerprint(prose(70, 200))

    with CaptureQueriesContext(connection) as queries:
        batched = selectors.artifact_matches_for_documents(hashes=hashes, limit=5)

    assert sum("unnest(" in q["sql"] for q in queries.captured_queries) == 4
    assert {key: [m.artifact for m in found] for key, found in batched.items()} == {
        n: [drafts[n]] for n in range(3)
    }


def test_the_re_check_reads_the_registry_in_as_many_queries_for_ten_documents_as_for_two(
    case: Case, lawyer: User
) -> None:
    _register(prose(80, 200), b"c", case)
    few = [make_document(case, lawyer, pages=[prose(81 + n, 150)]) for n in range(2)]
    many = [make_document(case, lawyer, pages=[prose(90 + n, 150)]) for n in range(10)]

    counts = []
    for documents in (few, many):
        with CaptureQueriesContext(connection) as queries:
            flagged = checks.documents_recheck(
                document_ids=[d.pk for d in documents], found=ArtifactMatch.Found.FREEZE
            )
        assert flagged == []
        counts.append(len(queries.captured_queries))

    assert counts[0] == counts[1]


def test_the_re_check_keeps_each_text_s_fingerprint_and_makes_it_again_when_the_text_changes(
    case: Case, lawyer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    same = make_document(case, lawyer, pages=[prose(41, 200)], filename="same.pdf")
    reread = make_document(case, lawyer, pages=[prose(42, 200)], filename="reread.pdf")
    ids = [same.pk, reread.pk]
    assert checks.documents_recheck(document_ids=ids, found="packet_add") == []
    kept = DocumentFingerprint.objects.get(document=same)
    assert kept.text_sha256 == hashlib.sha256(prose(41, 200).encode()).hexdigest()
    assert kept.hashes == sorted(fp.fingerprint(prose(41, 200)))

    made: list[str] = []
    real = fp.fingerprint

    def counted(text: str) -> set[int]:
        made.append(text)
        return real(text)

    monkeypatch.setattr(checks.fp, "fingerprint", counted)
    # Drafts registered since: the kept fingerprint of the unchanged text finds its draft; the
    # re-read text (other words now) is fingerprinted again and found by its new words.
    first = _register(prose(41, 200), b"d41", case)
    Page.objects.filter(document=reread).update(text=prose(43, 200))
    second = _register(prose(43, 200), b"d43", case)

    flagged = checks.documents_recheck(document_ids=ids, found="freeze")

    assert sorted(flagged) == sorted(ids)
    assert made == [prose(43, 200)]
    assert DocumentFingerprint.objects.get(document=reread).hashes == sorted(real(prose(43, 200)))
    assert {(m.document_id, m.artifact_id, m.found) for m in ArtifactMatch.objects.all()} == {
        (same.pk, first.pk, "freeze"),
        (reread.pk, second.pk, "freeze"),
    }
    assert AuditEvent.objects.filter(action="document.flagged").count() == 2
    for document in (same, reread):
        document.refresh_from_db()
        assert document.provenance == Document.Provenance.FLAGGED


def test_the_check_at_intake_keeps_the_fingerprint_for_the_re_checks(
    case: Case, lawyer: User
) -> None:
    document = make_document(case, lawyer, pages=[prose(44, 120), prose(45, 120)])

    checks.document_check_text(document)

    text = prose(44, 120) + "\n\n" + prose(45, 120)
    kept = DocumentFingerprint.objects.get(document=document)
    assert kept.text_sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert kept.hashes == sorted(fp.fingerprint(text))
