"""Numbers in words a person reads (issue 25 req 6): sizes and memory in binary units,
durations in hours, minutes and seconds, measurements with the places that mean something.
Pure functions, and the same as template filters (a builtin of the templates: no `{% load %}`),
so pages and the admin say things one way.

- `size(bytes)`: "0 bytes", "1 byte", "512 bytes", "1.5 KiB", "23.4 MiB", "78.0 GiB"
  (IEC units: a GPU's 80 GiB is 80 x 2^30 bytes, as NVML and the cluster page count).
- `duration(seconds)` / `duration_ms(ms)`: "0.4 s", "12 s", "3 min 5 s", "2 h 4 min"; under
  a second in milliseconds ("180 ms").
- `decimal(value, places)`: a float with at most `places` decimals, trailing zeros dropped
  ("12.5", "3"), never 16 digits.
Stored codes are shown by their labels where they are read (a model's choices, or for a
page's text source apps/documents/labels.py, which depends on the document's kind).
"""

from decimal import ROUND_HALF_UP, Decimal

from django import template

register = template.Library()

_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def size(value: object) -> str:
    """Bytes in IEC units, one decimal from KiB up (see the module docstring); "" for no
    value."""
    number = _number(value)
    if number is None:
        return ""
    count = int(number)
    if abs(count) < 1024:
        return f"{count:,} byte{'s' * (abs(count) != 1)}"
    scaled = float(count)
    unit = ""
    for unit in _UNITS:
        scaled /= 1024
        if abs(scaled) < 1024 or unit == _UNITS[-1]:
            break
    return f"{_round(scaled, 1):,.1f} {unit}"


def duration(value: object) -> str:
    """Seconds in words a person reads (see the module docstring); "" for no value."""
    seconds = _number(value)
    if seconds is None:
        return ""
    if seconds < 0:
        return "-" + duration(-seconds)
    if seconds < 1:
        return f"{int(_round(seconds * 1000, 0))} ms"
    if seconds < 10:
        return f"{_trim(_round(seconds, 1))} s"
    whole = int(_round(seconds, 0))
    if whole < 60:
        return f"{whole} s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min {secs} s" if secs else f"{minutes} min"


def duration_ms(value: object) -> str:
    """Milliseconds in words (as `duration`); "" for no value."""
    number = _number(value)
    return "" if number is None else duration(number / 1000)


def decimal(value: object, places: object = 1) -> str:
    """A measurement with at most `places` decimals, trailing zeros dropped, thousands
    separated; "" for no value."""
    number = _number(value)
    if number is None:
        return ""
    try:
        digits = max(0, min(6, int(str(places))))
    except ValueError:
        digits = 1
    rounded = _round(number, digits)
    text = f"{rounded:,.{digits}f}"
    return _trim(text) if digits else text


def _number(value: object) -> float | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        return float(value)  # type: ignore[arg-type]  # str, int, float, Decimal
    except (TypeError, ValueError):
        return None


def _round(value: float, places: int) -> float:
    """Half up, as people round (Python's round() goes to even: 2.5 -> 2)."""
    quantum = Decimal(1).scaleb(-places)
    return float(Decimal(repr(value)).quantize(quantum, rounding=ROUND_HALF_UP))


def _trim(value: float | str) -> str:
    text = value if isinstance(value, str) else f"{value:.6f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


register.filter("size", size)
register.filter("duration", duration)
register.filter("duration_ms", duration_ms)
register.filter("decimal", decimal)
