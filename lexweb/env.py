"""Typed readers for the environment. Only `lexweb.settings` and the launcher call these."""

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {raw!r}.")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {raw!r}.") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {value}.")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_seconds_list(name: str, default: list[int], *, maximum: int = 3600) -> list[int]:
    """Whole seconds separated by commas ("5,15,30"); empty: none."""
    seconds = []
    for item in env_list(name, [str(value) for value in default]):
        if not item.isdigit() or int(item) > maximum:
            raise ImproperlyConfigured(
                f"{name} must be whole seconds from 0 to {maximum} separated by commas, such as "
                f"{','.join(str(value) for value in default) or '5,15,30'!r}, not {item!r} in it."
            )
        seconds.append(int(item))
    return seconds


def env_secret(name: str, default: str = "") -> str:
    """Read NAME, or the contents of the file named by NAME_FILE (for Docker/systemd secrets)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE points to {path}: {exc.strerror}.") from None
    return os.environ.get(name, default)
