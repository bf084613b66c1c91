"""Generated text is registered as it streams (issue 20 req 5): the text a stage has streamed so
far, uploaded as client evidence while the stage runs, after a cancel or after a failure, is
flagged; every model stage's output (gate, adversary, ...) is registered; a stage of hundreds of
batches is one artifact with a bounded number of postings. Real PostgreSQL, a real worker, fake
llama-servers over HTTP (tests/drafting/run_fixtures.py)."""

import hashlib
import json
import random
from types import SimpleNamespace
from typing import cast

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents.models import Blob, Document, Page
from apps.drafting.models import Run, RunEvent, Stage
from apps.drafting.pipeline.execute import TokenBatcher, Work
from apps.drafting.services import runs, token_events
from apps.evidence import fingerprint as fp
from apps.evidence.models import ArtifactFingerprint, GeneratedArtifact, Packet
from apps.evidence.services import checks, streaming
from tests.drafting import run_fixtures as rf

pytestmark = pytest.mark.django_db(transaction=True)

_VOCABULARY = (  # noqa: SIM905  (a sentence is easier to read than 50 quoted words)
    "lease tenant landlord notice breach premises rent arrears clause term renewal deposit "
    "inspection repair covenant default cure period written demand payment schedule invoice "
    "monthly quarterly account ledger balance interest penalty waiver estoppel assignment "
    "sublease consent unreasonably withheld delay holdover surrender keys keys condition "
    "damage wear tear fixtures alterations insurance indemnity liability negligence claim"
).split()


def prose(seed: int, words: int) -> str:
    """Sentences of legal-sounding words, their own for each seed."""
    rng = random.Random(seed)  # noqa: S311  (repeatable text, not a secret)
    sentences: list[str] = []
    count = 0
    while count < words:
        length = rng.randint(8, 16)
        sentences.append(" ".join(rng.choices(_VOCABULARY, k=length)).capitalize() + ".")
        count += length
    return " ".join(sentences)


def streamed_so_far(run: Run, stage: Stage) -> str:
    events = RunEvent.objects.filter(
        run=run, kind="stage.tokens", payload__stage_id=stage.pk
    ).order_by("seq")
    return "".join(str(e.payload["text"]) for e in events)


def upload(case: Case, user: User, text: str) -> Document:
    """`text` as a client's upload, read and checked as intake does."""
    data = text.encode()
    blob = Blob.objects.create(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    document = Document.objects.create(
        case=case, blob=blob, filename="client-notes.pdf", kind="pdf",
        content_type="application/pdf", origin="client", status="processing", page_count=1,
        pages_done=1, uploaded_by=user,
    )  # fmt: skip
    Page.objects.create(document=document, number=1, text=text, source="text_layer")
    checks.document_check_bytes(document)
    checks.document_check_text(document)
    document.refresh_from_db()
    return document


def streaming_artifacts(run: Run) -> list[GeneratedArtifact]:
    return list(GeneratedArtifact.objects.filter(title__startswith=f"Run {run.pk}, "))


@pytest.mark.slow
def test_text_streamed_so_far_is_flagged_while_the_stage_runs_and_after_a_cancel(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    long_reply = prose(1, 600)
    with rf.site_running({**rf.REPLIES, "drafter": long_reply}) as site:
        drafter_fake = site.fakes["drafter"]
        drafter_fake.settings.tokens_per_second = 60
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            rf.eventually(lambda: Stage.objects.filter(run=run, name="drafter").exists())
            drafter = Stage.objects.get(run=run, name="drafter")
            rf.eventually(lambda: len(streamed_so_far(run, drafter).split()) >= 60)
            so_far = streamed_so_far(run, drafter)
            # Uploaded while the model is still writing: flagged.
            while_running = upload(case, lawyer, so_far)
            assert Stage.objects.get(pk=drafter.pk).status == Stage.Status.RUNNING
            runs.run_cancel(user=lawyer, case_id=case.pk, run_id=run.pk)
            drafter_fake.wait_until_sync(lambda: drafter_fake.cancelled == 1, timeout=10)
            rf.eventually(
                lambda: (
                    GeneratedArtifact.objects.filter(title=f"Run {run.pk}, drafter (streaming)")
                    .exclude(text_key="")
                    .exists()
                ),
                10,
            )

    assert while_running.provenance == Document.Provenance.FLAGGED
    match = while_running.artifact_matches.get()
    assert match.artifact.title == f"Run {run.pk}, drafter (streaming)"
    # After the cancel: all that was streamed is registered, exactly (closed on the whole text).
    after_cancel = streamed_so_far(run, drafter)
    assert len(after_cancel) < len(long_reply)
    artifact = GeneratedArtifact.objects.get(title=f"Run {run.pk}, drafter (streaming)")
    hashes = fp.fingerprint_with_quotes(after_cancel)[0]
    assert (
        set(ArtifactFingerprint.objects.filter(artifact=artifact).values_list("hash", flat=True))
        == hashes
    )
    assert artifact.fingerprint_count == len(hashes) and artifact.case == case
    assert upload(case, lawyer, after_cancel).provenance == Document.Provenance.FLAGGED
    # A passage from the end of what was streamed, alone, is a piece of it.
    tail = " ".join(after_cancel.split()[-40:])
    assert upload(case, lawyer, tail).provenance == Document.Provenance.FLAGGED


@pytest.mark.slow
def test_text_streamed_before_a_failure_is_flagged(lawyer: User, case: Case) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running({**rf.REPLIES, "drafter": prose(2, 400)}) as site:
        site.fakes["drafter"].settings.disconnect_after_tokens = 150
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    assert run.status == Run.Status.FAILED
    drafter = run.stages.get(name="drafter")
    streamed = streamed_so_far(run, drafter)
    assert len(streamed.split()) > 30
    # Both attempts streamed the same words before the stream was cut: one text, the second
    # attempt's artifact a copy of the first's (no second set of postings).
    artifacts = [a for a in streaming_artifacts(run) if a.title.endswith("drafter (streaming)")]
    assert len(artifacts) == 2
    assert sum(a.postings_of_id is None for a in artifacts) == 1
    attempt_text = streamed[: len(streamed) // 2]
    assert upload(case, lawyer, attempt_text).provenance == Document.Provenance.FLAGGED


@pytest.mark.slow
def test_every_model_stage_output_is_registered_and_the_version_is_a_copy_of_it(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    adversary = json.dumps(
        {"findings": [{"kind": "unsupported_assertion", "quote": "The rent was paid.",
                       "comment": prose(3, 80)}]}
    )  # fmt: skip
    gate = json.dumps({"answer": "yes", "reasons": [prose(4, 40)], "missing_evidence": []})
    draft = prose(5, 120)
    replies = {**rf.REPLIES, "gate": gate, "adversary": adversary, "drafter": draft,
               "reasoner": draft}  # fmt: skip
    with rf.site_running(replies):
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    titles = {a.title: a for a in streaming_artifacts(run)}
    for name in ("gate", "drafter", "reasoner", "adversary", "revision"):
        assert f"Run {run.pk}, {name} (streaming)" in titles, sorted(titles)
    for name, text in (("gate", gate), ("adversary", adversary)):
        artifact = titles[f"Run {run.pk}, {name} (streaming)"]
        holder = artifact.postings_of or artifact
        postings = set(
            ArtifactFingerprint.objects.filter(artifact=holder).values_list("hash", flat=True)
        )
        assert postings == fp.fingerprint(text)
        assert upload(case, lawyer, text).provenance == Document.Provenance.FLAGGED
    # The drafter's stored version has the streamed text: a copy of the streaming artifact.
    drafter = run.stages.get(name="drafter")
    assert drafter.version is not None
    version_artifact = GeneratedArtifact.objects.get(
        sha256=hashlib.sha256(drafter.version.text.encode()).hexdigest()
    )
    assert version_artifact.postings_of is not None
    assert version_artifact.postings_of.title.endswith("(streaming)")


def test_a_stream_cancelled_at_every_point_posts_exactly_its_complete_words() -> None:
    text = prose(6, 150) + ' He wrote "the deposit was returned in full" and left.'
    rng = random.Random(7)  # noqa: S311
    for cut in range(0, len(text), 7):
        postings = streaming.StreamPostings(artifact_id=1)
        position, posted = 0, set()
        while position < cut:
            step = min(rng.randint(1, 30), cut - position)
            posted |= set(postings.grow(text[position : position + step]))
            position += step
        assert posted == postings.posted
        # Everything up to the last complete word is posted (the word being written is not).
        done = text[:cut]
        complete = (
            done[: len(done) - len(done.split()[-1])] if done and not done[-1].isspace() else done
        )
        # (a text of fewer words than a shingle waits for more, or for the close)
        if len(fp.normalise(complete)) >= fp.SHINGLE_WORDS:
            assert fp.fingerprint(complete) <= posted, cut
        else:
            assert not posted
        # Nothing that is not in the text so far (a word is only hashed once complete).
        assert posted <= fp.fingerprint(complete) | _boundary_slack(complete), cut


def _boundary_slack(text: str) -> set[int]:
    """Hashes of the short regions the first batches make (a region with at most WINDOW
    shingles keeps them all): every shingle hash of the text."""
    return set(fp.shingle_hashes(fp.normalise(text)))


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.slow
async def test_500_flushes_of_one_stage_make_one_artifact_and_bounded_postings(
    lawyer: User, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(token_events, "LINGER_SECONDS", 0.05)

    def make_run() -> Run:
        packet = Packet.objects.create(
            case=case, title="Tokens", status=Packet.Status.FROZEN, content_hash="0" * 64,
            created_by=lawyer,
        )  # fmt: skip
        return Run.objects.create(
            case=case, kind=Run.Kind.SUMMARY, packet=packet, instructions="T", created_by=lawyer
        )

    run = await sync_to_async(make_run)()
    work = cast(
        Work,
        SimpleNamespace(
            run_id=run.pk,
            stage_id=4242,
            attempt=1,
            name="summarizer",
            case_id=case.pk,
            packet_id=run.packet_id,
        ),
    )
    text = prose(8, 2500)
    size = len(text) // 510
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    batcher = TokenBatcher(work)
    batcher.registration.start()
    for piece in pieces:
        batcher.add(piece)
        await batcher.flush()
    await batcher.registration.close()

    def check() -> None:
        assert RunEvent.objects.filter(run=run, kind="stage.tokens").count() == len(pieces) >= 500
        (artifact,) = GeneratedArtifact.objects.filter(
            title=f"Run {run.pk}, summarizer (streaming)"
        )
        rows = ArtifactFingerprint.objects.filter(artifact=artifact).count()
        assert rows == artifact.fingerprint_count == len(fp.fingerprint(text))
        assert artifact.size == len(text.encode())

    await sync_to_async(check)()
