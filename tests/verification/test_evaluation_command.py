"""`manage.py verify_eval`: a set folder ingested, stamped, frozen and verified for real, on a
temporary database of its own, leaving the product's database and blob store as they were."""

import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from lexweb_dev import evaluation
from tests.factories import CaseFactory, UserFactory
from tests.harness.serial import serial
from tests.verification.test_evaluation import SCORER, write_tiny_set

# It starts the command as a process, and a private embedded PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.product]


@pytest.fixture(autouse=True)
def _one_evaluation_at_a_time() -> Iterator[None]:
    """These tests check that the command leaves no temporary database or folder on the
    server and machine the xdist workers share; tests/verification/test_heldout.py runs the
    command too. Not at the same time as each other."""
    with serial("verify-eval"):
        yield


def _row_counts() -> dict[str, int]:
    """Every table of the (test) product database and its number of rows."""
    counts = {}
    with connection.cursor() as cursor:
        for table in sorted(connection.introspection.table_names(cursor)):
            # Table names come from the catalogue, never input.
            cursor.execute(f'SELECT count(*) FROM "{table}"')  # noqa: S608
            counts[table] = cursor.fetchone()[0]
    return counts


def _eval_databases() -> set[str]:
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'lexweb\\_eval\\_%'"
        ).fetchall()
    return {row[0] for row in rows}


def _eval_folders() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("lexweb-eval-*")}


def _product_blobs(settings: Any, tmp_path: Path) -> Path:
    root = tmp_path / "product-blobs"
    (root / "ab").mkdir(parents=True)
    (root / "ab" / "abcdef").write_bytes(b"a blob of the product")
    settings.LEXWEB_BLOB_ROOT = root
    return root


def _listing(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*"))


def test_a_set_runs_end_to_end_on_its_own_database_and_the_product_is_untouched(
    tmp_path: Path, settings: Any
) -> None:
    # Something of the product's own, to see it is still there afterwards.
    CaseFactory(created_by=UserFactory(), title="A real matter")
    blobs = _product_blobs(settings, tmp_path)
    set_dir = write_tiny_set(tmp_path / "set", prefix="QZR", start=40, digits=7)
    before = (_row_counts(), _listing(blobs), _eval_databases(), _eval_folders())
    out = tmp_path / "findings.jsonl"
    printed = io.StringIO()

    call_command("verify_eval", str(set_dir), out=str(out), quiet=True, stdout=printed)

    assert (_row_counts(), _listing(blobs), _eval_databases(), _eval_folders()) == before
    report = json.loads(printed.getvalue())
    assert report["mode"] == "real"
    (case,) = report["cases"]
    # Two documents, three pages; the scan was read by OCR and every page carries the Bates
    # label case.json gives it (QZR0000040-42: 7 digits from 40).
    assert (case["documents"], case["pages"], case["ocr_pages"]) == (2, 3, 1)
    assert case["bates_mismatches"] == [] and case["image_only_pages_without_ocr"] == []
    rows = evaluation.read_findings(out)
    draft = (set_dir / "case-tiny" / "drafts" / "brief.md").read_text()
    assert rows and {r["draft"] for r in rows} == {"case-tiny/drafts/brief.md"}
    assert all(0 <= r["start"] < r["end"] <= len(draft) for r in rows)
    assert {r["status"] for r in rows} <= evaluation.STATUSES
    # A citation of a page the production does not have is flagged, whatever else happens.
    out_of_range = report["result"]["recall_by_error"]["bates_out_of_range"]
    assert out_of_range == {"caught": 1, "total": 1, "recall": 1.0}
    # The printed figures are the README's scoring of the file written.
    labels = evaluation.all_labels(evaluation.load_set(set_dir))
    rescored = evaluation.score(labels, rows)
    for key in ("recall", "precision", "false_flag_rate", "flags", "needs_review"):
        assert report["result"][key] == rescored[key], key  # type: ignore[literal-required]
    if SCORER.is_file():
        theirs = json.loads(
            subprocess.run(
                [sys.executable, str(SCORER), str(set_dir), str(out), "--json"],
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
            ).stdout
        )
        assert (theirs["recall"], theirs["precision"], theirs["false_flag_rate"]) == (
            rescored["recall"],
            rescored["precision"],
            rescored["false_flag_rate"],
        )


def test_a_folder_not_in_the_format_is_refused_before_anything_is_created(
    tmp_path: Path,
) -> None:
    before = (_row_counts(), _eval_databases(), _eval_folders())

    with pytest.raises(CommandError, match=r"Not an evaluation set: .* holds no case folder"):
        call_command("verify_eval", str(tmp_path), out=str(tmp_path / "f.jsonl"))

    assert (_row_counts(), _eval_databases(), _eval_folders()) == before
    assert not (tmp_path / "f.jsonl").exists()


def test_the_inside_step_refuses_any_database_but_its_own_temporary_one(tmp_path: Path) -> None:
    set_dir = write_tiny_set(tmp_path / "set")
    before = _row_counts()

    for name in ("lexweb_eval_0123456789abcdef", connection.settings_dict["NAME"]):
        with pytest.raises(CommandError, match="verify_eval's own step"):
            call_command(
                "verify_eval",
                str(set_dir),
                out=str(tmp_path / "f.jsonl"),
                inside_temporary_database=name,
            )

    assert _row_counts() == before


def test_without_a_reachable_server_it_runs_on_a_private_embedded_one(tmp_path: Path) -> None:
    # DATABASE_URL unset and no embedded PostgreSQL running in this var/: the command starts a
    # private one in its temporary folder, and stops it.
    set_dir = write_tiny_set(tmp_path / "set")
    out = tmp_path / "findings.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["LEXWEB_VAR_DIR"] = str(tmp_path / "var")
    before = (_eval_databases(), _eval_folders())

    done = subprocess.run(
        [sys.executable, "manage.py", "verify_eval", str(set_dir), "--out", str(out), "--quiet"],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["cases"][0]["pages"] == 3
    assert evaluation.read_findings(out)
    assert not (tmp_path / "var" / "pgdata").exists()  # the product's embedded data: untouched
    assert (_eval_databases(), _eval_folders()) == before


def test_pages_stamped_otherwise_than_case_json_says_are_reported(tmp_path: Path) -> None:
    from apps.verification.index import PageRecord
    from lexweb_dev.management.commands import verify_eval

    (case,) = evaluation.load_set(write_tiny_set(tmp_path, prefix="QZR", start=40, digits=7))
    pages = evaluation.fast_pages(case)
    names = {1: "01-lease.pdf", 2: "02-scan.pdf"}
    assert verify_eval._bates_mismatches(case, pages, names) == []

    shifted = [
        PageRecord(**{**p.__dict__, "bates": (f"QZR{int(p.bates[0][3:]) + 1:07d}",)})
        for p in pages[:2]
    ]

    assert verify_eval._bates_mismatches(case, shifted, names) == [
        "01-lease.pdf p.1: ['QZR0000041'], not QZR0000040",
        "01-lease.pdf p.2: ['QZR0000042'], not QZR0000041",
        "02-scan.pdf p.1: not frozen (case.json: QZR0000042)",
    ]
