"""A backend's failure is told by the deployment and role it failed for, never by the backend's
address (issue 29, requirement 8): the stage's and the run's errors, every run event, the run
API (its stages and events) and the run page say "the summarizer on board ... (deployment ...)";
the call record keeps the backend's own message, address and all, for admins.

Real runs on a real worker against fake llama-servers over HTTP (tests/drafting/run_fixtures.py),
each made to fail one way: nothing listening on the port, a stream dropped mid-reply, a 500, a
prompt over the server's context, a stream that stops sending tokens."""

import json
from collections.abc import Callable

import pytest
from django.test import Client

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster import labels
from apps.cluster.backends.base import Timeouts
from apps.cluster.models import Backend, CallRecord
from apps.drafting.models import Run, RunEvent, Stage
from apps.drafting.pipeline import execute
from tests.cluster.dispatch_fixtures import backend_make, closed_port_url
from tests.drafting import run_fixtures as rf

SUMMARY = "The record is a lease that began on 3 March 2024 [“record.pdf” p. 1]."


def _refused(site: rf.Site, monkeypatch: pytest.MonkeyPatch) -> None:
    Backend.objects.filter(pk=site.deployments["summarizer"].backend_id).update(
        base_url=closed_port_url()
    )


def _dropped(site: rf.Site, monkeypatch: pytest.MonkeyPatch) -> None:
    site.fakes["summarizer"].settings.disconnect_after_tokens = 3


def _server_error(site: rf.Site, monkeypatch: pytest.MonkeyPatch) -> None:
    site.fakes["summarizer"].settings.status_error = 500


def _overflow(site: rf.Site, monkeypatch: pytest.MonkeyPatch) -> None:
    # The site says 4,096 tokens a slot (nothing checked the server): the guard lets the
    # prompt through and the server refuses it.
    site.fakes["summarizer"].settings.n_ctx_per_slot = 40


def _timeout(site: rf.Site, monkeypatch: pytest.MonkeyPatch) -> None:
    site.fakes["summarizer"].settings.hang_after_tokens = 2
    monkeypatch.setattr(execute, "STAGE_TIMEOUTS", Timeouts(between_tokens=0.5))


FAULTS: dict[str, tuple[Callable[[rf.Site, pytest.MonkeyPatch], None], str]] = {
    "connection-refused": (_refused, "Cannot connect to the summarizer on board"),
    "dropped-mid-reply": (_dropped, "cut the stream in the middle of an event"),
    "http-500": (_server_error, "answered 500"),
    "context-overflow": (_overflow, "does not fit the context of one slot of the summarizer"),
    "timeout": (_timeout, "stopped sending tokens: nothing for 0.5 s"),
}


def _leaks(text: str, url: str) -> list[str]:
    host_port = url.removeprefix("http://")
    return [leak for leak in (url, host_port, "127.0.0.1") if leak in text]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.slow
def test_a_failed_stage_names_its_deployment_and_role_and_never_the_backend_address(
    fault: str,
    lawyer: User,
    case: Case,
    lawyer_api: Client,
    lawyer_client: Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_fail, said = FAULTS[fault]
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running({"summarizer": SUMMARY}) as site:
        make_fail(site, monkeypatch)
        deployment = site.deployments["summarizer"]
        url = Backend.objects.get(pk=deployment.backend_id).base_url
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
        with rf.ThreadWorker():
            run = rf.finished(run)

    stage = run.stages.get()
    assert run.status == Run.Status.FAILED and stage.status == Stage.Status.FAILED
    label = labels.deployment_label(deployment, "summarizer")
    assert label.startswith("the summarizer on board board-summarizer of gpu-host-1 (deployment ")
    assert said.lower() in stage.error.lower(), stage.error
    shown = {
        "stage.error": stage.error,
        "run.error": run.error,
        "events": json.dumps(list(RunEvent.objects.filter(run=run).values("kind", "payload"))),
        "run API": lawyer_api.get(f"/api/v1/cases/{case.pk}/runs/{run.pk}").content.decode(),
        "events API": lawyer_api.get(
            f"/api/v1/cases/{case.pk}/runs/{run.pk}/events"
        ).content.decode(),
        "run page": lawyer_client.get(f"/cases/{case.pk}/runs/{run.pk}/").content.decode(),
    }
    for where, text in shown.items():
        assert not _leaks(text, url), (where, _leaks(text, url), text[:2000])
    for where in ("stage.error", "run.error", "events"):
        assert label.lower() in shown[where].lower(), (where, shown[where][:2000])
    # The page escapes the label's characters; its deployment's name is there as written.
    assert f"(deployment {deployment})" in shown["run page"]
    assert json.loads(shown["run API"])["stages"][0]["error"] == stage.error
    # The call record keeps what the backend client said, address and all, for admins.
    records = list(CallRecord.objects.filter(stage=stage).values_list("error", flat=True))
    assert records and all(url in error for error in records), records


@pytest.mark.django_db
def test_an_unexpected_error_that_quotes_an_address_is_told_without_it() -> None:
    backend_make(base_url="http://gpu-box.firm.lan:8081", name="gpu-box-llama")
    error = OSError(
        "[Errno 113] Connect call failed ('10.1.2.3', 8081) to gpu-box.firm.lan:8081 "
        "via http://proxy.firm.lan:3128/ and [fd00::7]:8081\nsecond line"
    )

    cause = execute._cause(error)

    assert cause.startswith("OSError: [Errno 113] Connect call failed")
    for leak in ("10.1.2.3", "gpu-box.firm.lan", "proxy.firm.lan", "fd00::7", "second line"):
        assert leak not in cause, (leak, cause)
