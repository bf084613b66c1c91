"""Issue 8, requirement 9: one way to defer work, and the dev/demo package outside the product.

- A services or selectors module never imports a tasks module (not even inside a function to
  dodge an import cycle): services defer jobs by task name,
  `app.configure_task(name=...).defer(...)`.
- No product module (apps/, lexweb/, manage.py) imports `lexweb_dev` (fake backends, demo),
  and the product, copied without it, passes `manage.py check` and imports every module.

The import walk reads every module's syntax tree, so a new module is covered without a list.
"""

import ast
import contextlib
import functools
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import BASE_DIR, database_url_for_tests
from tests.running import START_TIMEOUT, free_port, launcher_env

DEV_PACKAGE = "lexweb_dev"
PRODUCT_PACKAGES = ("apps", "lexweb")
# What a product install holds: its code and the files it reads at run time.
PRODUCT_TREE = ("apps", "lexweb", "templates", "static", "examples", "manage.py", "pyproject.toml")


def product_modules(root: Path = BASE_DIR) -> dict[str, Path]:
    """Dotted module name → file, for every Python file of the product."""
    modules = {"manage": root / "manage.py"}
    for package in PRODUCT_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


@functools.cache
def import_nodes(source: str) -> tuple[ast.AST, ...]:
    """The import statements and dynamic imports of `source`, anywhere in it. Parsed once per
    text: the checks below read every product module, each several times."""
    return tuple(
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        or (isinstance(node, ast.Call) and _is_dynamic_import(node))
    )


def imported_names(source: str, module: str, *, is_package: bool = False) -> set[str]:
    """Every module name `source` imports, anywhere in it (functions included), resolved to
    absolute names. `from a.b import c` yields both `a.b` and `a.b.c` (c may be a module);
    `importlib.import_module("x")` and `__import__("x")` with a literal name yield `x`."""
    names: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in import_nodes(source):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and _is_dynamic_import(node):
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
    return names


def _is_dynamic_import(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in {"import_module", "__import__"} and bool(node.args)


def is_service_or_selector(module: str) -> bool:
    return any(
        part in {"services", "selectors"} or part.endswith(("_services", "_selectors"))
        for part in module.split(".")[1:]
    )


def layering_problems(modules: dict[str, str]) -> list[str]:
    """The rule breaks in `modules` (dotted name → source), one line each."""
    problems: list[str] = []
    for module, source in sorted(modules.items()):
        is_package = module in {m.rpartition(".")[0] for m in modules}
        names = imported_names(source, module, is_package=is_package)
        if is_service_or_selector(module):
            # `from x.tasks import t` names both x.tasks and x.tasks.t: report x.tasks once.
            tasks = {name.partition(".tasks.")[0] + ".tasks" for name in names if ".tasks." in name}
            tasks.update(name for name in names if name.split(".")[-1] == "tasks")
            problems.extend(
                f"{module} imports {name}: defer the job by its task name instead "
                '(app.configure_task(name="...").defer(...))'
                for name in sorted(tasks)
            )
        if any(name == DEV_PACKAGE or name.startswith(DEV_PACKAGE + ".") for name in names):
            problems.append(
                f"{module} imports {DEV_PACKAGE}: product code must run without the dev package"
            )
    return problems


@pytest.mark.slow
def test_no_service_or_selector_imports_a_tasks_module_and_no_product_module_the_dev_package() -> (
    None
):
    sources = {name: path.read_text(encoding="utf-8") for name, path in product_modules().items()}
    assert len(sources) > 100  # the walk found the product
    problems = layering_problems(sources)
    assert not problems, "\n".join(problems)


def _imports_of_apps_above(app: str, above: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{module} imports {name}"
        for module, path in product_modules().items()
        if module.startswith(f"apps.{app}.") or module == f"apps.{app}"
        for name in imported_names(path.read_text(encoding="utf-8"), module)
        if name.split(".")[:2] in (["apps", other] for other in above)
    )


def test_the_case_app_imports_no_app_above_it() -> None:
    # Issue 23 req 1 (a first edge): events reach a case's members through the registry each app
    # fills (apps.cases.events.case_event_types), not through imports of their event types.
    above = ("documents", "evidence", "verification", "drafting", "cluster", "operations")
    assert _imports_of_apps_above("cases", above) == []


def test_operations_imports_neither_drafting_nor_the_cluster_nor_the_api() -> None:
    # The apps above hook into recovery and the sweep (STALLED_HOOKS, AFTER_RECOVERY_HOOKS,
    # SWEEP_HOOKS, filled in their AppConfig.ready); operations calls none of them by name.
    above = ("verification", "drafting", "cluster", "api")
    assert _imports_of_apps_above("operations", above) == []


def test_the_layering_check_catches_each_way_of_breaking_the_rules() -> None:
    modules = {
        "apps.documents.services": textwrap.dedent(
            """
            def ingest():
                from apps.documents.tasks import document_extract_text_task
                document_extract_text_task.defer(document_id=1)
            """
        ),
        "apps.documents.production_services": "from apps.documents import tasks\n",
        "apps.cluster.services.health": "from .. import tasks\n",
        "apps.cases.selectors": "import apps.cases.tasks\n",
        "apps.cluster.views": "from lexweb_dev.fakebackend import FakeBackend\n",
        "lexweb.urls": 'import importlib\nimportlib.import_module("lexweb_dev.demo")\n',
        # Allowed: a task imports its services; a view imports services; names in strings.
        "apps.documents.tasks": "from apps.documents import services\n",
        "apps.cases.services": 'from procrastinate.contrib.django import app\nX = "tasks"\n',
    }

    problems = layering_problems(modules)

    assert [line.split(" imports ")[0] for line in problems] == [
        "apps.cases.selectors",
        "apps.cluster.services.health",
        "apps.cluster.views",
        "apps.documents.production_services",
        "apps.documents.services",
        "lexweb.urls",
    ]


def product_copy(product: Path) -> Path:
    """The product's files (PRODUCT_TREE) copied to `product`, without the dev package."""
    product.mkdir()
    for name in PRODUCT_TREE:
        source = BASE_DIR / name
        if source.is_dir():
            shutil.copytree(source, product / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, product / name)
    assert not (product / DEV_PACKAGE).exists()
    return product


@pytest.mark.django_db
@pytest.mark.slow
def test_the_product_copied_without_the_dev_package_passes_check_and_imports_every_module(
    tmp_path: Path,
) -> None:
    product = product_copy(tmp_path / "product")
    var = tmp_path / "var"
    # The upload spool (FILE_UPLOAD_TEMP_DIR, var/tmp) must exist for `check`.
    (var / "tmp").mkdir(parents=True)
    env = {
        "PATH": "/usr/bin:/bin",
        "DATABASE_URL": database_url_for_tests(),
        "LEXWEB_VAR_DIR": str(var),
        "DJANGO_SETTINGS_MODULE": "lexweb.settings",
    }
    modules = sorted(name for name in product_modules(product) if name != "manage")
    script = textwrap.dedent(
        f"""
        import importlib, importlib.util, sys
        import django
        assert importlib.util.find_spec({DEV_PACKAGE!r}) is None, "the dev package is reachable"
        django.setup()
        from django.conf import settings
        from django.core.management import get_commands
        assert {DEV_PACKAGE!r} not in settings.INSTALLED_APPS
        assert not settings.LEXWEB_DEV_TOOLS
        # The demo's commands and the verifier's evaluation harness are the dev package's.
        dev_commands = {{
            "fake_backend", "demo_backends", "demo_gpu_agent", "seed_demo", "seed_demo_site",
            "verify_eval",
        }}
        assert not dev_commands & set(get_commands()), "dev commands without the dev package"
        for name in {modules!r}:
            importlib.import_module(name)
        assert {DEV_PACKAGE!r} not in sys.modules
        print("imported", len({modules!r}))
        """
    )

    check = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=product,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    imports = subprocess.run(
        [sys.executable, "-c", script],
        cwd=product,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert (check.returncode, check.stderr) == (0, "")
    assert "System check identified no issues" in check.stdout
    assert (imports.returncode, imports.stderr) == (0, "")
    assert imports.stdout.strip() == f"imported {len(modules)}"


@pytest.mark.product
def test_make_run_without_the_dev_package_serves_the_product_and_skips_the_demo(
    tmp_path: Path, var_dir: Path
) -> None:
    product = product_copy(tmp_path / "product")
    port = free_port()
    env = launcher_env(var_dir, port)
    env.pop("PYTHONPATH", None)  # nothing may lead back to this checkout's lexweb_dev
    launcher = subprocess.Popen(
        [sys.executable, "-m", "lexweb.launcher", "run"],
        cwd=product,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        health = answered(launcher, f"http://127.0.0.1:{port}/healthz", deadline=START_TIMEOUT)
    finally:
        launcher.send_signal(signal.SIGINT)
        output, _ = launcher.communicate(timeout=90)

    assert (health, launcher.returncode) == (200, 0), output
    assert "Unknown command" not in output
    assert "Demo" not in output and "demo_backends" not in output


def answered(process: subprocess.Popen[str], url: str, *, deadline: float) -> int | None:
    """The status of the first answer at `url` within `deadline` seconds; None if nothing
    answered, or as soon as `process` exits."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        with contextlib.suppress(httpx.TransportError):
            return httpx.get(url, timeout=5).status_code
        # The pause between polls waits on the process, so one that exits ends it at once.
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.5)
            return None
    return None


# --- The order of the apps (issue 23 req 1) ----------------------------------------------------

# Lowest first: an app may import the apps before it, never one after it
# (docs/architecture/modules.md, "The order of the apps").
APP_ORDER = (
    "accounts",
    "cases",
    "documents",
    "evidence",
    "operations",
    "cluster",
    "verification",
    "drafting",
    "api",
)
# The upward edges that remain, each to be removed (docs/status.md, "The code and its
# structure"); no other may appear. An edge removed must leave this list in the same change:
# `test_every_listed_upward_edge_still_exists` says which. None is left: an app above reaches
# into one beneath through a registry that app fills in its AppConfig.ready.
UPWARD_EDGES_LEFT: set[tuple[str, str]] = set()


def _app_edges() -> dict[tuple[str, str], list[str]]:
    """(app, app it imports) -> 'module imports name' lines, for every import between apps,
    top-level and inside functions alike."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, path in product_modules().items():
        parts = module.split(".")
        if parts[0] != "apps" or len(parts) < 2:
            continue
        is_package = path.name == "__init__.py"
        for name in imported_names(path.read_text(encoding="utf-8"), module, is_package=is_package):
            target = name.split(".")
            if target[0] == "apps" and len(target) > 1 and target[1] != parts[1]:
                edges.setdefault((parts[1], target[1]), []).append(f"{module} imports {name}")
    return edges


@pytest.mark.slow
def test_apps_import_only_apps_beneath_them_but_for_the_listed_edges() -> None:
    edges = _app_edges()
    apps = {app for edge in edges for app in edge}
    assert apps <= set(APP_ORDER), f"apps missing from APP_ORDER: {apps - set(APP_ORDER)}"
    upward = {
        edge: lines
        for edge, lines in edges.items()
        if APP_ORDER.index(edge[1]) > APP_ORDER.index(edge[0])
    }
    new = {edge: lines for edge, lines in upward.items() if edge not in UPWARD_EDGES_LEFT}
    assert not new, "imports of apps above:\n" + "\n".join(
        line for lines in new.values() for line in sorted(lines)[:5]
    )


def test_every_listed_upward_edge_still_exists() -> None:
    """An edge removed leaves the list, so the list says what is left to do."""
    assert set(_app_edges()) >= UPWARD_EDGES_LEFT, UPWARD_EDGES_LEFT - set(_app_edges())


# --- No module loops (issue 23 req 1) ----------------------------------------------------------


def _module_edges(source: str, module: str, modules: set[str], *, is_package: bool) -> set[str]:
    """The product modules `source` imports, anywhere in it (inside functions and under
    TYPE_CHECKING too). `from pkg import sub` is an edge to the submodule `pkg.sub` only: a
    package's __init__ runs before any of its submodules, which is no dependency of the
    importer's."""
    package = module if is_package else module.rpartition(".")[0]
    edges: set[str] = set()
    for node in import_nodes(source):
        if isinstance(node, ast.Import):
            edges.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                edges.add(submodule if submodule in modules else base)
        elif isinstance(node, ast.Call) and _is_dynamic_import(node):
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                edges.add(first.value)
    return (edges & modules) - {module}


def module_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import one another in a loop (strongly connected, two or
    more), each sorted."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []
    for root in sorted(graph):
        if root in order:
            continue
        # Tarjan's algorithm, iteratively: (module, its edges not yet followed).
        work = [(root, iter(sorted(graph[root])))]
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, edges = work[-1]
            target = next(edges, None)
            if target is not None:
                if target not in order:
                    order[target] = low[target] = len(order)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[module] = min(low[module], order[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == order[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    loops.append(sorted(group))
    return sorted(loops)


def test_no_product_modules_import_one_another_in_a_loop() -> None:
    modules = product_modules()
    names = set(modules)
    graph = {
        module: _module_edges(
            path.read_text(encoding="utf-8"), module, names, is_package=path.name == "__init__.py"
        )
        for module, path in modules.items()
    }
    assert module_loops(graph) == []


def test_the_loop_check_finds_a_loop_through_a_function_level_import() -> None:
    sources = {
        "apps.a.one": "from apps.a import two\n",
        "apps.a.two": "def f():\n    from apps.a.three import g\n",
        "apps.a.three": "import apps.a.one\n",
        "apps.a.four": "from apps.a import one\n",
        "apps.a": "from apps.a.one import x\n",
    }
    graph = {
        module: _module_edges(source, module, set(sources), is_package=module == "apps.a")
        for module, source in sources.items()
    }
    assert module_loops(graph) == [["apps.a.one", "apps.a.three", "apps.a.two"]]
