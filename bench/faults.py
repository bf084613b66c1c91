"""`make faults`: each fault scenario of tests/faults/product.py, N times (default 20), against
one launched lexweb (a real `make run` in a private var folder with its own embedded
PostgreSQL). Prints one JSON line per scenario:

    {"scenario": "worker_killed_during_ocr", "runs": 20, "recovered": 20, "duplicates": 0,
     "missing": 0, "orphaned_files": 0, "failed_runs": 0, "seconds": 812.4, ...}

`recovered` counts runs that finished by themselves; `duplicates` and `missing` count pages
(documents) or Bates numbers (productions, exports) over all runs; `orphaned_files` is what is
left, after all runs and a sweep, of temporaries of dead processes and stored files no row
names; `failed_runs` counts runs that could not be carried out (listed in `errors`).

    .venv/bin/python -m bench.faults [--runs N] [--only NAME ...] [--keep]
"""

import argparse
import contextlib
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

from tests.faults.product import (
    SCENARIOS,
    FaultError,
    Outcome,
    Product,
    known_blobs,
    orphaned_files,
    wait_for,
)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="make faults", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per scenario (default 20)")
    parser.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), help="these scenarios")
    parser.add_argument("--keep", action="store_true", help="keep the var folder afterwards")
    options = parser.parse_args(argv)
    if options.runs < 1:
        parser.error("--runs must be at least 1")
    names = options.only or list(SCENARIOS)
    folder = Path(tempfile.mkdtemp(prefix="lexweb-faults-"))
    product = Product(folder / "var")
    failed = False
    try:
        product.start()
        for name in names:
            totals = _run_scenario(product, name, options.runs)
            failed |= totals["recovered"] != totals["runs"] or bool(
                totals["duplicates"] or totals["missing"] or totals["orphaned_files"]
            )
            print(json.dumps(totals), flush=True)
    finally:
        product.close()
        if options.keep:
            print(f"faults: var folder kept at {folder / 'var'}", file=sys.stderr)
        else:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
    return 1 if failed else 0


def _run_scenario(product: Product, name: str, runs: int) -> dict[str, object]:
    scenario = SCENARIOS[name]
    started = time.monotonic()
    totals: dict[str, object] = {"scenario": name, "runs": runs}
    recovered = duplicates = missing = failed_runs = 0
    errors: list[str] = []
    durations: list[float] = []
    for run in range(1, runs + 1):
        try:
            outcome: Outcome = scenario(product)
        except (FaultError, OSError, AssertionError) as exc:
            failed_runs += 1
            errors.append(f"run {run}: {str(exc).splitlines()[0][:300]}")
            traceback.print_exc(file=sys.stderr)
            if product.process is None or product.process.poll() is not None:
                product.start()  # the launcher itself ended: start it again for the next run
            continue
        recovered += outcome.recovered and not outcome.notes
        duplicates += outcome.duplicates
        missing += outcome.missing
        durations.append(outcome.seconds)
        errors += [f"run {run}: {note}" for note in outcome.notes]
    orphans = _orphans_after_sweep(product)
    totals.update(
        recovered=recovered,
        duplicates=duplicates,
        missing=missing,
        orphaned_files=len(orphans),
        failed_runs=failed_runs,
        seconds=round(time.monotonic() - started, 1),
        median_run_seconds=round(sorted(durations)[len(durations) // 2], 1) if durations else None,
        errors=errors[:10],
        orphans=orphans[:5],
    )
    return totals


def _orphans_after_sweep(product: Product, timeout: float = 90) -> list[str]:
    """What is left once the sweeper (every 20 s in this product) had its chance."""
    with contextlib.suppress(FaultError):
        wait_for(
            "the sweep",
            lambda: not orphaned_files(product.var_dir, known_blobs(product)),
            timeout,
            every=5,
        )
    return orphaned_files(product.var_dir, known_blobs(product))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
