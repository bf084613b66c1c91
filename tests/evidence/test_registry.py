"""The generated-artifact registry: registering (idempotent, one statement of fingerprints,
audited) and the indexed lookups by bytes and by text, on real PostgreSQL."""

import hashlib
import random
import re
import threading

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.evidence import fingerprint as fp
from apps.evidence.models import ArtifactFingerprint, GeneratedArtifact
from apps.evidence.selectors import registry as selectors
from apps.evidence.services import registry
from lexweb.errors import DomainError
from tests.evidence.test_fingerprint import draft_text

pytestmark = pytest.mark.django_db


def register(
    text: str, *, case: Case | None = None, user: User | None = None, title: str = "Draft"
) -> GeneratedArtifact:
    return registry.artifact_register(
        data=text.encode("utf-8"),
        text=text,
        kind=GeneratedArtifact.Kind.MODEL_OUTPUT,
        media_type="text/markdown",
        title=title,
        case=case,
        created_by=user,
    )


def test_register_stores_sha256_and_every_distinct_fingerprint_hash(
    case: Case, lawyer: User
) -> None:
    text = draft_text(0)

    artifact = register(text, case=case, user=lawyer, title="Case summary v1")

    assert artifact.sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert artifact.size == len(text.encode())
    stored = set(
        ArtifactFingerprint.objects.filter(artifact=artifact).values_list("hash", flat=True)
    )
    assert stored == fp.fingerprint(text)
    assert artifact.fingerprint_count == len(stored) > 100
    event = AuditEvent.objects.get(action="artifact.registered")
    assert (event.actor, event.case_id, event.target_id) == (lawyer, case.pk, str(artifact.pk))


def test_register_writes_the_fingerprints_in_one_statement(case: Case) -> None:
    with CaptureQueriesContext(connection) as queries:
        register(draft_text(1), case=case)

    inserts = [q["sql"] for q in queries if "evidence_artifactfingerprint" in q["sql"]]
    assert len(inserts) == 1 and inserts[0].startswith("INSERT")


def test_register_is_idempotent_on_the_bytes(case: Case, other_case: Case) -> None:
    first = register(draft_text(0), case=case, title="First")

    again = register(draft_text(0), case=other_case, title="Second")

    assert again.pk == first.pk and again.title == "First"
    assert GeneratedArtifact.objects.count() == 1
    assert ArtifactFingerprint.objects.count() == first.fingerprint_count


@pytest.mark.django_db(transaction=True)
def test_two_registrations_of_the_same_bytes_at_once_make_one_artifact() -> None:
    text = draft_text(2)
    results: list[int] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        try:
            barrier.wait()
            results.append(register(text).pk)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == 2 and results[0] == results[1]
    assert GeneratedArtifact.objects.count() == 1


@pytest.mark.parametrize(
    ("kind", "data", "title", "message"),
    [
        ("essay", b"x", "T", "Unknown artifact kind"),
        ("model_output", b"", "T", "no bytes"),
        ("model_output", b"x", "   ", "title"),
    ],
)
def test_register_refuses_bad_input(kind: str, data: bytes, title: str, message: str) -> None:
    with pytest.raises(DomainError, match=message):
        registry.artifact_register(
            data=data, text="words", kind=kind, media_type="text/plain", title=title, case=None
        )
    assert not GeneratedArtifact.objects.exists()


def test_register_truncates_an_oversized_title_and_source() -> None:
    artifact = registry.artifact_register(
        data=b"x" * 10,
        text="",
        kind="export",
        media_type="application/pdf",
        title="T" * 5000,
        source="s\n" * 5000,
        case=None,
    )
    assert len(artifact.title) == 200 and len(artifact.source) <= 200
    assert artifact.fingerprint_count == 0


def test_artifact_for_bytes_finds_exact_bytes_only() -> None:
    artifact = register(draft_text(0))

    assert selectors.artifact_for_bytes(sha256=artifact.sha256) == artifact
    assert selectors.artifact_for_bytes(sha256=artifact.sha256.upper()) == artifact
    assert selectors.artifact_for_bytes(sha256=hashlib.sha256(b"other").hexdigest()) is None
    assert selectors.artifact_for_bytes(sha256="'; DROP TABLE x; --") is None


def test_text_lookup_finds_the_artifact_with_exact_shares() -> None:
    drafts = [register(draft_text(n), title=f"draft {n}") for n in range(4)]
    upload = "Exhibit 7\n\n" + draft_text(0) + "\n\n" + "unrelated closing words " * 40

    matches = selectors.artifact_matches_for_text(text=upload)

    assert [m.artifact for m in matches] == [drafts[0]]
    expected = fp.containment(fp.fingerprint(draft_text(0)), fp.fingerprint(upload))
    assert matches[0].share == pytest.approx(expected)
    assert matches[0].share > 0.95
    mine = fp.fingerprint(upload)
    common = len(mine & fp.fingerprint(draft_text(0)))
    assert matches[0].document_share == pytest.approx(common / len(mine))


def test_text_lookup_respects_the_threshold_setting(settings: SettingsWrapper) -> None:
    text = draft_text(0)
    register(text)
    words = text.split()
    # 40% of the draft within a longer document (so it is not mostly the draft's words).
    half = " ".join(words[: len(words) * 4 // 10]) + "\n\n" + random_words(99, 1500)

    settings.LEXWEB_ARTIFACT_MATCH_THRESHOLD = 0.9
    assert selectors.artifact_matches_for_text(text=half) == []
    settings.LEXWEB_ARTIFACT_MATCH_THRESHOLD = 0.2
    assert len(selectors.artifact_matches_for_text(text=half)) == 1


def test_text_lookup_of_nothing_or_unrelated_text_finds_nothing() -> None:
    register(draft_text(0))

    assert selectors.artifact_matches_for_text(text="") == []
    assert selectors.artifact_matches_for_text(text="   \n\t ") == []
    assert selectors.artifact_matches_for_text(text="The quick brown fox " * 200) == []


def random_words(seed: int, count: int) -> str:
    """Words of the drafts, in an order of its own for each seed (text no other seed shares)."""
    vocabulary = sorted({w for n in range(4) for w in draft_text(n).split()})
    rng = random.Random(seed)  # noqa: S311  (repeatable text, not a secret)
    return " ".join(rng.choices(vocabulary, k=count))


@pytest.mark.slow
def test_a_caption_shared_by_hundreds_of_artifacts_is_a_stop_shingle_and_shares_stay_exact() -> (
    None
):
    caption = random_words(0, 60)
    texts = [f"{caption}\n\n{random_words(n, 300)}" for n in range(1, selectors.STOP_POSTINGS + 12)]
    for n, text in enumerate(texts):
        register(text, title=f"draft {n}")
    target = GeneratedArtifact.objects.get(title="draft 7")

    matches = selectors.artifact_matches_for_text(text=texts[7] + "\n\nExhibit A, page 2")
    only_caption = selectors.artifact_matches_for_text(text=caption, threshold=0.01)

    assert [m.artifact for m in matches] == [target]
    # The caption's hashes were not used to nominate, but they are counted: the share is exact.
    assert matches[0].share == 1.0
    assert only_caption == []
    brute = [
        a for a in GeneratedArtifact.objects.all()
        if fp.containment(fp.fingerprint(texts[int(a.title.split()[1])]), fp.fingerprint(caption))
        >= 0.01
    ]  # fmt: skip
    # What a full comparison finds and the capped lookup does not: artifacts that share only
    # the caption (boilerplate), never the text of a draft.
    assert len(brute) == len(texts)


def test_the_lookup_leaves_the_callers_planner_settings_as_they_were() -> None:
    register(draft_text(0))
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('jit')")
        jit = cursor.fetchone()[0]
    with transaction.atomic(), connection.cursor() as cursor:
        selectors.artifact_matches_for_text(text=draft_text(0))
        cursor.execute("SELECT current_setting('enable_bitmapscan'), current_setting('jit')")
        assert cursor.fetchone() == ("on", jit)


def test_an_artifact_of_a_line_or_two_is_matched_by_bytes_only() -> None:
    line = "The motion is granted in part and denied in part for the reasons stated."
    artifact = register(line)

    assert 0 < artifact.fingerprint_count < selectors.MIN_FINGERPRINTS
    assert selectors.artifact_matches_for_text(text=line * 3) == []
    assert selectors.artifact_for_bytes(sha256=artifact.sha256) == artifact


def test_limit_returns_the_highest_shares_first() -> None:
    full = draft_text(0)
    words = full.split()
    register(full, title="whole")
    register(" ".join(words[: len(words) * 3 // 4]) + " ending", title="three quarters")

    found = selectors.artifact_matches_for_text(text=full, limit=1)
    both = selectors.artifact_matches_for_text(text=" ".join(words[: len(words) * 3 // 4]))

    assert [m.artifact.title for m in found] in (["whole"], ["three quarters"])
    assert found[0].share == 1.0
    assert [m.artifact.title for m in both] == ["three quarters", "whole"]
    assert both[0].share >= both[1].share
    assert selectors.artifact_matches_for_text(text=full, limit=0) == []


def test_an_oversized_hostile_upload_text_is_looked_up_without_error() -> None:
    register(draft_text(0))
    hostile = ("\x00\ufeff\u202e' OR 1=1; -- " + "ﬁ" * 50 + "\n") * 2_000 + draft_text(0)

    matches = selectors.artifact_matches_for_text(text=hostile.replace("\x00", ""))

    assert len(matches) == 1 and matches[0].share > 0.95


def test_hashes_inside_quotation_marks_are_stored_as_quoted() -> None:
    text = draft_text(0)
    hashes, quoted = fp.fingerprint_with_quotes(text)

    artifact = register(text)

    rows = dict(ArtifactFingerprint.objects.filter(artifact=artifact).values_list("hash", "quoted"))
    assert rows == {h: h in quoted for h in hashes}
    assert 0 < len(quoted) < len(hashes)
    assert artifact.unquoted_fingerprint_count == len(hashes) - len(quoted)


def _own_paragraphs(text: str) -> list[str]:
    """The draft's paragraphs that quote nothing (its own words)."""
    return [p for p in text.split("\n\n") if '"' not in p and "\u201c" not in p and p.strip()]


def test_one_page_of_a_draft_uploaded_alone_is_a_piece_of_it(settings: SettingsWrapper) -> None:
    settings.LEXWEB_ARTIFACT_MATCH_THRESHOLD = 0.42
    text = draft_text(0)
    artifact = register(text)
    page = "\n\n".join(_own_paragraphs(text)[-4:])

    matches = selectors.artifact_matches_for_text(text=f"Page 2 of 2\n{page}\nADY0000031")

    assert [m.artifact for m in matches] == [artifact]
    assert matches[0].share < 0.42  # not by the share: by being mostly the artifact's words
    assert matches[0].own_document_share >= selectors.PIECE_DOCUMENT_SHARE


def test_an_exhibit_a_draft_quotes_whole_is_not_a_piece_of_the_draft(
    settings: SettingsWrapper,
) -> None:
    settings.LEXWEB_ARTIFACT_MATCH_THRESHOLD = 0.42
    text = draft_text(0)
    register(text)
    quotes = re.findall(r'"([^"]{40,400})"', text)
    assert len(quotes) >= 3
    exhibit = "EXHIBIT 4\n\nFrom the record:\n\n" + "\n\n".join(quotes) + "\n\nADY0000012"

    # Most of the exhibit is in the draft (as quotations), and all of the quotations.
    assert fp.containment(fp.fingerprint(exhibit), fp.fingerprint(text)) > 0.5
    assert selectors.artifact_matches_for_text(text=exhibit) == []
