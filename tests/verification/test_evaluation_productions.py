"""The evaluation format's productions (issue 28 req. 8): several productions a case, each with
its prefix, digits, start, optional page suffix and legend; every case in the first format
still loads as it did; a set's unreadable case is listed, not fatal, when asked (req. 9)."""

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from apps.verification import checks, claims, index
from bench import verifier_eval
from lexweb_dev import evaluation
from tests.harness.serial import serial
from tests.verification.test_evaluation import SHARED_SET, TINY_DOCS, write_tiny_set

HELDOUT_SET = Path(__file__).resolve().parent / "heldout"

# Two productions of the tiny case: ours ("QZR ", with a legend) of both documents, and the
# other side's ("OPP-") of the lease, whose pages then carry two numbers each.
PRODUCTIONS = [
    {
        "volume": "OURS001",
        "bates_prefix": "QZR ",
        "bates_start": 40,
        "bates_digits": 7,
        "legend": "CONFIDENTIAL",
        "party": "ours",
        "documents": ["01-lease.pdf", "02-scan.pdf"],
    },
    {
        "volume": "OPP001",
        "bates_prefix": "OPP-",
        "bates_start": 1,
        "bates_digits": 6,
        "party": "opposing",
        "documents": ["01-lease.pdf"],
    },
]


def write_productions_case(root: Path, **changes: Any) -> Path:
    """The tiny case in the productions format (no top-level bates_prefix, start, digits or
    documents); `changes` replace case.json keys. The draft also cites "OPP 000002"."""
    set_dir = write_tiny_set(root, prefix="QZR ")
    case_dir = set_dir / "case-tiny"
    meta = json.loads((case_dir / "case.json").read_text())
    for key in ("bates_prefix", "bates_start", "bates_digits", "documents"):
        del meta[key]
    meta["productions"] = PRODUCTIONS
    for row in meta["bates_map"]:
        row.update(production="OURS001", legend="CONFIDENTIAL")
    meta["bates_map"] += [
        {"bates": "OPP-000001", "document": "01-lease.pdf", "page": 1, "production": "OPP001"},
        {"bates": "OPP-000002", "document": "01-lease.pdf", "page": 2, "production": "OPP001"},
    ]
    meta.update(changes)
    (case_dir / "case.json").write_text(json.dumps(meta, indent=1))
    draft = case_dir / "drafts" / "brief.md"
    text = draft.read_text() + (
        'Notices are "in writing and delivered by hand" under the lease (OPP 000002).\n'
    )
    draft.write_text(text)
    with (case_dir / "labels.jsonl").open("a") as labels:
        at = text.index("OPP 000002")
        label = {"draft": "drafts/brief.md", "kind": "bates", "text": "OPP 000002"}
        label |= {"occurrence": 1, "supported": True, "error": "none"}
        labels.write(json.dumps({**label, "start": at, "end": at + 10}) + "\n")
    return set_dir


# --- The first format, unchanged ------------------------------------------------------------


@pytest.mark.parametrize("set_dir", [SHARED_SET, HELDOUT_SET], ids=["dev", "heldout"])
def test_every_case_of_the_first_format_loads_as_one_production_of_every_document(
    set_dir: Path,
) -> None:
    if not set_dir.is_dir():
        pytest.skip(f"{set_dir} is not on this machine")
    for case in evaluation.load_set(set_dir):
        meta = json.loads((case.path / "case.json").read_text())
        (production,) = case.productions
        assert (production.prefix, production.start, production.digits) == (
            meta["bates_prefix"],
            meta["bates_start"],
            meta["bates_digits"],
        )
        assert production.documents == tuple(meta["documents"]) == case.documents
        assert (production.page_suffix_digits, production.legend) == (0, "")
        assert case.prefixes == (meta["bates_prefix"],)
        pages = evaluation.fast_pages(case)
        # One page a bates_map row, in its order, as before productions were a thing.
        assert [(p.bates, p.filename, p.page_number) for p in pages] == [
            ((row["bates"],), row["document"], row["page"]) for row in meta["bates_map"]
        ]


# --- Several productions --------------------------------------------------------------------


def test_productions_are_read_with_their_settings_and_the_documents_they_produce(
    tmp_path: Path,
) -> None:
    (case,) = evaluation.load_set(write_productions_case(tmp_path))

    ours, theirs = case.productions
    assert (ours.volume, ours.prefix, ours.start, ours.digits, ours.legend, ours.party) == (
        "OURS001",
        "QZR ",
        40,
        7,
        "CONFIDENTIAL",
        "ours",
    )
    assert (theirs.prefix, theirs.documents, theirs.legend) == ("OPP-", ("01-lease.pdf",), "")
    assert case.prefixes == ("QZR ", "OPP-")
    # The first format's fields are the first production's; documents, every one produced.
    assert (case.bates_prefix, case.bates_start, case.bates_digits) == ("QZR ", 40, 7)
    assert case.documents == ("01-lease.pdf", "02-scan.pdf")
    # The legend is stored beside the number, never in it.
    first = case.bates_map[0]
    assert (first.bates, first.legend, first.production) == (
        "QZR 0000040",
        "CONFIDENTIAL",
        "OURS001",
    )


def test_a_page_of_two_productions_is_one_page_with_both_numbers(tmp_path: Path) -> None:
    (case,) = evaluation.load_set(write_productions_case(tmp_path))

    pages = evaluation.fast_pages(case)

    assert [p.bates for p in pages] == [
        ("QZR 0000040", "OPP-000001"),
        ("QZR 0000041", "OPP-000002"),
        ("QZR 0000042",),
    ]


def test_cites_of_every_production_resolve_with_the_separator_written_otherwise(
    tmp_path: Path,
) -> None:
    # "QZR0000040" (stamped "QZR 0000040") and "OPP 000002" (stamped "OPP-000002").
    (case,) = evaluation.load_set(write_productions_case(tmp_path))

    rows = evaluation.verify_case(
        case,
        evaluation.fast_pages(case),
        extract=claims.extract_claims,
        verify=checks.verify_text,
        build_index=index.PacketIndex.build,
    )

    draft = case.draft_text("drafts/brief.md")
    opp = draft.index("OPP 000002")
    (cite,) = [r for r in rows if r["start"] <= opp < r["end"] and r["kind"] == "bates"]
    assert "OPP-000002" in cite["bates"], cite
    first = draft.index("QZR0000040")
    (cite,) = [r for r in rows if r["start"] <= first < r["end"] and r["kind"] == "bates"]
    assert cite["bates"] and cite["bates"][0] == "QZR 0000040", cite


def test_a_page_suffix_is_part_of_the_number(tmp_path: Path) -> None:
    production = {
        "volume": "SFX001",
        "bates_prefix": "ABC",
        "bates_start": 101,
        "bates_digits": 6,
        "page_suffix_digits": 4,
        "documents": ["01-lease.pdf"],
    }
    bates_map = [
        {"bates": "ABC000101.0001", "document": "01-lease.pdf", "page": 1},
        {"bates": "ABC000101.0002", "document": "01-lease.pdf", "page": 2},
    ]
    set_dir = write_tiny_set(tmp_path, docs=TINY_DOCS[:1])
    meta_path = set_dir / "case-tiny" / "case.json"
    meta = json.loads(meta_path.read_text())
    for key in ("bates_prefix", "bates_start", "bates_digits"):
        del meta[key]
    meta_path.write_text(json.dumps({**meta, "productions": [production], "bates_map": bates_map}))

    (case,) = evaluation.load_set(set_dir)

    (spec,) = case.productions
    assert spec.page_suffix_digits == 4
    assert (spec.label(101, 1), spec.label(101, 12)) == ("ABC000101.0001", "ABC000101.0012")


def test_a_variant_renumbers_the_first_production_of_a_case_that_gives_only_productions(
    tmp_path: Path,
) -> None:
    # bench/verifier_eval.py --variant on the productions format (no top-level bates_prefix):
    # the case's own production (the first, as the loader reads it) takes the variant's
    # prefix, start and digits; the other side's numbers stay as stamped.
    set_dir = write_productions_case(tmp_path / "original")
    copy = verifier_eval.make_variant(set_dir, tmp_path / "variant", "HX_", 77, 8)

    (case,) = evaluation.load_set(copy)

    ours, theirs = case.productions
    assert (ours.prefix, ours.start, ours.digits) == ("HX_", 77, 8)
    assert (theirs.prefix, theirs.start, theirs.digits) == ("OPP-", 1, 6)
    assert [(row.bates, row.legend) for row in case.bates_map] == [
        ("HX_00000077", "CONFIDENTIAL"),
        ("HX_00000078", "CONFIDENTIAL"),
        ("HX_00000079", "CONFIDENTIAL"),
        ("OPP-000001", ""),
        ("OPP-000002", ""),
    ]
    draft = case.draft_text("drafts/brief.md")
    assert "QZR" not in draft and "HX_00000077" in draft and "(OPP 000002)" in draft
    for label in case.labels:  # every label still names its text in the renumbered draft
        assert draft[label.start : label.end] == label.text
    # The same claims caught and flagged as on the original.
    (original,) = evaluation.load_set(set_dir)
    assert [(lb.kind, lb.error) for lb in case.labels] == [
        (lb.kind, lb.error) for lb in original.labels
    ]
    scored = [
        verifier_eval.run_fast(folder, tmp_path / f"{name}.jsonl")["result"]
        for name, folder in (("original", set_dir), ("variant", copy))
    ]
    assert scored[0]["recall"] == scored[1]["recall"]
    assert scored[0]["precision"] == scored[1]["precision"]
    assert scored[0]["false_flag_rate"] == scored[1]["false_flag_rate"]


def test_a_variant_leaves_another_production_whose_prefix_begins_with_ours(
    tmp_path: Path,
) -> None:
    # "QZR2-000001" is the other side's number, though it begins with our "QZR".
    set_dir = write_productions_case(tmp_path / "original")
    case_dir = set_dir / "case-tiny"
    for name in ("case.json", "page_text.jsonl", "drafts/brief.md", "labels.jsonl"):
        path = case_dir / name
        path.write_text(path.read_text().replace("OPP-", "QZR2-").replace("OPP ", "QZR2 "))
    copy = verifier_eval.make_variant(set_dir, tmp_path / "variant", "HX_", 77, 8)

    (case,) = evaluation.load_set(copy)

    assert [row.bates for row in case.bates_map][3:] == ["QZR2-000001", "QZR2-000002"]
    assert "(QZR2 000002)" in case.draft_text("drafts/brief.md")


# --- Bad input ------------------------------------------------------------------------------


def _with(tmp_path: Path, name: str, **changes: Any) -> Path:
    return write_productions_case(tmp_path / name, **changes)


def _production(**changes: Any) -> list[dict[str, Any]]:
    return [{**PRODUCTIONS[0], **changes}, PRODUCTIONS[1]]


def _suffixed_map(label: str) -> list[dict[str, Any]]:
    return [{"bates": label, "document": "01-lease.pdf", "page": 1}]


BAD = [
    ({"productions": "QZR"}, "'productions' is a list of 1-50"),
    ({"productions": []}, "'productions' is a list of 1-50"),
    ({"productions": [PRODUCTIONS[0]] * 51}, "'productions' is a list of 1-50"),
    ({"productions": ["QZR"]}, r"productions\[1\] is not an object"),
    ({"productions": _production(page_suffix_digits=7)}, "'page_suffix_digits' is 0"),
    ({"productions": _production(page_suffix_digits=-1)}, "'page_suffix_digits' is 0"),
    ({"productions": _production(page_suffix_digits=True)}, "'page_suffix_digits' is 0"),
    ({"productions": _production(legend="CONFIDENTIAL\nAEO")}, "'legend' is not one line"),
    ({"productions": _production(legend="C" * 501)}, "'legend' is not one line"),
    ({"productions": _production(volume="OPP001")}, "two productions have one volume"),
    ({"productions": _production(documents=[])}, "'documents' names at least one"),
    ({"productions": _production(documents=["01-lease.pdf"] * 2)}, "appears twice"),
    ({"productions": _production(documents=["09-none.pdf"])}, "'09-none.pdf' is not in sources"),
    ({"productions": _production(bates_digits="7")}, r"productions\[1\]: 'bates_digits'"),
    ({"productions": _production(bates_prefix=None)}, r"productions\[1\]: 'bates_prefix'"),
    ({"bates_prefix": "QZR"}, "'bates_prefix' differs from the first production's"),
    (
        {"bates_map": _suffixed_map("QZR 0000040 CONFIDENTIAL")},
        "'QZR 0000040 CONFIDENTIAL' is not a number of any production",
    ),
    ({"bates_map": _suffixed_map("CONFIDENTIAL QZR 0000040")}, "a legend goes in 'legend'"),
    ({"bates_map": _suffixed_map("QZR 000040")}, "is not a number of any production"),
    (
        {"bates_map": [{**_suffixed_map("OPP-000001")[0], "production": "OURS001"}]},
        "is not a number of OURS001",
    ),
    (
        {"bates_map": [{**_suffixed_map("OPP-000001")[0], "production": "NOPE"}]},
        "names no production NOPE",
    ),
    (
        {"bates_map": [{"bates": "OPP-000001", "document": "02-scan.pdf", "page": 1}]},
        "is of 02-scan.pdf, not in OPP001",
    ),
]


@pytest.mark.parametrize(("changes", "words"), BAD)
def test_malformed_productions_are_refused_naming_the_file_and_the_problem(
    tmp_path: Path, changes: dict[str, Any], words: str
) -> None:
    set_dir = _with(tmp_path, "s", **changes)

    with pytest.raises(evaluation.EvalSetError, match=words) as refused:
        evaluation.load_set(set_dir)

    assert "case.json" in str(refused.value)


@pytest.mark.parametrize(
    ("label", "refused"),
    [
        ("ABC000101.0001", False),
        ("ABC000101.9999", False),
        ("ABC000101.10000", True),
        ("ABC000101", True),
        ("ABC000101.001", True),
        ("ABC000101.00a1", True),
    ],
)
def test_a_page_suffix_has_exactly_its_digits(tmp_path: Path, label: str, refused: bool) -> None:
    production = {**PRODUCTIONS[1], "bates_prefix": "ABC", "page_suffix_digits": 4}
    set_dir = _with(tmp_path, "s", productions=[production], bates_map=_suffixed_map(label))

    if refused:
        with pytest.raises(evaluation.EvalSetError, match="not a number of any production"):
            evaluation.load_set(set_dir)
    else:
        evaluation.load_set(set_dir)


# --- A set's unreadable case ------------------------------------------------------------------


def test_an_unreadable_case_is_listed_and_the_others_load_when_failures_are_asked_for(
    tmp_path: Path,
) -> None:
    set_dir = write_tiny_set(tmp_path, case_name="case-a")
    write_tiny_set(tmp_path, case_name="case-b")
    (set_dir / "case-b" / "case.json").write_text("{not json")

    with pytest.raises(evaluation.EvalSetError, match="case-b"):
        evaluation.load_set(set_dir)
    failures: list[evaluation.CaseFailure] = []
    cases = evaluation.load_set(set_dir, failures=failures)

    assert [case.name for case in cases] == ["case-a"]
    (failure,) = failures
    assert (failure.case, failure.stage) == ("case-b", "load")
    assert "case.json" in failure.reason


def test_a_set_with_no_readable_case_is_refused_even_when_failures_are_asked_for(
    tmp_path: Path,
) -> None:
    set_dir = write_tiny_set(tmp_path, case_name="case-a")
    (set_dir / "case-a" / "case.json").write_text("[]")

    with pytest.raises(evaluation.EvalSetError, match=r"no case of .* can be read"):
        evaluation.load_set(set_dir, failures=[])


# --- A page-suffix production, stamped and verified for real --------------------------------


@pytest.mark.django_db
@pytest.mark.product
def test_a_case_whose_production_has_a_page_suffix_is_stamped_and_verified(
    tmp_path: Path,
) -> None:
    set_dir = write_tiny_set(tmp_path / "set", docs=TINY_DOCS[:1])
    case_dir = set_dir / "case-tiny"
    meta = json.loads((case_dir / "case.json").read_text())
    for key in ("bates_prefix", "bates_start", "bates_digits", "documents"):
        del meta[key]
    meta["productions"] = [
        {
            "volume": "SFX001",
            "bates_prefix": "QZR",
            "bates_start": 40,
            "bates_digits": 7,
            "page_suffix_digits": 4,
            "legend": "CONFIDENTIAL",
            "documents": ["01-lease.pdf"],
        }
    ]
    for page, row in enumerate(meta["bates_map"], 1):
        row.update(bates=f"QZR0000040.{page:04d}", production="SFX001", legend="CONFIDENTIAL")
    (case_dir / "case.json").write_text(json.dumps(meta, indent=1))
    texts = [json.loads(line) for line in (case_dir / "page_text.jsonl").read_text().splitlines()]
    (case_dir / "page_text.jsonl").write_text(
        "".join(
            json.dumps({**row, "bates": f"QZR0000040.{page:04d}"}) + "\n"
            for page, row in enumerate(texts, 1)
        )
    )
    draft = case_dir / "drafts" / "brief.md"
    text = draft.read_text() + 'Notices are "delivered by hand" (QZR0000040.0002).\n'
    draft.write_text(text)
    out = tmp_path / "findings.jsonl"
    printed = io.StringIO()

    with serial("verify-eval"):
        call_command("verify_eval", str(set_dir), out=str(out), quiet=True, stdout=printed)

    (ran,) = json.loads(printed.getvalue())["cases"]
    # The one document took QZR0000040; its two pages were stamped .0001 and .0002 (the
    # legend apart) and every frozen page carries the label case.json gives it.
    assert (ran["productions"], ran["pages"], ran["bates_mismatches"]) == (1, 2, [])
    rows = evaluation.read_findings(out)
    at = text.index("QZR0000040.0002")
    (cite,) = [r for r in rows if r["start"] <= at < r["end"] and r["kind"] == "bates"]
    assert cite["bates"] == ["QZR0000040.0002"] and cite["status"] != "unsupported", cite
