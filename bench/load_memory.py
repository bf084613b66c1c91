"""How bench_load.py judges memory growth (kept apart from it: that module patches sockets with
gevent on import, and the suite tests this).

A process's memory sampled every 30 s moves by a few percent from one sample to the next with
no trend (the allocator keeps and hands back arenas, a burst of requests holds buffers for a
moment): 196 MB at 2:00 and 206 a minute later, 211 for minutes on end and 220 in the last
sample of one run of the web process. Growth is therefore judged between the median of the
samples of the minute that starts at GROWTH_FROM and the median of the last minute's samples:
a leak moves both medians apart as it moves single samples, while one sample's dip or spike
moves neither. The single samples are reported beside it."""

import statistics
from collections.abc import Sequence

GROWTH_FROM = 120.0  # seconds: memory growth is measured from the minute that starts here
WINDOW = 60.0  # seconds: the samples of each end (its first or last and a minute of them)


def memory_growth(
    samples: Sequence[tuple[float, dict[str, float]]],
) -> dict[str, dict[str, float | None]]:
    """Per process key, from (seconds since the load started, {key: MB}) samples in time order:
    its MB at GROWTH_FROM (the first sample from then on), at the end and at its highest, the
    medians of the minute from GROWTH_FROM and of the last minute, and the growth between the
    two medians (None when there is nothing to judge)."""
    later = [(at, mb) for at, mb in samples if at >= GROWTH_FROM - 1]
    if not later:
        return {}
    end = later[-1][0]
    growth: dict[str, dict[str, float | None]] = {}
    for key in sorted({key for _at, mb in samples for key in mb}):
        values = [(at, mb[key]) for at, mb in later if key in mb]
        if not values:
            continue
        start_at = values[0][0]
        first = statistics.median(v for at, v in values if at <= start_at + WINDOW + 1)
        last = statistics.median(v for at, v in values if at >= end - WINDOW - 1)
        growth[key] = {
            "mb_at_2_min": values[0][1],
            "mb_at_end": values[-1][1],
            "mb_max": max(mb.get(key, 0.0) for _at, mb in samples),
            "mb_median_from_2_min": round(first, 1),
            "mb_median_last_minute": round(last, 1),
            "growth": round((last - first) / first, 3) if first else None,
        }
    return growth
