"""Issue 22 requirement 4 (part): a specific, stable code for every error, and a table of them
in the docs. Every DomainError's code that the API can answer with is in
docs/reference/errors.md, every code the table lists is one the code base can give, and the
schema's error body says them all (`code` is an enum of exactly the table's codes)."""

import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

import apps
from apps.api.api import HANDLER_CODES
from lexweb.errors import DomainError

TABLE = Path(settings.BASE_DIR) / "docs" / "reference" / "errors.md"
SOURCES = [Path(settings.BASE_DIR) / name for name in ("apps", "lexweb")]


def _documented() -> set[str]:
    """The codes of the table's first column (a row may list several: `a`, `b`)."""
    codes: set[str] = set()
    for cell in re.findall(r"^\| (`[a-z_]+`(?:, `[a-z_]+`)*) \|", TABLE.read_text(), re.M):
        codes |= set(re.findall(r"`([a-z_]+)`", cell))
    return codes


def _import_everything() -> None:
    """Every module of apps/ (but migrations), so every error class is defined whichever tests
    ran before in this process."""
    for module in pkgutil.walk_packages(apps.__path__, "apps."):
        if ".migrations" not in module.name:
            importlib.import_module(module.name)


def _error_classes() -> set[type[DomainError]]:
    _import_everything()
    found: set[type[DomainError]] = set()
    todo = [DomainError]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_domain_error_code_is_in_the_table() -> None:
    documented = _documented()
    missing = {
        f"{cls.__module__}.{cls.__qualname__}: {cls.code}"
        for cls in _error_classes()
        if cls.code not in documented and cls.__module__.startswith(("apps.", "lexweb."))
    }
    assert not missing, f"codes not in {TABLE.name}: {sorted(missing)}"


def test_every_code_in_the_table_is_given_somewhere() -> None:
    source = "\n".join(
        path.read_text()
        for root in SOURCES
        for path in root.rglob("*.py")
        if "tests" not in path.parts
    )
    given = {cls.code for cls in _error_classes()} | HANDLER_CODES
    quoted = set(re.findall(r'"([a-z_]+)"', source))
    stale = {code for code in _documented() if code not in given and code not in quoted}
    assert not stale, f"codes in {TABLE.name} that nothing gives: {sorted(stale)}"
    assert _documented() >= HANDLER_CODES


def test_every_domain_error_says_its_status_and_the_edges_answer_with_it() -> None:
    # One table of errors to statuses: each class's `status` (lexweb/errors.py). The API and the
    # browser views answer with it; no edge keeps a table of its own.
    from django.test import RequestFactory

    from apps.api.api import _domain_error

    request = RequestFactory().get("/api/v1/me")
    for cls in _error_classes():
        assert 400 <= cls.status < 600, cls
        error = cls.__new__(cls)
        error.message, error.retry_after = "refused", 5
        assert _domain_error(request, error).status_code == cls.status, cls
    own_tables = [
        path
        for root in SOURCES
        for path in root.rglob("*.py")
        if re.search(
            r"isinstance\(exc, (NotFound|Conflict|PermissionDenied)\)\s*:\s*\n\s*return 4",
            path.read_text(),
        )
    ]
    assert own_tables == []


@pytest.mark.slow
def test_the_schema_lists_the_tables_codes_as_the_error_bodys_enum(client: Client) -> None:
    schema = client.get("/api/v1/openapi.json").json()
    code = schema["components"]["schemas"]["ErrorOut"]["properties"]["code"]

    assert code["type"] == "string"
    assert set(code["enum"]) == _documented()
