"""Print each case's pages (page_text.jsonl) to the source PDFs its case.json names, one PDF
page per Bates page, in a fixed-pitch font so that tables keep their columns. Deterministic:
`python tests/verification/handwritten/make_sources.py` writes the same bytes again."""

import json
from pathlib import Path

import pymupdf

HERE = Path(__file__).resolve().parent
FONT_SIZE = 7.5
MARGIN = 36


def _pdf(pages: list[str]) -> bytes:
    with pymupdf.open() as pdf:
        for text in pages:
            page = pdf.new_page(width=612, height=792)
            box = pymupdf.Rect(MARGIN, MARGIN, 612 - MARGIN, 792 - MARGIN)
            left = page.insert_textbox(box, text, fontsize=FONT_SIZE, fontname="cour")
            if left < 0:
                raise ValueError(f"a page does not fit on one PDF page: {text[:60]!r}")
        pdf.set_metadata({})
        return pdf.tobytes(garbage=3, deflate=True, no_new_id=True)


def write_to(root: Path, out: Path) -> None:
    """Each case's sources under `out` (its own folder for `root`)."""
    for case in sorted(p for p in root.iterdir() if (p / "case.json").is_file()):
        meta = json.loads((case / "case.json").read_text(encoding="utf-8"))
        texts = {}
        for line in (case / "page_text.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            texts[row["bates"]] = row["text"]
        sources = out / case.name / "sources"
        sources.mkdir(parents=True, exist_ok=True)
        for document in _documents(meta):
            pages: dict[int, str] = {}  # a page produced twice has a row per number: one page
            for entry in meta["bates_map"]:
                if entry["document"] == document:
                    pages.setdefault(entry["page"], texts[entry["bates"]])
            (sources / document).write_bytes(_pdf([pages[n] for n in sorted(pages)]))


def _documents(meta: dict) -> list[str]:
    """The case's documents: case.json's `documents`, or each production's in turn."""
    if "documents" in meta:
        return list(meta["documents"])
    seen: dict[str, None] = {}
    for production in meta["productions"]:
        seen.update(dict.fromkeys(production["documents"]))
    return list(seen)


if __name__ == "__main__":
    write_to(HERE, HERE)
