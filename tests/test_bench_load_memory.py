"""How the load test judges a process's memory growth (bench/load_memory.py): a trend moves it,
one sample's dip or spike does not."""

from bench.load_memory import memory_growth


def _series(values: list[float]) -> list[tuple[float, dict[str, float]]]:
    return [(30.0 * n, {"web": value}) for n, value in enumerate(values)]


def test_a_dip_at_two_minutes_and_a_spike_at_the_end_are_not_growth() -> None:
    # The web process in one ten-minute run (2026-12-06): warming up, one low sample at 2:00,
    # flat at 209-212 MB, one high last sample.
    values = [172, 199, 206, 208, 196, 203, 206, 206, 210, 208, 210]
    values += [209, 209, 210, 209, 211, 212, 211, 211, 210, 220]
    [web] = memory_growth(_series(values)).values()
    assert web["mb_at_2_min"] == 196 and web["mb_at_end"] == 220  # single samples: +12.2%
    assert web["mb_median_from_2_min"] == 203 and web["mb_median_last_minute"] == 211
    assert web["growth"] == 0.039
    assert web["mb_max"] == 220


def test_a_steady_climb_is_growth_whatever_the_samples_around_it() -> None:
    values = [100.0 + 2 * n for n in range(21)]  # 2 MB every 30 s: a leak
    values[4] += 15  # a spike at 2:00 does not hide it
    [web] = memory_growth(_series(values)).values()
    assert web["mb_median_from_2_min"] == 112 and web["mb_median_last_minute"] == 138
    assert web["growth"] is not None and web["growth"] > 0.2


def test_a_process_sampled_only_before_two_minutes_is_not_judged() -> None:
    samples = _series([100.0, 100.0, 100.0])
    assert memory_growth(samples) == {}
    samples.append((120.0, {"cpu-worker": 50.0}))
    assert set(memory_growth(samples)) == {"cpu-worker"}
