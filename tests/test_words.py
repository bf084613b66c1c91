"""Words a person reads (issue 25 req 6): sizes, durations and measurements humanised by one
set of functions (lexweb/words.py), the same as template filters on every page."""

import pytest
from django.template import engines

from lexweb import words


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, "0 bytes"),
        (1, "1 byte"),
        (1023, "1,023 bytes"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (5 * 2**20 + 2**19, "5.5 MiB"),
        (80 * 2**30, "80.0 GiB"),
        (85_899_345_920, "80.0 GiB"),  # an H100's memory as NVML counts it
        (3 * 2**40, "3.0 TiB"),
        (None, ""),
        ("not a number", ""),
    ],
)
def test_sizes_are_in_binary_units_never_bytes_past_a_kibibyte(
    value: object, expected: str
) -> None:
    assert words.size(value) == expected


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (0.18, "180 ms"),
        (0.0004, "0 ms"),
        (1.0, "1 s"),
        (1.25, "1.3 s"),
        (9.94, "9.9 s"),
        (12.4, "12 s"),
        (59.6, "1 min"),
        (185, "3 min 5 s"),
        (3600, "1 h"),
        (7440, "2 h 4 min"),
        (-2, "-2 s"),
        (None, ""),
    ],
)
def test_durations_read_as_a_person_says_them(seconds: object, expected: str) -> None:
    assert words.duration(seconds) == expected


def test_milliseconds_are_durations_too() -> None:
    assert words.duration_ms(184_523.77777777778) == "3 min 5 s"
    assert words.duration_ms(1613.0000000000002) == "1.6 s"
    assert words.duration_ms(None) == ""


@pytest.mark.parametrize(
    ("value", "places", "expected"),
    [
        (42.123456789012345, 1, "42.1"),
        (12.0, 1, "12"),
        (2.5, 0, "3"),  # half up, as people round
        (1234.5678, 2, "1,234.57"),
        (0.30000000000000004, 2, "0.3"),
        (None, 1, ""),
        (7.25, "x", "7.3"),  # a bad argument keeps one place
    ],
)
def test_measurements_keep_the_places_that_mean_something(
    value: object, places: object, expected: str
) -> None:
    assert words.decimal(value, places) == expected


def test_the_filters_are_on_every_template_without_a_load() -> None:
    template = engines["django"].from_string(
        "{{ b|size }} · {{ ms|duration_ms }} · {{ f|decimal:1 }}"
    )
    out = template.render({"b": 80 * 2**30, "ms": 1613.0000000000002, "f": 9.87654321})
    assert out == "80.0 GiB · 1.6 s · 9.9"
