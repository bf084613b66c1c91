"""The evaluation's loading and scoring (lexweb_dev/evaluation.py), on a tiny set folder
written here and on the shipped dev set, checked against the README's own scorer."""

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pymupdf
import pytest

from lexweb_dev import evaluation

SHARED_SET = Path(__file__).resolve().parents[3] / "shared" / "eval" / "verifier"
SCORER = SHARED_SET / "score.py"


# --- A tiny set folder in the README's format -------------------------------------------------


@dataclass(frozen=True)
class TinyDoc:
    name: str
    pages: tuple[str, ...]
    image_only: bool = False
    origin: str = "client"


TINY_DOCS = (
    TinyDoc(
        "01-lease.pdf",
        (
            "COMMERCIAL LEASE\nDated: March 3, 2024\nTenant shall pay monthly rent of "
            "$12,450.00 on the first day of each month.",
            "7. NOTICES. Every notice under this lease shall be in writing and delivered by "
            "hand.\nSigned by Harriet Vole, landlord.",
        ),
    ),
    TinyDoc(
        "02-scan.pdf",
        ("RECEIPT\nReceived from Orbis Tools the sum of $900.00 on June 9, 2024.",),
        image_only=True,
    ),
)

# (sentence, claims: (text, kind, supported, error)); the draft is the sentences joined.
TINY_DRAFT = (
    (
        "The lease is dated March 3, 2024 (QZR0000040).",
        (
            ("March 3, 2024", "date", True, "none"),
            ("QZR0000040", "bates", True, "none"),
        ),
    ),
    (
        "Rent was $12,450.00 a month (QZR0000040).",
        (("$12,450.00", "amount", True, "none"), ("QZR0000040", "bates", True, "none")),
    ),
    (
        'Notices must be "in writing and delivered by hand" (QZR0000041).',
        (
            ("in writing and delivered by hand", "quote", True, "none"),
            ("QZR0000041", "bates", True, "none"),
        ),
    ),
    (
        "The receipt shows $950.00 paid on June 9, 2024 (QZR0000042).",
        (
            ("$950.00", "amount", False, "amount_altered"),
            ("June 9, 2024", "date", True, "none"),
            ("QZR0000042", "bates", True, "none"),
        ),
    ),
    (
        "The landlord signed the lease (QZR0000043).",
        (("QZR0000043", "bates", False, "bates_out_of_range"),),
    ),
    (
        "The balance is untraced (RTX 3060).",
        (("RTX 3060", "bates", False, "bates_not_a_bates_number"),),
    ),
)


def _pdf(doc: TinyDoc) -> bytes:
    with pymupdf.open() as pdf:
        for text in doc.pages:
            page = pdf.new_page(width=612, height=792)
            page.insert_text((72, 90), text, fontsize=12)
            if doc.image_only:
                pixmap = page.get_pixmap(dpi=300, colorspace=pymupdf.csGRAY)
                pdf.delete_page(-1)
                scan = pdf.new_page(width=612, height=792)
                scan.insert_image(scan.rect, stream=pixmap.tobytes("png"))
        return pdf.tobytes()


def write_tiny_set(
    root: Path,
    *,
    case_name: str = "case-tiny",
    prefix: str = "QZR",
    start: int = 40,
    digits: int = 7,
    docs: Sequence[TinyDoc] = TINY_DOCS,
) -> Path:
    """Write a set folder with one case (two documents, one of them a scan; one draft, with
    labels) in the README's format under `root`; return the set folder."""
    case_dir = root / case_name
    (case_dir / "sources").mkdir(parents=True)
    (case_dir / "drafts").mkdir()
    bates_map, page_text = [], []
    number = start
    for doc in docs:
        (case_dir / "sources" / doc.name).write_bytes(_pdf(doc))
        for page, text in enumerate(doc.pages, 1):
            label = f"{prefix}{number:0{digits}d}"
            bates_map.append(
                {"bates": label, "document": doc.name, "page": page, "image_only": doc.image_only}
            )
            page_text.append({"bates": label, "text": text})
            number += 1
    meta = {
        "title": "Vole v. Orbis Tools",
        "court": "Test Court",
        "case_number": "T-1",
        "bates_prefix": prefix,
        "bates_start": start,
        "bates_digits": digits,
        "documents": [doc.name for doc in docs],
        "origin": {doc.name: doc.origin for doc in docs},
        "image_only": [doc.name for doc in docs if doc.image_only],
        "bates_map": bates_map,
    }
    (case_dir / "case.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    (case_dir / "page_text.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in page_text), encoding="utf-8"
    )
    draft = " ".join(sentence for sentence, _ in TINY_DRAFT) + "\n"
    (case_dir / "drafts" / "brief.md").write_text(draft, encoding="utf-8")
    labels, seen = [], {}
    for text, kind, supported, error in (c for _, claims in TINY_DRAFT for c in claims):
        occurrence = seen[text] = seen.get(text, 0) + 1
        at = evaluation.find_nth(draft, text, occurrence)
        labels.append(
            {
                "draft": "drafts/brief.md",
                "kind": kind,
                "text": text,
                "occurrence": occurrence,
                "supported": supported,
                "error": error,
                "start": at,
                "end": at + len(text),
            }
        )
    (case_dir / "labels.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in labels), encoding="utf-8"
    )
    return root


def _flag(label: evaluation.Label, status: str = "unsupported") -> dict[str, object]:
    return {
        "draft": label.draft,
        "start": label.start,
        "end": label.end,
        "status": status,
        "kind": label.kind,
    }


# --- Loading ---------------------------------------------------------------------------------


def test_a_set_folder_names_drafts_with_their_case_folder_and_finds_every_label(
    tmp_path: Path,
) -> None:
    cases = evaluation.load_set(write_tiny_set(tmp_path))

    (case,) = cases
    assert (case.name, case.bates_prefix, case.bates_start, case.bates_digits) == (
        "case-tiny",
        "QZR",
        40,
        7,
    )
    assert case.drafts == ("drafts/brief.md",)
    assert case.image_only == {"02-scan.pdf"}
    labels = evaluation.all_labels(cases)
    assert len(labels) == 11 and {lb.draft for lb in labels} == {"case-tiny/drafts/brief.md"}
    text = case.draft_text("drafts/brief.md")
    assert all(text[lb.start : lb.end] == lb.text for lb in labels)
    # "QZR0000040" occurs twice: the second label is the second occurrence.
    first, second = (lb for lb in labels if lb.text == "QZR0000040")
    assert second.start > first.start


def test_one_case_folder_is_scored_without_the_folder_prefix(tmp_path: Path) -> None:
    (case,) = evaluation.load_set(write_tiny_set(tmp_path) / "case-tiny")

    assert not case.prefixed
    assert {lb.draft for lb in case.labels} == {"drafts/brief.md"}


def test_public_origin_is_a_public_record_and_an_unknown_origin_is_refused(
    tmp_path: Path,
) -> None:
    docs = (TINY_DOCS[0], TinyDoc("02-opinion.pdf", ("OPINION\nAffirmed.",), origin="public"))
    (case,) = evaluation.load_set(write_tiny_set(tmp_path / "a", docs=docs))
    assert case.origins == {"01-lease.pdf": "client", "02-opinion.pdf": "public_record"}

    docs = (TinyDoc("01-x.pdf", ("X",), origin="system_generated"),)
    with pytest.raises(evaluation.EvalSetError, match="unknown origin 'system_generated'"):
        evaluation.load_set(write_tiny_set(tmp_path / "b", docs=docs))


def test_broken_folders_are_refused_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(evaluation.EvalSetError, match="holds no case folder"):
        evaluation.load_set(tmp_path)

    root = write_tiny_set(tmp_path / "s")
    meta_path = root / "case-tiny" / "case.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "bates_digits": "seven"}))
    with pytest.raises(evaluation.EvalSetError, match=r"case\.json: 'bates_digits'"):
        evaluation.load_set(root)

    meta_path.write_text(json.dumps(meta))
    labels_path = root / "case-tiny" / "labels.jsonl"
    rows = labels_path.read_text().splitlines()
    bad = {**json.loads(rows[0]), "text": "not in the draft"}
    labels_path.write_text("\n".join([json.dumps(bad), *rows[1:]]))
    with pytest.raises(evaluation.EvalSetError, match=r"labels\.jsonl:1: 'not in the draft'"):
        evaluation.load_set(root)

    moved = {**json.loads(rows[0]), "start": 0, "end": 3}
    labels_path.write_text("\n".join([json.dumps(moved), *rows[1:]]))
    with pytest.raises(evaluation.EvalSetError, match="start/end disagree"):
        evaluation.load_set(root)


def test_overlapping_occurrences_are_counted_as_the_readme_says() -> None:
    assert evaluation.find_nth("aaaa", "aa", 1) == 0
    assert evaluation.find_nth("aaaa", "aa", 2) == 1
    assert evaluation.find_nth("aaaa", "aa", 3) == 2
    assert evaluation.find_nth("aaaa", "aa", 4) == -1


# --- Scoring ---------------------------------------------------------------------------------


def _tiny_labels(tmp_path: Path) -> list[evaluation.Label]:
    return evaluation.all_labels(evaluation.load_set(write_tiny_set(tmp_path)))


def test_flagging_every_claim_catches_all_but_flags_every_supported_one(tmp_path: Path) -> None:
    labels = _tiny_labels(tmp_path)

    result = evaluation.score(labels, [_flag(lb) for lb in labels])

    assert (result["labels"], result["unsupported_labels"], result["supported_labels"]) == (
        11,
        3,
        8,
    )
    assert result["recall"] == 1.0
    assert result["precision"] == 3 / 11
    assert result["false_flag_rate"] == 1.0
    assert result["targets"] == {
        "recall_every_error_kind": True,
        "precision": False,
        "false_flag_rate": False,
    }
    assert not result["targets_met"]
    assert len(result["wrong_flags"]) == 8 and not result["missed"]


def test_flagging_nothing_catches_nothing_and_has_no_precision(tmp_path: Path) -> None:
    labels = _tiny_labels(tmp_path)
    supported_only = [_flag(lb, "supported") for lb in labels]

    result = evaluation.score(labels, supported_only)

    assert (result["recall"], result["precision"], result["false_flag_rate"]) == (0.0, None, 0.0)
    assert result["flags"] == 0 and result["findings"] == 11
    assert result["recall_by_error"]["amount_altered"] == {"caught": 0, "total": 1, "recall": 0.0}
    assert [m["text"] for m in result["missed"]] == ["$950.00", "QZR0000043", "RTX 3060"]
    assert not result["targets_met"]


def test_flagging_exactly_the_unsupported_claims_meets_every_target(tmp_path: Path) -> None:
    labels = _tiny_labels(tmp_path)
    findings = [_flag(lb, "supported" if lb.supported else "contradicted") for lb in labels]

    result = evaluation.score(labels, findings)

    assert (result["recall"], result["precision"], result["false_flag_rate"]) == (1.0, 1.0, 0.0)
    assert result["recall_by_kind"]["bates"] == {"caught": 2, "total": 2, "recall": 1.0}
    assert result["targets_met"]


def test_needs_review_is_counted_but_never_a_flag(tmp_path: Path) -> None:
    labels = _tiny_labels(tmp_path)

    result = evaluation.score(labels, [_flag(lb, "needs_review") for lb in labels])

    assert (result["needs_review"], result["flags"], result["recall"]) == (11, 0, 0.0)


def test_a_flag_counts_where_it_overlaps_in_the_same_draft_only(tmp_path: Path) -> None:
    labels = _tiny_labels(tmp_path)
    amount = next(lb for lb in labels if lb.text == "$950.00")
    touching = {**_flag(amount), "start": amount.end, "end": amount.end + 5}  # no overlap
    inside = {**_flag(amount), "start": amount.start + 1, "end": amount.start + 2}
    elsewhere = {**_flag(amount), "draft": "case-other/drafts/brief.md"}

    assert evaluation.score(labels, [touching])["recall_by_error"]["amount_altered"]["caught"] == 0
    assert evaluation.score(labels, [inside])["recall_by_error"]["amount_altered"]["caught"] == 1
    result = evaluation.score(labels, [elsewhere])
    assert (result["recall"], result["precision"]) == (0.0, 0.0)


def test_one_flag_over_a_supported_and_an_unsupported_claim_is_precise_but_a_false_flag(
    tmp_path: Path,
) -> None:
    labels = _tiny_labels(tmp_path)
    amount = next(lb for lb in labels if lb.text == "$950.00")
    date = next(lb for lb in labels if lb.text == "June 9, 2024")
    wide = {**_flag(amount), "end": date.end}

    result = evaluation.score(labels, [wide])

    assert (result["precision"], result["false_flag_rate"]) == (1.0, 1 / 8)


# --- Written forms (issue 28 req 10) --------------------------------------------------------
# A claim's form is read from its text by the rules of how each form is written (the style
# manuals', and the forms issue 28 names), not by the verifier; the score reports recall and
# false flags per kind and form.


@pytest.mark.parametrize(
    ("kind", "text", "form"),
    [
        ("amount", "$1,250.00", "figures"),
        ("amount", "USD 4,000", "currency code"),
        ("amount", "4,000.50 EUR", "currency code"),
        ("amount", "$1.2 million", "mixed figures and words"),
        ("amount", "eighty-four thousand two hundred fifty dollars", "in words"),
        ("amount", "Four Point One Million Dollars", "in words"),
        ("date", "3/7/24", "numeric"),
        ("date", "03/07/2024", "numeric"),
        ("date", "4 December 2023", "day month year"),
        ("date", "December 4, 2023", "month day, year"),
        ("date", "Feb. 14, 2021", "month day, year"),
        ("date", "the 2nd day of April, 2007", "ordinal figures"),
        ("date", "the second of April, 2007", "day in words"),
        ("date", "the second of April, two thousand and seven", "year in words"),
        ("date", "April 2, twenty\ntwenty-three", "year in words"),
        ("date", "the 2nd day of April, nineteen ninety-nine", "year in words"),
        ("bates", "SMITH 000123", "number"),
        ("bates", "ABC000123-125", "range"),
        ("bates", "DEF 000045.0002", "page suffix"),
        ("bates", "SKP0001005 at 27:4-8", "transcript page and line"),
        ("bates", "Notice of Breach, p. 1", "by title or file name"),
        ("bates", "Inspection Report at 2", "by title or file name"),
        ("bates", "ABC000123; ABC000130", "several cites"),
        ("case_citation", "Brown v. Board, 347 U.S. 483, 495 n.11 (1954)", "footnote pin"),
        ("case_citation", "People v. Smith (2001) 25 Cal.4th 1, 12", "California style"),
        ("case_citation", "Smith, supra, 25 Cal.4th at p. 14", "California style"),
        ("case_citation", "Id. at 497", "short form"),
        ("case_citation", "Brown, 347 U.S. at 495", "short form"),
        ("case_citation", "Larkspur, 192 P.3d at 1413 n.2", "footnote pin"),
        ("case_citation", "Brown v. Board, 347 U.S. 483, 495 (1954) (holding at 494)", "full cite"),
        ("case_citation", "Roe v. Wade, 410 U.S. 113, 120 (1973)", "full cite"),
        ("quote", "the tenant shall pay", "quote"),
    ],
)
def test_a_claims_written_form_is_read_from_its_text(kind: str, text: str, form: str) -> None:
    assert evaluation.written_form(kind, text) == form


def test_the_score_counts_each_written_form_caught_and_flagged(tmp_path: Path) -> None:
    labels = _tiny_labels(tmp_path)
    exact = [_flag(lb, "supported" if lb.supported else "contradicted") for lb in labels]
    everything = [_flag(lb) for lb in labels]

    right = evaluation.score(labels, exact)["by_form"]
    wrong = evaluation.score(labels, everything)["by_form"]

    assert sum(int(f["unsupported"] or 0) for f in right.values()) == 3
    assert sum(int(f["supported"] or 0) for f in right.values()) == 8
    for form, figures in right.items():
        assert figures["flagged"] == 0, form
        assert figures["caught"] == figures["unsupported"], form
    for form, figures in wrong.items():
        assert figures["flagged"] == figures["supported"], form
        if figures["supported"]:
            assert figures["false_flag_rate"] == 1.0, form
    amount = next(lb for lb in labels if lb.text == "$950.00")
    assert right["amount: figures"]["recall"] == 1.0
    assert evaluation.score(labels, [])["by_form"]["amount: figures"]["caught"] == 0
    assert not amount.supported


# --- Agreement with the README's scorer -------------------------------------------------------


def _scorer(set_dir: Path, findings: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(SCORER), str(set_dir), str(findings), "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _agree(set_dir: Path, findings: list[dict[str, object]], tmp_path: Path) -> None:
    path = tmp_path / "findings.jsonl"
    evaluation.write_findings(findings, path)
    theirs = _scorer(set_dir, path)
    ours = evaluation.score(
        evaluation.all_labels(evaluation.load_set(set_dir)), evaluation.read_findings(path)
    )
    for key in (
        "labels",
        "unsupported_labels",
        "supported_labels",
        "findings",
        "flags",
        "needs_review",
        "recall",
        "precision",
        "false_flag_rate",
    ):
        assert ours[key] == theirs[key], key  # type: ignore[literal-required]
    for mine, key in (
        (ours["recall_by_error"], "recall_by_error"),
        (ours["recall_by_kind"], "recall_by_kind"),
    ):
        assert {k: [v["caught"], v["total"]] for k, v in mine.items()} == theirs[key]


def _mixed(labels: Sequence[evaluation.Label]) -> list[dict[str, object]]:
    """Some caught, some missed, some wrong, some half-overlapping, some needs_review."""
    findings: list[dict[str, object]] = []
    for n, label in enumerate(labels):
        choice = n % 5
        if choice == 0:
            findings.append(_flag(label))
        elif choice == 1:
            findings.append(_flag(label, "needs_review"))
        elif choice == 2:
            findings.append(
                {**_flag(label, "contradicted"), "start": label.end - 1, "end": label.end + 40}
            )
        elif choice == 3:
            findings.append({**_flag(label), "start": label.end, "end": label.end + 1})
    return findings


def _need_scorer() -> None:
    """Without ../shared the comparison skips; under CI=true that is a failure."""
    if not SCORER.is_file():
        reason = f"{SHARED_SET} is absent (the dev set and its scorer are read in place there)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.mark.parametrize("trivial", ["all", "none", "exact", "mixed"])
def test_our_scores_agree_with_the_readme_scorer_on_the_dev_set(
    trivial: str, tmp_path: Path
) -> None:
    _need_scorer()
    set_dir = SHARED_SET
    labels = evaluation.all_labels(evaluation.load_set(set_dir))
    findings = {
        "all": [_flag(lb) for lb in labels],
        "none": [],
        "exact": [_flag(lb) for lb in labels if not lb.supported],
        "mixed": _mixed(labels),
    }[trivial]

    _agree(set_dir, findings, tmp_path)


def test_our_scores_agree_with_the_readme_scorer_on_a_set_of_our_own(tmp_path: Path) -> None:
    _need_scorer()
    set_dir = write_tiny_set(tmp_path / "set")
    labels = evaluation.all_labels(evaluation.load_set(set_dir))

    _agree(set_dir, _mixed(labels), tmp_path)


def test_a_label_naming_a_draft_outside_its_case_folder_is_refused(tmp_path: Path) -> None:
    root = write_tiny_set(tmp_path)
    labels_path = root / "case-tiny" / "labels.jsonl"
    rows = labels_path.read_text().splitlines()
    (tmp_path / "outside.md").write_text("QZR0000040")
    escaping = {**json.loads(rows[0]), "draft": "../outside.md", "text": "QZR0000040"}
    escaping.pop("start"), escaping.pop("end")
    labels_path.write_text("\n".join([json.dumps(escaping), *rows[1:]]))

    with pytest.raises(evaluation.EvalSetError, match=r"draft \.\./outside\.md is not in the case"):
        evaluation.load_set(root)


# --- Pages without ingest, and the bench --------------------------------------------------------


def test_fast_pages_follow_the_bates_map_with_scans_as_ocr_text(tmp_path: Path) -> None:
    docs = (*TINY_DOCS, TinyDoc("03-opinion.pdf", ("OPINION\nAffirmed.",), origin="public"))
    (case,) = evaluation.load_set(
        write_tiny_set(tmp_path, prefix="KX", start=7, digits=4, docs=docs)
    )

    pages = evaluation.fast_pages(case)

    assert [(p.position, p.bates, p.filename, p.page_number) for p in pages] == [
        (1, ("KX0007",), "01-lease.pdf", 1),
        (2, ("KX0008",), "01-lease.pdf", 2),
        (3, ("KX0009",), "02-scan.pdf", 1),
        (4, ("KX0010",), "03-opinion.pdf", 1),
    ]
    assert [p.document_id for p in pages] == [1, 1, 2, 3]
    assert [p.source for p in pages] == ["text_layer", "text_layer", "ocr", "text_layer"]
    assert [p.origin for p in pages] == ["client", "client", "client", "public_record"]
    assert "$900.00" in pages[2].text


def test_the_fast_bench_writes_findings_and_prints_the_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import verifier_eval

    set_dir = write_tiny_set(tmp_path / "set")
    out = tmp_path / "findings.jsonl"

    assert verifier_eval.main(["--fast", str(set_dir), "--out", str(out), "--details"]) == 0

    report = json.loads(capsys.readouterr().out)
    result = report["result"]
    assert (report["mode"], report["findings_file"]) == ("fast", str(out))
    rows = evaluation.read_findings(out)
    assert rows and result["findings"] == len(rows)
    assert result["recall_by_error"]["bates_out_of_range"]["caught"] == 1
    assert set(result["targets"]) == {"recall_every_error_kind", "precision", "false_flag_rate"}
    assert "missed" in result and "wrong_flags" in result
    assert result == {
        **result,
        **evaluation.summary(
            evaluation.score(evaluation.all_labels(evaluation.load_set(set_dir)), rows),
            details=True,
        ),
    }


def test_the_fast_bench_names_a_missing_part_of_the_verifier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench import verifier_eval

    missing = (("apps.verification.not_written", "extract_claims", "the claim extractor"),)
    monkeypatch.setattr(verifier_eval, "NEEDED", missing)

    code = verifier_eval.main(
        ["--fast", str(write_tiny_set(tmp_path)), "--out", str(tmp_path / "f")]
    )

    assert code == 2
    error = json.loads(capsys.readouterr().err)["error"]
    assert "apps.verification.not_written (the claim extractor) cannot be imported" in error
    assert not (tmp_path / "f").exists()
