"""Values found by a list of patterns, first pattern first, spans never overlapping (pure, no
Django). Shared by `amounts` and `dates`."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence


def disjoint_values(
    patterns: Sequence[re.Pattern[str]],
    text: str,
    value: Callable[[re.Match[str]], str | None],
) -> list[tuple[int, int, str]]:
    """Every (start, end, value) in `text`, in order: each pattern's matches in turn, a match
    skipped when it overlaps one an earlier pattern found or when `value` gives None."""
    found: list[tuple[int, int, str]] = []
    starts: list[int] = []  # the disjoint spans taken so far, sorted
    ends: list[int] = []
    for pattern in patterns:
        for match in pattern.finditer(text):
            start, end = match.span()
            before = bisect.bisect_left(starts, end)
            if before and ends[before - 1] > start:
                continue  # overlaps a value found by an earlier pattern
            found_value = value(match)
            if found_value is None:
                continue
            at = bisect.bisect_left(starts, start)
            starts.insert(at, start)
            ends.insert(at, end)
            found.append((start, end, found_value))
    found.sort()
    return found


def whole_value(values: Callable[[str], list[tuple[int, int, str]]], text: str) -> str | None:
    """The value that `text` is (whole string, surrounding spaces aside), or None."""
    stripped = text.strip()
    for start, end, found in values(stripped):
        if start == 0 and end == len(stripped):
            return found
    return None


def excerpt_of(text: str, start: int, end: int, *, around: int = 80) -> str:
    """The words of `text` around [start, end), on one line: what a finding quotes of a page."""
    left = max(0, start - around)
    right = min(len(text), end + around)
    return " ".join(text[left:right].split())
