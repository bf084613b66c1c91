"""The verifier's checks are modules of functions over (claim, index, context), importing one
another only downward (issue 23 req 2; the order is written in the package's docstring)."""

import ast
import inspect
from pathlib import Path

import pytest

import apps.verification.checks as checks_package
from apps.verification.checks import cases, context, quotes, record, references, values

PACKAGE = Path(checks_package.__file__).parent
ORDER = [
    "context",
    "weighing",
    "support",
    "record",
    "references",
    "values",
    "quotes",
    "cases",
    "__init__",
]
ENTRY_CHECKS = [
    (record, "record_cite"),
    (references, "not_a_record_cite"),
    (values, "value"),
    (quotes, "quote"),
    (cases, "case_citation"),
]
# What Context answers of the draft itself; everything that judges a claim is a function.
CONTEXT_METHODS = {
    "__init__",
    "segment",
    "previous_sentence",
    "closing_cite",
    "members",
    "place_of",
    "following",
    "key_terms",
    "cite_pages",
    "named_pages",
    "document_set",
    "sentence_of",
    "page_values",
}
LONGEST = 700  # lines: the one module of 2,400 lines is what this replaced


def _modules() -> dict[str, ast.Module]:
    return {
        path.stem: ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(PACKAGE.glob("*.py"))
    }


def test_the_package_holds_the_modules_of_its_order_and_none_is_long() -> None:
    assert sorted(_modules()) == sorted(ORDER)
    for path in PACKAGE.glob("*.py"):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= LONGEST, f"{path.name}: {lines} lines"


@pytest.mark.parametrize(("module", "name"), ENTRY_CHECKS, ids=[n for _, n in ENTRY_CHECKS])
def test_each_kinds_check_is_a_function_of_claim_index_and_context(
    module: object, name: str
) -> None:
    function = getattr(module, name)
    assert inspect.isfunction(function)
    assert list(inspect.signature(function).parameters) == ["claim", "index", "ctx"]


def test_only_the_context_has_methods_and_they_read_the_draft_only() -> None:
    for name, tree in _modules().items():
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            methods = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
            if name == "context" and node.name == "Context":
                assert methods == CONTEXT_METHODS
            else:
                assert not methods, f"{name}.{node.name} has methods: {sorted(methods)}"
    assert set(vars(context.Context)) >= CONTEXT_METHODS


@pytest.mark.slow
def test_each_module_imports_only_modules_before_it() -> None:
    prefix = "apps.verification.checks"
    for name, tree in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(prefix):
                imported = (node.module or "").removeprefix(prefix).lstrip(".") or "__init__"
                assert ORDER.index(imported) < ORDER.index(name), f"{name} imports {imported}"
            elif isinstance(node, ast.Import):
                assert not any(alias.name.startswith(prefix) for alias in node.names), name
