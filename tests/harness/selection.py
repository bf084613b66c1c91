"""Which test files a run's `-m` leaves out whole, known before they are imported.

pytest deselects by marker after collecting, and collecting a file imports it and builds its
tests: the API's fuzzing (`tests/api/test_schema_fuzz.py`, marked `slow` as a file) spends a
third of a worker's collection building 335 schemathesis tests that `make test-fast` then
deselects. A file that marks every one of its tests (`pytestmark = ...` at its top level, read
from its text) with marks the run's expression rejects, whatever other marks its tests carry,
is not collected at all (`tests/conftest.py`'s `pytest_ignore_collect`)."""

import itertools
import re
from pathlib import Path

from _pytest.mark.expression import Expression, ExpressionMatcher

# A file's own marks: `pytestmark = pytest.mark.x` or a list of them, at its top level.
_FILE_MARKS = re.compile(r"^pytestmark\s*=\s*(\[[^\]]*\]|[^\n]*)", re.MULTILINE)
_MARK = re.compile(r"pytest\.mark\.(\w+)")
_NAME = re.compile(r"[\w.:+\-]+")
_WORDS = frozenset({"and", "or", "not"})
# Past this many other names in the expression, no file is left out (2**n evaluations).
_MOST_NAMES = 8


def file_marks(path: Path) -> frozenset[str]:
    """The marks `path` gives all its tests, as its text writes them."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return frozenset()
    found = _FILE_MARKS.search(text)
    return frozenset(_MARK.findall(found.group(1))) if found else frozenset()


def never_selected(expression: str, marks: frozenset[str]) -> bool:
    """Whether `expression` (a `-m` expression) rejects every test that carries `marks`,
    whatever other marks it carries. False for an expression pytest would refuse: pytest says
    why when it reads it."""
    if not marks:
        return False
    try:
        compiled = Expression.compile(expression)
    except SyntaxError:
        return False
    others = sorted(set(_NAME.findall(expression)) - _WORDS - marks)
    if len(others) > _MOST_NAMES:
        return False
    for values in itertools.product((False, True), repeat=len(others)):
        carried = marks | {name for name, on in zip(others, values, strict=True) if on}
        if compiled.evaluate(_carrying(carried)):
            return False
    return True


def _carrying(carried: frozenset[str]) -> ExpressionMatcher:
    def matcher(name: str, /, **kwargs: str | int | bool | None) -> bool:
        return name in carried

    return matcher
