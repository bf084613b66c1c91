"""A running stage's streamed text, registered as it streams (issue 20 req 5).

Every model stage (gate, drafter, reasoner, adversary, revision, summarizer, extractor) streams
through pipeline.execute's TokenBatcher, which holds one StreamRegistration: its artifact is
opened when the stage starts (while the backend reads the prompt), each stored batch of tokens
carries the hashes it adds (registered in the same transaction as the batch's run event,
apps.drafting.services.token_events), and when the stage stops, whatever the reason
(success, failure, cancel), the artifact is closed on the whole streamed text
(apps.evidence.services.streaming). The stage drafts from its run's frozen packet: the words of
that packet's evidence are left out of what it posts, from the first batch (issue 20 req 8).
"""

import asyncio

from asgiref.sync import sync_to_async
from django.db import connections

from apps.evidence.services import streaming

Growth = tuple[streaming.StreamPostings, list[int]]


class StreamRegistration:
    def __init__(
        self,
        *,
        run_id: int,
        stage_id: int,
        attempt: int,
        name: str,
        case_id: int,
        packet_id: int | None = None,
    ):
        self.run_id, self.stage_id, self.attempt = run_id, stage_id, attempt
        self.name, self.case_id, self.packet_id = name, case_id, packet_id
        self._opening: asyncio.Future[tuple[int, frozenset[int]]] | None = None
        self.postings: streaming.StreamPostings | None = None

    def start(self) -> None:
        """Open the artifact in the background (the first batch waits for it)."""
        self._opening = asyncio.ensure_future(
            sync_to_async(_open, thread_sensitive=False)(
                stage_id=self.stage_id,
                attempt=self.attempt,
                case_id=self.case_id,
                title=f"Run {self.run_id}, {self.name} (streaming)",
                source=f"run {self.run_id} stage {self.name} attempt {self.attempt}, as streamed",
                packet_id=self.packet_id,
            )
        )

    async def grow(self, text: str) -> Growth:
        """The batch's growth of the artifact, to be stored with the batch."""
        if self.postings is None:
            if self._opening is None:
                self.start()
            opening = self._opening
            if opening is None:  # pragma: no cover  (start() set it)
                raise RuntimeError("The streaming artifact was not opened.")
            artifact_id, evidence = await asyncio.shield(opening)
            self.postings = streaming.StreamPostings(artifact_id, evidence)
        return self.postings, self.postings.grow(text)

    async def close(self) -> None:
        """The stage stopped: the artifact is closed on all that was streamed (or removed when
        nothing was)."""
        if self._opening is None:
            return
        artifact_id, _evidence = await asyncio.shield(self._opening)
        text = self.postings.text if self.postings is not None else ""
        await sync_to_async(streaming.stream_artifact_close)(artifact_id=artifact_id, text=text)


def _open(**arguments: object) -> tuple[int, frozenset[int]]:
    """`stream_artifact_open` and the packet's evidence (`stream_evidence`) on a thread of its
    own, never Django's shared sync thread (a stage's slow call there must not hold back
    another stage's first batch), its connection closed after (a pool thread would otherwise
    keep one open for good)."""
    try:
        artifact_id = streaming.stream_artifact_open(**arguments)  # type: ignore[arg-type]
        packet_id = arguments.get("packet_id")
        evidence = streaming.stream_evidence(
            packet_id=packet_id if isinstance(packet_id, int) else None
        )
        return artifact_id, evidence
    finally:
        connections.close_all()
