"""The documentation stands alone: a short README whose links land, and every setting documented.

- README.md is at most README_MAX_LINES lines: what lexweb is and for whom, the commands, a map
  and links; the rest lives in docs/ (built by `make docs`; `make test` builds it with
  `mkdocs build --strict`, which fails on a broken link inside docs/, so it is not repeated
  here).
- Every relative link of the README names a file that exists.
- Every environment variable the product reads (`LEXWEB_*`, `DATABASE_URL`, `REDIS_URL`, read
  in lexweb/settings.py and by the launcher) is named in the configuration reference.

The variables are found by reading the modules' syntax trees, so a new setting is covered
without a list.
"""

import ast
import re
from pathlib import Path

from tests.conftest import BASE_DIR

README = BASE_DIR / "README.md"
CONFIGURATION = BASE_DIR / "docs" / "reference" / "configuration.md"
README_MAX_LINES = 250
# The modules that read the environment: settings, and the launcher before Django starts.
ENVIRONMENT_READERS = (BASE_DIR / "lexweb" / "settings.py", BASE_DIR / "lexweb" / "launcher.py")
VARIABLE = re.compile(r"LEXWEB_[A-Z0-9_]+|DATABASE_URL|REDIS_URL")
# lexweb.env's typed readers, os.environ.get and os.getenv: the variable is the first argument.
READER_CALLS = {"env_str", "env_bool", "env_int", "env_list", "env_secret", "get", "getenv"}
# [text](target), not an image; the target up to a space or the closing parenthesis.
MARKDOWN_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def variables_read(source: str) -> set[str]:
    """The environment variables `source` reads: the first argument of a typed reader,
    `os.environ.get` or `os.getenv`, and `os.environ["X"]` when read (not assigned)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        literal = _variable_literal(node)
        if (
            isinstance(literal, ast.Constant)
            and isinstance(literal.value, str)
            and VARIABLE.fullmatch(literal.value)
        ):
            names.add(literal.value)
    return names


def _variable_literal(node: ast.AST) -> ast.expr | None:
    """The expression naming the variable `node` reads, if it reads one."""
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return node.args[0] if called in READER_CALLS else None
    if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)):
        return None
    reads_environ = isinstance(node.value, ast.Attribute) and node.value.attr == "environ"
    return node.slice if reads_environ else None


def documented_variables(markdown: str) -> set[str]:
    """Variables named in code spans (`LEXWEB_X`) of a page."""
    return {name for span in re.findall(r"`([^`]+)`", markdown) for name in VARIABLE.findall(span)}


def missing_link_targets(markdown: str, base: Path) -> list[str]:
    """Relative link targets of `markdown` that name no file or folder under `base`."""
    missing = []
    for target in MARKDOWN_LINK.findall(markdown):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # another site (https:, mailto:) or an anchor of the page itself
        path = target.split("#", 1)[0]
        if not (base / path).exists():
            missing.append(target)
    return missing


def test_readme_is_at_most_250_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()

    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; keep it to {README_MAX_LINES} "
        "(what lexweb is and for whom, the commands, the map, links) and move the rest to docs/."
    )


def test_readme_links_name_files_that_exist() -> None:
    readme = README.read_text(encoding="utf-8")
    targets = MARKDOWN_LINK.findall(readme)

    assert any(target.startswith("docs/") for target in targets), "the README links no docs page"
    assert missing_link_targets(readme, BASE_DIR) == []


def test_a_link_to_a_missing_page_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("# Here\n", encoding="utf-8")
    markdown = (
        "[here](docs/here.md) [anchor](docs/here.md#part) [site](https://example.org/x.md) "
        "[self](#map) ![picture](docs/gone.png) [gone](docs/gone.md) [gone too](docs/x/y.md#z)"
    )

    assert missing_link_targets(markdown, tmp_path) == ["docs/gone.md", "docs/x/y.md#z"]


def test_every_variable_the_product_reads_is_in_the_configuration_reference() -> None:
    read = set().union(
        *(variables_read(p.read_text(encoding="utf-8")) for p in ENVIRONMENT_READERS)
    )
    documented = documented_variables(CONFIGURATION.read_text(encoding="utf-8"))

    # The walk finds the settings (a walk that found nothing would pass anything).
    assert {"LEXWEB_SECRET_KEY", "LEXWEB_HOST", "DATABASE_URL", "LEXWEB_MAX_UPLOAD_BYTES"} <= read
    assert sorted(read - documented) == [], (
        "document these in docs/reference/configuration.md (default, bounds, meaning)"
    )


def test_the_walk_sees_each_way_of_reading_the_environment() -> None:
    source = (
        'A = env_int("LEXWEB_A", 1, minimum=0)\n'
        'B = env_secret("LEXWEB_B")\n'
        'C = os.environ.get("LEXWEB_C") or "x"\n'
        'D = os.environ["LEXWEB_D"]\n'
        'os.environ["LEXWEB_WRITTEN"] = "1"\n'
        'E = os.getenv("REDIS_URL")\n'
        'F = env_str("NOT_OURS")\n'
    )

    assert variables_read(source) == {"LEXWEB_A", "LEXWEB_B", "LEXWEB_C", "LEXWEB_D", "REDIS_URL"}
