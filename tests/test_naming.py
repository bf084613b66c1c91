"""Issue 23, requirement 2: one naming scheme for services and selectors.

The scheme is written in docs/architecture/modules.md ("Naming services and selectors"): the
entity first, then what happens to it or what is read of it (`document_ingest`,
`case_get_for_user`, `case_is_lawyer`), never a verb first (`create_document`,
`is_case_lawyer`). This test reads every services and selectors module's syntax tree, so a
new module is covered without a list.
"""

import ast
from pathlib import Path

import pytest

from tests.conftest import BASE_DIR

# Words that start a verb-first name: a question (`is_`, `has_`, `can_`), a verb, or an
# adjective before its entity (`latest_versions` is `draft_latest_versions`).
VERB_FIRST = frozenset(
    {
        "is",
        "has",
        "can",
        "get",
        "create",
        "update",
        "delete",
        "list",
        "set",
        "make",
        "mark",
        "add",
        "remove",
        "find",
        "fetch",
        "load",
        "build",
        "open",
        "latest",
        "stamp",
        "grow",
        "reauthenticate",
    }
)
# Left as they are, on purpose (modules.md says why): the dispatch's two calls, read as
# "a chat" and "a chat for a role".
EXCEPTIONS = frozenset(
    {"apps.cluster.services.dispatch.chat", "apps.cluster.services.dispatch.chat_for_role"}
)
PATTERNS = (
    "apps/*/services.py",
    "apps/*/*_services.py",
    "apps/*/services/*.py",
    "apps/*/selectors.py",
    "apps/*/*_selectors.py",
    "apps/*/selectors/*.py",
)


def layer_modules(root: Path = BASE_DIR) -> dict[str, Path]:
    """Dotted module name → file, for every services and selectors module of the apps."""
    found = {}
    for pattern in PATTERNS:
        for path in root.glob(pattern):
            found[".".join(path.relative_to(root).with_suffix("").parts)] = path
    return found


def public_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("_")
    ]


def test_the_scan_finds_the_layers() -> None:
    modules = layer_modules()
    assert "apps.documents.services" in modules and "apps.cases.selectors" in modules
    assert "apps.cluster.services.dispatch" in modules
    assert "apps.evidence.selectors.registry" in modules
    assert "apps.documents.production_selectors" in modules


@pytest.mark.slow
def test_services_and_selectors_name_the_entity_first() -> None:
    wrong = sorted(
        f"{module}.{name}"
        for module, path in layer_modules().items()
        for name in public_functions(path)
        if name.split("_")[0] in VERB_FIRST and f"{module}.{name}" not in EXCEPTIONS
    )
    assert not wrong, f"verb first; name the entity first (modules.md): {wrong}"


def test_a_verb_first_name_is_caught(tmp_path: Path) -> None:
    module = tmp_path / "apps" / "things" / "services.py"
    module.parent.mkdir(parents=True)
    module.write_text("def create_thing():\n    pass\n\n\ndef thing_create():\n    pass\n")
    modules = layer_modules(tmp_path)
    assert list(modules) == ["apps.things.services"]
    names = public_functions(modules["apps.things.services"])
    assert [name for name in names if name.split("_")[0] in VERB_FIRST] == ["create_thing"]
