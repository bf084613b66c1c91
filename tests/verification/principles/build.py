"""Writes hand-annotated cases (this folder's `tuning.py` and `sealed.py`) as a set in the format
of ../shared/eval/verifier/ (its README describes the layout, the labels and the scoring), so
`bench.verifier_eval.run_fast` scores the verifier on them.

A case is a dict: `folder`, `prefix`, `start`, `digits`, `documents` (file name -> list of page
texts, in production order), optional `origin` (file name -> "client"/"public") and `drafts`
(file name -> annotated text). In a draft, a claim is written `[[text|kind]]` when its source
supports it and `[[text|kind|error]]` when not (`kind` and `error` as the README names them);
the brackets are taken out and each becomes one line of labels.jsonl at its offsets.

Sources are written as placeholder files: the fast evaluation reads page_text.jsonl only.
"""

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

MARK = re.compile(r"\[\[(?P<text>[^\[\]|]+)\|(?P<kind>[a-z_]+)(?:\|(?P<error>[a-z_]+))?\]\]")
KINDS = {"bates", "date", "quote", "amount", "case_citation"}


def unmark(annotated: str) -> tuple[str, list[dict[str, Any]]]:
    """The draft's text and its labels (offsets into the text)."""
    out: list[str] = []
    labels: list[dict[str, Any]] = []
    at = 0
    length = 0
    for match in MARK.finditer(annotated):
        before = annotated[at : match.start()]
        out.append(before)
        length += len(before)
        text, kind, error = match.group("text"), match.group("kind"), match.group("error")
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r} at {text!r}")
        labels.append(
            {
                "kind": kind,
                "text": text,
                "start": length,
                "end": length + len(text),
                "supported": error is None,
                "error": error or "none",
            }
        )
        out.append(text)
        length += len(text)
        at = match.end()
    out.append(annotated[at:])
    text = "".join(out)
    if "[[" in text or "]]" in text:
        raise ValueError(f"unclosed mark near {text[text.find('[[') :][:60]!r}")
    return text, labels


def _occurrence(text: str, sub: str, start: int) -> int:
    n, at = 0, -1
    while True:
        at = text.find(sub, at + 1)
        if at < 0 or at > start:
            raise ValueError(f"{sub!r} not found at {start}")
        n += 1
        if at == start:
            return n


def label(prefix: str, start: int, digits: int, n: int) -> str:
    return f"{prefix}{start + n:0{digits}d}"


def write_case(case: Mapping[str, Any], root: Path) -> None:
    folder = root / case["folder"]
    (folder / "sources").mkdir(parents=True, exist_ok=True)
    (folder / "drafts").mkdir(parents=True, exist_ok=True)
    bates_map = []
    pages = []
    n = 0
    for name, texts in case["documents"].items():
        (folder / "sources" / name).write_bytes(b"placeholder: the fast evaluation reads text\n")
        for number, text in enumerate(texts, 1):
            bates = label(case["prefix"], case["start"], case["digits"], n)
            bates_map.append({"bates": bates, "document": name, "page": number})
            pages.append({"bates": bates, "text": text})
            n += 1
    meta = {
        "title": case["folder"],
        "bates_prefix": case["prefix"],
        "bates_start": case["start"],
        "bates_digits": case["digits"],
        "documents": list(case["documents"]),
        "origin": dict(case.get("origin", {})),
        "image_only": [],
        "bates_map": bates_map,
    }
    (folder / "case.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    (folder / "page_text.jsonl").write_text(
        "".join(json.dumps(p) + "\n" for p in pages), encoding="utf-8"
    )
    rows = []
    for draft, annotated in case["drafts"].items():
        text, labels = unmark(annotated)
        (folder / "drafts" / draft).write_text(text, encoding="utf-8")
        for item in labels:
            rows.append(
                {
                    "draft": f"drafts/{draft}",
                    "occurrence": _occurrence(text, item["text"], item["start"]),
                    **item,
                }
            )
    (folder / "labels.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )


def write_set(cases: Iterable[Mapping[str, Any]], root: Path) -> Path:
    for case in cases:
        write_case(case, root)
    return root
