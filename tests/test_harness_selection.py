"""tests/harness/selection.py and tests/conftest.py's `pytest_ignore_collect`: a file whose own
marks the run's `-m` rejects, whatever else its tests carry, is not imported; any other file is."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import conftest
from tests.harness.selection import file_marks, never_selected

FAST = "not browser and not product and not slow"  # make test-fast's


@pytest.mark.parametrize(
    ("expression", "marks", "left_out"),
    [
        (FAST, {"django_db", "slow"}, True),
        (FAST, {"product"}, True),
        ("not slow", {"slow", "django_db"}, True),
        ("slow", {"slow"}, False),
        ("slow", {"django_db"}, False),  # a test of the file may be marked slow itself
        ("product or browser", {"django_db"}, False),
        ("not browser", {"django_db"}, False),  # ... or not: it may be selected
        ("product and not slow", {"django_db", "slow"}, True),
        ("not (slow or product)", {"asyncio"}, False),
        (FAST, set(), False),  # a file with no marks of its own: its tests decide
        ("not slow and", {"slow"}, False),  # pytest says what is wrong with it
    ],
)
def test_a_file_is_left_out_only_when_no_test_of_it_could_be_selected(
    expression: str, marks: set[str], left_out: bool
) -> None:
    assert never_selected(expression, frozenset(marks)) is left_out


def test_a_files_marks_are_read_from_its_text_in_either_form(tmp_path: Path) -> None:
    one = tmp_path / "test_one.py"
    one.write_text("import pytest\n\npytestmark = pytest.mark.product  # launches\n")
    listed = tmp_path / "test_listed.py"
    listed.write_text(
        "import pytest\n\npytestmark = [\n    pytest.mark.django_db,\n    pytest.mark.slow,\n]\n"
    )
    none = tmp_path / "test_none.py"
    none.write_text("import pytest\n\n@pytest.mark.slow\ndef test_x():\n    pass\n")
    assert file_marks(one) == {"product"}
    assert file_marks(listed) == {"django_db", "slow"}
    assert file_marks(none) == set()  # a test's own mark is its own, not the file's
    assert file_marks(tmp_path / "missing.py") == set()


def test_the_api_fuzzing_is_not_imported_by_make_test_fast_and_is_by_make_test() -> None:
    fuzz = Path(conftest.__file__).parent / "api" / "test_schema_fuzz.py"
    access = Path(conftest.__file__).parent / "test_access_matrix.py"

    def ignored(path: Path, expression: str) -> bool | None:
        config = SimpleNamespace(getoption=lambda name: expression)
        return conftest.pytest_ignore_collect(path, config)  # type: ignore[arg-type]

    assert ignored(fuzz, FAST) is True
    assert ignored(fuzz, "") is None
    assert ignored(fuzz, "slow") is None
    assert ignored(access, FAST) is None
