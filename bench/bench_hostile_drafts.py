"""How the verifier's cost grows with a draft's claims, on drafts laid out to make it grow
faster: each form below written N times and 4N times, its claims extracted
(`apps.verification.claims.extract_claims`, eyecite's own time limit as in a run) and checked
(`apps.verification.checks.verify_text`) against one small packet, in CPU seconds of this
process.

Reported per form: the seconds at N and at 4N, their ratio (`growth`: 4 where the cost grows
with the claims, 16 where it grows with their square), and the cost of a claim at 4N against
the peer's in the same run: the peer is an ordinary draft of the same size, each cite closing
a sentence of prose of its own (`ordinary`). Target: every form's growth at most
`GROWTH_TARGET` (a draft's length must not cost the square of its claims: a job holds a worker
while it runs, and a draft of LEXWEB_MAX_DRAFT_BYTES is allowed in).

Before the twenty-third session's changes, on its 2-core machine (another test run beside it):
one "sentence" of 4,000 Bates cites took 32 s to check where 2,000 took 6 s; 4,000 quotations
each with its cite 6 s where 2,000 took 3 s; 4,000 "(Id. at 4.)" 37 s to extract where 2,000
took 8 s (docs/reference/performance.md has this benchmark's figures after).

    python -m bench.bench_hostile_drafts [--n N]
"""

import argparse
import json
import os
import time
from collections.abc import Callable

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django.setup()

from apps.verification.checks import verify_text  # noqa: E402
from apps.verification.claims import extract_claims  # noqa: E402
from apps.verification.index import PacketIndex  # noqa: E402
from tests.verification.packets import text_index  # noqa: E402

PREFIX = "ABC"
PAGES = 60
GROWTH_TARGET = 6.0  # 4 where linear; room for the machine's noise and a log factor


def _cite(i: int) -> str:
    return f"{PREFIX}{i % PAGES + 1:06d}"


# Each: the i-th repetition of the form.
FORMS: dict[str, Callable[[int], str]] = {
    # the peer: prose, each sentence closed by its cite
    "ordinary": lambda i: f"The pump failed on March {i % 28 + 1}, 2024 ({_cite(i)}). ",
    # one "sentence" (no stop) of thousands of cites
    "one_sentence_of_cites": lambda i: f"the pump failed, {_cite(i)}; ",
    # one sentence of case citations, each with a pin
    "one_sentence_of_cases": lambda i: (
        f"Smith v. Jones, {i % 900 + 1} F.3d {i % 300 + 1}, {i % 300 + 2} (9th Cir. 2001); "
    ),
    # stops of abbreviations, which end no sentence: one sentence again
    "docket_cites": lambda i: f"(Dkt. {i % 90 + 1} at {i % 30 + 1}.) ",
    "id_cites": lambda i: "(Id. at 4.) ",
    "the_same_cite": lambda i: f"See {_cite(0)}. ",
    "quotations": lambda i: f'He said "the pump failed on March {i % 28 + 1}" ({_cite(i)}). ',
}


def _packet() -> PacketIndex:
    pages = [
        f"Page {i}. The pump failed on March {i % 28 + 1}, 2024 at the Riverside plant. "
        f"Invoice total ${i + 1000:,}.00 was paid."
        for i in range(1, PAGES + 1)
    ]
    half = PAGES // 2
    return text_index(PREFIX, [("a.pdf", pages[:half]), ("b.pdf", pages[half:])])


def _cost(form: Callable[[int], str], n: int, index: PacketIndex) -> tuple[float, int]:
    """CPU seconds to extract and check a draft of `n` repetitions of `form`, and its claims."""
    text = "".join(form(i) for i in range(n))
    started = time.process_time()
    claims = extract_claims(text, bates_prefixes=[PREFIX])
    verify_text(text, claims, index)
    return time.process_time() - started, len(claims)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1500, help="repetitions of the smaller draft")
    args = parser.parse_args()
    index = _packet()
    _cost(FORMS["ordinary"], 10, index)  # eyecite's and the index's first use, untimed
    forms: dict[str, dict[str, float | int | bool]] = {}
    for name, form in FORMS.items():
        small, _ = _cost(form, args.n, index)
        large, claims = _cost(form, 4 * args.n, index)
        forms[name] = {
            "claims_at_4n": claims,
            "cpu_s_at_n": round(small, 3),
            "cpu_s_at_4n": round(large, 3),
            "growth": round(large / small, 2) if small else 0.0,
            "ms_per_claim_at_4n": round(1000 * large / max(claims, 1), 3),
        }
    peer = float(forms["ordinary"]["ms_per_claim_at_4n"]) or 1.0
    for figures in forms.values():
        figures["per_claim_vs_ordinary"] = round(float(figures["ms_per_claim_at_4n"]) / peer, 2)
        figures["growth_met"] = float(figures["growth"]) <= GROWTH_TARGET
    print(
        json.dumps(
            {
                "benchmark": "hostile_drafts",
                "n": args.n,
                "growth_target": GROWTH_TARGET,
                "all_growth_met": all(f["growth_met"] for f in forms.values()),
                "forms": forms,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
