"""The admin's sampling presets of a deployment: what may be stored, and what is sent."""

import math
from collections.abc import Mapping

from lexweb.errors import DomainError

MAX_PRESETS = 20
MAX_NAME = 40


def sampling_check(value: object) -> dict[str, float | int]:
    """Presets as stored: an object of at most MAX_PRESETS names to finite numbers (a NaN would
    make PostgreSQL refuse the row; a string would make the backend refuse every call)."""
    if not isinstance(value, Mapping):
        raise DomainError('Sampling presets are a JSON object, e.g. {"temperature": 0.2}.')
    if len(value) > MAX_PRESETS:
        raise DomainError(f"At most {MAX_PRESETS} sampling presets.")
    checked: dict[str, float | int] = {}
    for name, number in value.items():
        if not isinstance(name, str) or not name.isidentifier() or len(name) > MAX_NAME:
            raise DomainError(f"{str(name)[:MAX_NAME]!r} is not a sampling option name.")
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise DomainError(f"Sampling preset {name} must be a number.")
        if not math.isfinite(number):
            raise DomainError(f"Sampling preset {name} must be a finite number.")
        checked[name] = number
    return checked


def sampling_to_send(value: object) -> dict[str, float | int]:
    """The presets of a stored row, leaving out anything `sampling_check` would refuse (a row
    written before the check, or by hand): a bad preset must not fail every call."""
    if not isinstance(value, Mapping):
        return {}
    return {
        name: number
        for name, number in value.items()
        if isinstance(name, str)
        and not isinstance(number, bool)
        and isinstance(number, int | float)
        and math.isfinite(number)
    }
