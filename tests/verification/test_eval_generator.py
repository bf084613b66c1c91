"""The generated evaluation set (bench/eval_cases): loadable in the shared format, every error
kind labelled many times, deterministic per seed, other sentences under another seed.
No scans here (no OCR is run; the fast evaluation reads page_text.jsonl)."""

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from bench import eval_cases
from lexweb_dev import evaluation


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gen") / "set"
    eval_cases.generate(root, seed=7, cases=24, scans=False)
    return root


def _drafts(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8")
        for p in sorted(root.glob("*/drafts/*.md"))
    }


@pytest.mark.slow
def test_the_generator_writes_24_cases_that_load_with_every_error_kind_labelled(
    generated: Path,
) -> None:
    cases = evaluation.load_set(generated)
    assert len(cases) == 24
    labels = evaluation.all_labels(cases)
    errors = Counter(label.error for label in labels if not label.supported)
    assert set(errors) == set(eval_cases.ERROR_KINDS)
    assert min(errors.values()) >= 20, errors
    assert sum(1 for label in labels if label.supported) > 2 * sum(errors.values())
    # Every label's text is where its span says, and every page has its text.
    for case in cases:
        for label in case.labels:
            draft = case.draft_text(label.draft.split("/", 1)[1])
            assert draft[label.start : label.end] == label.text
        assert len(evaluation.fast_pages(case)) == len(
            {(e.document, e.page) for e in case.bates_map}
        )


@pytest.mark.slow
def test_the_set_varies_bates_formats_domains_styles_and_productions(generated: Path) -> None:
    metas = [json.loads(p.read_text()) for p in sorted(generated.glob("*/case.json"))]
    prefixes = [p["bates_prefix"] for m in metas for p in m["productions"]]
    assert len({len(p.strip(" -")) for p in prefixes} & {2, 3, 4, 5, 6}) >= 4
    assert {p[-1] for p in prefixes if not p[-1].isalpha()} == {" ", "-"}
    assert {p["bates_digits"] for m in metas for p in m["productions"]} == {6, 7, 8}
    assert len({m["bates_start"] for m in metas}) >= 4
    assert any(len(m["productions"]) > 1 for m in metas)
    assert len({m["generator"]["domain"] for m in metas}) >= 8
    styles = {p.name.split("-")[0] for p in generated.glob("*/drafts/*.md")}
    assert {"motion", "memo", "declaration", "letter", "chronology"} <= styles
    pages = "\n".join(p.read_text() for p in generated.glob("*/page_text.jsonl"))
    assert "*" in pages and "Page " in pages  # star paging and transcripts
    # Dates with the year in words ("two thousand and seven", "twenty twenty-four"), as
    # testimony and deeds write them, on source pages and in drafts.
    year_in_words = re.compile(
        r"(?:January|February|March|April|May|June|July|August|September|October|November"
        r"|December),\s+(?:two\s+thousand|nineteen|twenty)\b"
    )
    assert year_in_words.search(pages.replace("\\n", " "))
    assert any(year_in_words.search(d) for d in _drafts(generated).values())


@pytest.mark.slow
def test_the_same_seed_writes_the_same_files_and_another_seed_other_sentences(
    tmp_path: Path, generated: Path
) -> None:
    again = tmp_path / "again"
    eval_cases.generate(again, seed=7, cases=3, scans=False)
    for path in sorted(again.rglob("*")):
        if path.is_file():
            assert path.read_bytes() == (generated / path.relative_to(again)).read_bytes(), path
    other = tmp_path / "other"
    eval_cases.generate(other, seed=8, cases=3, scans=False)

    def sentences(root: Path) -> set[str]:
        return {
            s.strip()
            for text in _drafts(root).values()
            for s in text.replace("\n", " ").split(". ")
            if len(s.split()) >= 6
        }

    first, second = sentences(again), sentences(other)
    assert first and second
    assert len(first & second) <= len(first) // 20, sorted(first & second)[:5]


@pytest.mark.slow
def test_an_opinion_states_each_holding_on_one_page_only() -> None:
    # A wrong pin must be wrong: were a holding stated on two pages of one opinion, a pin to
    # the other page would be labelled wrong though that page carries it.
    from bench.eval_cases import world

    opinions = [
        op
        for seed in range(40)
        for n in range(24)
        for op in world.build(seed, n, scans=False).opinions
    ]
    assert len(opinions) > 500
    for op in opinions:
        stated = [h for page in op.holdings.values() for h in page]
        stated += [text for _page, text in op.notes.values()]
        assert len(stated) == len(set(stated)), (op.full, stated)
