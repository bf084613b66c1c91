"""Issue 11's measurement: the verifier on a set folder in the format of ../shared/eval/verifier/
(its README describes it), scored by that README's rules (apps/verification/evaluation.py).

--fast: no database and no ingest. The pages are built from each case's page_text.jsonl and the
case.json Bates map (what a perfect ingest and OCR would freeze; image-only pages as OCR text),
then every draft goes through the claim extractor (apps.verification.claims.extract_claims,
with the case's Bates prefix) and the checks (apps.verification.checks.verify_text over
apps.verification.index.PacketIndex). For quick iteration on the extractor and the checks.

Without --fast: the real run, `manage.py verify_eval SET --out OUT` (real ingest and OCR,
stamping as case.json says, a frozen packet, on a temporary database of its own).

Both write the findings as JSON lines to --out and print one JSON object: recall per error
kind and per claim kind, overall recall, precision, the false-flag rate, the needs_review
count, and the issue's targets (recall >= 0.98 in every error kind, precision >= 0.95, false
flags <= 3%) with whether each is met; --details adds every missed label and wrong flag.
The findings can be checked with the README's scorer: `python SET/score.py SET OUT --json`.

Run: .venv/bin/python -m bench.verifier_eval --fast [SET] [--out findings.jsonl] [--details]
"""

import argparse
import importlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SET = REPO.parent / "shared" / "eval" / "verifier"

# What --fast needs from the extractor and the checks (issue 11's contracts).
NEEDED = (
    ("apps.verification.claims", "extract_claims", "the claim extractor"),
    ("apps.verification.index", "PacketIndex", "the packet index"),
    ("apps.verification.index", "PageRecord", "the page records"),
    ("apps.verification.checks", "verify_text", "the checks"),
)


class MissingPart(RuntimeError):
    """A part of the verifier is not there (or the real run refused); the message says which."""


def _load_parts() -> dict[str, Any]:
    """The verifier's functions; MissingPart naming the module and what is missing."""
    parts: dict[str, Any] = {}
    for module_name, attr, what in NEEDED:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise MissingPart(
                f"{module_name} ({what}) cannot be imported: {exc}. It is not written yet, or "
                "it fails to import; --fast needs it."
            ) from None
        if not hasattr(module, attr):
            raise MissingPart(f"{module_name} has no {attr} ({what}) yet; --fast needs it.")
        parts[attr] = getattr(module, attr)
    return parts


def run_fast(set_dir: Path, out: Path) -> dict[str, Any]:
    from apps.verification import evaluation

    parts = _load_parts()
    cases = evaluation.load_set(set_dir)
    started = time.perf_counter()
    rows: list[evaluation.FindingRow] = []
    for case in cases:
        rows += evaluation.verify_case(
            case,
            evaluation.fast_pages(case),
            extract=parts["extract_claims"],
            verify=parts["verify_text"],
            build_index=parts["PacketIndex"].build,
        )
    seconds = time.perf_counter() - started
    evaluation.write_findings(rows, out)
    result = evaluation.score(evaluation.all_labels(cases), rows)
    return {"mode": "fast", "set": str(set_dir), "seconds": round(seconds, 3), "result": result}


def run_real(set_dir: Path, out: Path) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
    import django

    django.setup()
    from django.core.management import CommandError, call_command

    from apps.verification import evaluation

    started = time.perf_counter()
    printed = io.StringIO()
    try:
        call_command("verify_eval", str(set_dir), out=str(out), quiet=True, stdout=printed)
    except CommandError as exc:
        raise MissingPart(f"verify_eval: {exc}") from None
    seconds = time.perf_counter() - started
    cases = evaluation.load_set(set_dir)
    result = evaluation.score(evaluation.all_labels(cases), evaluation.read_findings(out))
    return {
        "mode": "real",
        "set": str(set_dir),
        "seconds": round(seconds, 1),  # with creating, migrating and dropping the database
        "cases": json.loads(printed.getvalue())["cases"],
        "result": result,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", nargs="?", type=Path, default=DEFAULT_SET)
    parser.add_argument("--fast", action="store_true", help="page_text.jsonl, no ingest, no DB")
    parser.add_argument(
        "--out", type=Path, default=Path(tempfile.gettempdir()) / "verifier-findings.jsonl"
    )
    parser.add_argument("--details", action="store_true", help="list misses and wrong flags")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from apps.verification import evaluation

    try:
        report = (run_fast if args.fast else run_real)(args.set, args.out)
    except MissingPart as exc:
        print(json.dumps({"error": str(exc)}), file=sys.stderr)
        return 2
    except evaluation.EvalSetError as exc:
        print(json.dumps({"error": f"not an eval set: {exc}"}), file=sys.stderr)
        return 2
    report["findings_file"] = str(args.out)
    report["result"] = evaluation.summary(report["result"], details=args.details)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
