"""`manage.py verify_eval` runs every case it can (issue 28 req. 9): a case that cannot run is
reported with its step and reason, the others are stamped, verified and scored, and the
command ends with an error naming the failed ones. The case that runs uses what issue 20
req. 2 and issue 28 req. 8 add: two productions, one with a prefix ending with a space and a
legend, the other ending with a hyphen, cited in the draft with the separator written
otherwise."""

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from lexweb_dev import evaluation
from tests.harness.serial import serial
from tests.verification.test_evaluation import TINY_DOCS, write_tiny_set
from tests.verification.test_evaluation_productions import write_productions_case

# It starts the command as a process, on a temporary database of its own.
pytestmark = [pytest.mark.django_db, pytest.mark.product]


@pytest.fixture(autouse=True)
def _one_evaluation_at_a_time() -> Iterator[None]:
    """As tests/verification/test_evaluation_command.py: one run of the command at a time."""
    with serial("verify-eval"):
        yield


def _set_with_cases_that_cannot_run(root: Path) -> Path:
    """case-a runs (two productions); case-b's prefix is refused by the production service;
    case-d's case.json is not JSON. (A case with a page-suffix production, once refused at
    the stamp, runs now: tests/verification/test_evaluation_productions.py.)"""
    staged = write_productions_case(root.parent / "staging")
    root.mkdir()
    (staged / "case-tiny").rename(root / "case-a")
    lease = TINY_DOCS[:1]  # text layers only: no OCR for the cases that fail anyway
    write_tiny_set(root, case_name="case-b", prefix="QZR--", docs=lease)
    write_tiny_set(root, case_name="case-d", docs=lease)
    (root / "case-d" / "case.json").write_text("{not json")
    return root


def test_the_cases_that_can_run_are_scored_and_the_others_reported_with_their_reason(
    tmp_path: Path,
) -> None:
    set_dir = _set_with_cases_that_cannot_run(tmp_path / "set")
    out = tmp_path / "findings.jsonl"
    printed = io.StringIO()

    with pytest.raises(CommandError) as stopped:
        call_command("verify_eval", str(set_dir), out=str(out), quiet=True, stdout=printed)

    assert "2 of 3 cases could not run" in str(stopped.value)
    report = json.loads(printed.getvalue())
    failed = {f["case"]: f for f in report["failed_cases"]}
    assert set(failed) == {"case-b", "case-d"}
    assert failed["case-b"]["stage"] == "stamp"
    assert "not two" in failed["case-b"]["reason"]
    assert failed["case-d"]["stage"] == "load"
    assert "case-d/case.json" in failed["case-d"]["reason"]
    assert failed["case-b"]["labels"] == 11 and failed["case-b"]["unsupported_labels"] == 3

    # case-a ran: both productions stamped as case.json says, every page's numbers as typed
    # ("QZR 0000040" and "OPP-000001" on the lease's first page), the legend in none of them.
    (ran,) = report["cases"]
    assert (ran["case"], ran["productions"], ran["pages"]) == ("case-a", 2, 3)
    assert ran["bates_mismatches"] == []
    # Scored on case-a's labels alone, its findings alone in the file.
    (case_a,) = (c for c in evaluation.load_set(set_dir, failures=[]) if c.name == "case-a")
    assert report["result"]["labels"] == len(case_a.labels) == 12
    rows = evaluation.read_findings(out)
    assert rows and {r["draft"] for r in rows} == {"case-a/drafts/brief.md"}
    assert report["result"]["recall_by_error"]["bates_out_of_range"]["caught"] == 1
    # The cites written without the stamp's separator resolved to their pages.
    draft = case_a.draft_text("drafts/brief.md")
    opp = draft.index("OPP 000002")
    (cite,) = [r for r in rows if r["start"] <= opp < r["end"] and r["kind"] == "bates"]
    assert "OPP-000002" in cite["bates"]


def test_the_exit_status_says_a_case_failed(tmp_path: Path) -> None:
    set_dir = tmp_path / "set"
    write_tiny_set(set_dir, case_name="case-a", docs=TINY_DOCS[:1])
    write_tiny_set(set_dir, case_name="case-b", prefix="QZR\t", docs=TINY_DOCS[:1])
    out = tmp_path / "findings.jsonl"

    done = subprocess.run(
        [sys.executable, "manage.py", "verify_eval", str(set_dir), "--out", str(out), "--quiet"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 1, done.stderr[-2000:]
    assert "1 of 2 cases could not run" in done.stderr
    assert "case-b (stamp:" in done.stderr and "never a tab" in done.stderr
    report = json.loads(done.stdout)
    assert [c["case"] for c in report["cases"]] == ["case-a"]
    assert report["result"]["labels"] == 11
