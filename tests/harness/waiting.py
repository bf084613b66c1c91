"""The one way the slow tiers wait: poll a condition until it holds, never a fixed sleep."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T], timeout: float, what: str, *, interval: float = 0.1
) -> T:
    """Call `predicate` until it returns something truthy, and return that; fail with `what`
    (what was being waited for) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)
