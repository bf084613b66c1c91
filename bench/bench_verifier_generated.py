"""The verifier on cases nobody tuned it on (issue 20 req 3, issue 28 req 10): a set written by
the generator (bench/eval_cases, seed 20, 24 cases, scans included) into a temporary folder,
and the development set (../shared/eval/verifier/, when this checkout has it), each through the
fast evaluation (bench.verifier_eval.run_fast: page_text.jsonl, no ingest, no database).

Prints one JSON object: for each set its recall overall, per error kind and per claim kind,
precision, the false-flag rate, the needs_review count and the issue's targets (recall >= 0.98
in every error kind, precision >= 0.95, false flags <= 3%), with the seconds each step took.
Where the shared folder is absent, its entry says so and only the generated set is measured.

Run: .venv/bin/python -m bench.bench_verifier_generated [--seed N] [--cases N] [--no-scans]
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEV_SET = REPO.parent / "shared" / "eval" / "verifier"


def _figures(report: dict) -> dict:
    result = report["result"]
    keep = (
        "labels",
        "unsupported_labels",
        "flags",
        "needs_review",
        "recall",
        "precision",
        "false_flag_rate",
        "recall_by_error",
        "recall_by_kind",
        "by_form",
        "targets",
        "targets_met",
    )
    out = {key: result[key] for key in keep}
    out["seconds"] = report["seconds"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--cases", type=int, default=24)
    parser.add_argument("--no-scans", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from bench import eval_cases, verifier_eval

    out: dict[str, object] = {"bench": "verifier_generated"}
    with tempfile.TemporaryDirectory(prefix="verifier-generated-") as scratch:
        root = Path(scratch)
        started = time.perf_counter()
        totals = eval_cases.generate(
            root / "set", seed=args.seed, cases=args.cases, scans=not args.no_scans
        )
        out["generated"] = {
            "seed": args.seed,
            **totals,
            "generate_seconds": round(time.perf_counter() - started, 2),
            **_figures(verifier_eval.run_fast(root / "set", root / "gen.jsonl")),
        }
        if (DEV_SET / "README.md").is_file():
            out["dev_set"] = _figures(verifier_eval.run_fast(DEV_SET, root / "dev.jsonl"))
        else:
            out["dev_set"] = {"skipped": f"{DEV_SET} is absent in this checkout"}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
