"""`python -m bench.eval_cases OUT_DIR --seed N --cases 24 [--no-scans]`: see the package."""

import argparse
import json
import sys
from pathlib import Path

from bench.eval_cases import generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write generated verifier evaluation cases.")
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=24)
    parser.add_argument("--no-scans", action="store_true", help="no image-only documents")
    args = parser.parse_args(argv)
    if not 1 <= args.cases <= 500:
        parser.error("--cases is 1-500")
    totals = generate(args.out, seed=args.seed, cases=args.cases, scans=not args.no_scans)
    print(json.dumps({"out": str(args.out), "seed": args.seed, **totals}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
