"""Payloads sent to a run's channel group `run.<id>` (members of the run's case only join it)."""

from typing import Literal, TypedDict

RUN_EVENT = "drafting.run_event"


class RunEventMessage(TypedDict):
    """One stored RunEvent, as it goes to the group and to a websocket."""

    type: Literal["drafting.run_event"]
    run_id: int
    seq: int
    kind: str
    payload: dict[str, object]
    at: str


def run_group(run_id: int) -> str:
    return f"run.{run_id}"
