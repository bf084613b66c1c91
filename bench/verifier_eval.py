"""Issue 11's measurement: the verifier on a set folder in the format of ../shared/eval/verifier/
(its README describes it), scored by that README's rules (lexweb_dev/evaluation.py).

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

--variant PREFIX:START:DIGITS runs on a copy of the set (in a temporary folder) whose
productions use that Bates prefix, first number and digit count instead of case.json's (in a
case with several `productions`, the first one, the case's own; the others keep theirs): every
label in case.json, page_text.jsonl, the drafts and labels.jsonl is renumbered (ranges and
their short tails too, label offsets moved with the text), so the figures can be compared
across prefixes, start numbers and digit counts (`make_variant`).

Run: .venv/bin/python -m bench.verifier_eval --fast [SET] [--out findings.jsonl] [--details]
     [--variant ZX-:501:7]
"""

import argparse
import importlib
import io
import json
import os
import re
import shutil
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
    from lexweb_dev import evaluation

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

    from lexweb_dev import evaluation

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


# --- Variants: the same set with another prefix, start number and digit count ---------------


def make_variant(set_dir: Path, out_dir: Path, prefix: str, start: int, digits: int) -> Path:
    """Copy the set folder `set_dir` to `out_dir` with every case's Bates labels renumbered:
    `prefix`, numbers moved so that the first page is `start`, padded to `digits` (a label of
    another digit count keeps its difference). Sources are copied as they are (they are not
    stamped); label offsets follow the text. Returns `out_dir`."""
    shutil.copytree(set_dir, out_dir)
    for meta_path in sorted(out_dir.glob("**/case.json")):
        _variant_case(meta_path.parent, prefix, start, digits)
    return out_dir


def _variant_case(case_dir: Path, prefix: str, start: int, digits: int) -> None:
    meta = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
    # The case's production is the first of `productions` where it has them (as
    # lexweb_dev.evaluation.load_case reads it), else the first format's top-level fields.
    # Only that production is renumbered; the others' numbers stay as they are.
    productions = meta.get("productions") or [meta]
    ours = productions[0]
    old_prefix, old_start, old_digits = (
        ours["bates_prefix"],
        ours["bates_start"],
        ours["bates_digits"],
    )
    core = re.escape(old_prefix.rstrip("-_. "))
    # Another production's prefix that begins with ours ("AB2" beside "AB") is never ours.
    longer = sorted(
        {
            other["bates_prefix"].rstrip("-_. ")
            for other in productions[1:]
            if other["bates_prefix"].rstrip("-_. ").startswith(old_prefix.rstrip("-_. "))
            and len(other["bates_prefix"].rstrip("-_. ")) > len(old_prefix.rstrip("-_. "))
        },
        key=len,
        reverse=True,
    )
    not_theirs = "".join(rf"(?!{re.escape(p)}[\s\-_.]?\d)" for p in longer)
    label = re.compile(
        rf"(?<![A-Za-z0-9]){not_theirs}{core}[\s\-_.]?(\d+)"
        rf"(?:(\s*[-\u2013]\s*)(\d{{1,{old_digits - 1}}})(?![\d]))?(?![A-Za-z0-9])"
    )

    def number(n: int, width: int) -> str:
        return f"{prefix}{n - old_start + start:0{max(1, width + digits - old_digits)}d}"

    def renumber(text: str) -> tuple[str, list[tuple[int, int, int, int]]]:
        out, moves, at = [], [], 0
        for match in label.finditer(text):
            first = int(match.group(1))
            new = number(first, len(match.group(1)))
            if match.group(3):
                tail = match.group(3)
                last = int(match.group(1)[: -len(tail)] + tail)
                new_last = str(last - old_start + start)
                new_first = new[len(prefix) :]
                short = new_last[-len(tail) :]
                keep = new_first[: -len(tail)] == new_last[: -len(tail)].rjust(
                    len(new_first) - len(tail), "0"
                )
                new += match.group(2) + (short if keep else number(last, len(match.group(1))))
            out.append(text[at : match.start()])
            position = sum(len(part) for part in out)
            moves.append((match.start(), match.end(), position, position + len(new)))
            out.append(new)
            at = match.end()
        out.append(text[at:])
        return "".join(out), moves

    def moved(offset: int, moves: list[tuple[int, int, int, int]]) -> int:
        shift = 0
        for old_a, old_b, new_a, new_b in moves:
            if offset <= old_a:
                break
            if offset < old_b:
                return new_a + min(offset - old_a, new_b - new_a)
            shift = new_b - old_b
        return offset + shift

    ours["bates_prefix"], ours["bates_start"], ours["bates_digits"] = prefix, start, digits
    if ours is not meta:  # the first format's fields beside `productions` are the first's
        given = {"bates_prefix": prefix, "bates_start": start, "bates_digits": digits}
        meta.update({key: value for key, value in given.items() if key in meta})
    for row in meta["bates_map"]:
        row["bates"] = renumber(row["bates"])[0]
    (case_dir / "case.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    pages_path = case_dir / "page_text.jsonl"
    if pages_path.is_file():
        rows = [json.loads(ln) for ln in pages_path.read_text(encoding="utf-8").splitlines() if ln]
        for row in rows:
            row["bates"], row["text"] = renumber(row["bates"])[0], renumber(row["text"])[0]
        pages_path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    drafts: dict[str, tuple[str, str, list[tuple[int, int, int, int]]]] = {}
    for draft in sorted((case_dir / "drafts").glob("*")):
        original = draft.read_text(encoding="utf-8")
        text, moves = renumber(original)
        drafts[f"drafts/{draft.name}"] = (original, text, moves)
        draft.write_text(text, encoding="utf-8")
    labels_path = case_dir / "labels.jsonl"
    if not labels_path.is_file():
        return
    rows = [json.loads(ln) for ln in labels_path.read_text(encoding="utf-8").splitlines() if ln]
    for row in rows:
        original, text, moves = drafts[row["draft"]]
        if "start" not in row:
            from lexweb_dev.evaluation import find_nth

            row["start"] = find_nth(original, row["text"], row["occurrence"])
            row["end"] = row["start"] + len(row["text"])
        start_at = moved(row["start"], moves)
        end_at = moved(row["end"], moves)
        row["start"], row["end"], row["text"] = start_at, end_at, text[start_at:end_at]
        occurrence, i = 0, -1
        while True:
            i = text.find(row["text"], i + 1)
            occurrence += 1
            if i == start_at or i < 0:
                break
        row["occurrence"] = occurrence
        for key in ("source", "expected"):
            if isinstance(row.get(key), dict) and "bates" in row[key]:
                row[key]["bates"] = renumber(str(row[key]["bates"]))[0]
    labels_path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", nargs="?", type=Path, default=DEFAULT_SET)
    parser.add_argument("--fast", action="store_true", help="page_text.jsonl, no ingest, no DB")
    parser.add_argument(
        "--out", type=Path, default=Path(tempfile.gettempdir()) / "verifier-findings.jsonl"
    )
    parser.add_argument("--details", action="store_true", help="list misses and wrong flags")
    parser.add_argument(
        "--variant", metavar="PREFIX:START:DIGITS", help="renumber the set's Bates labels first"
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from lexweb_dev import evaluation

    with tempfile.TemporaryDirectory(prefix="verifier-variant-") as scratch:
        set_dir = args.set
        if args.variant:
            prefix, start, digits = args.variant.rsplit(":", 2)
            set_dir = make_variant(args.set, Path(scratch) / "set", prefix, int(start), int(digits))
        return _report(args, set_dir, evaluation)


def _report(args: argparse.Namespace, set_dir: Path, evaluation: Any) -> int:
    try:
        report = (run_fast if args.fast else run_real)(set_dir, args.out)
    except MissingPart as exc:
        print(json.dumps({"error": str(exc)}), file=sys.stderr)
        return 2
    except evaluation.EvalSetError as exc:
        print(json.dumps({"error": f"not an eval set: {exc}"}), file=sys.stderr)
        return 2
    if args.variant:
        report["variant"] = args.variant
    report["findings_file"] = str(args.out)
    report["result"] = evaluation.summary(report["result"], details=args.details)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
