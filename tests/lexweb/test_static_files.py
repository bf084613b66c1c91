"""Static files are read once per process and set-up (lexweb/static_files.py), and served alike.

Every Django test client makes its own middleware; before, each read the whole table of static
files again (about 20 ms of CPU, a fifth of the fast tier)."""

import os
import warnings
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client, override_settings

from lexweb.static_files import StaticFilesMiddleware
from tests.harness.sse import served_asgi


def _table(**overrides: object) -> dict[str, object]:
    with override_settings(**overrides):
        return StaticFilesMiddleware(lambda request: None).files


def test_middlewares_made_with_one_set_up_share_one_table_read_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = _table()
    assert "/static/lexweb/app.css" in first
    reads: list[str] = []
    original = StaticFilesMiddleware.add_file_to_dictionary

    def counting(self: StaticFilesMiddleware, url: str, *args: object, **kwargs: object) -> None:
        reads.append(url)
        original(self, url, *args, **kwargs)

    monkeypatch.setattr(StaticFilesMiddleware, "add_file_to_dictionary", counting)
    assert _table() is first
    assert reads == []


def test_another_set_up_reads_its_own_table(tmp_path: Path) -> None:
    (tmp_path / "only-here.txt").write_text("x")
    table = _table(STATIC_ROOT=str(tmp_path), WHITENOISE_USE_FINDERS=False)
    assert list(table) == ["/static/only-here.txt"]
    assert _table() is not table


def test_with_autorefresh_nothing_is_shared_and_files_are_found_on_each_request(
    tmp_path: Path,
) -> None:
    with override_settings(
        STATIC_ROOT=str(tmp_path), WHITENOISE_USE_FINDERS=False, WHITENOISE_AUTOREFRESH=True
    ):
        first = StaticFilesMiddleware(lambda request: None)
        second = StaticFilesMiddleware(lambda request: None)
        assert first.files == {} and second.files is not first.files
        (tmp_path / "later.txt").write_text("written after the middleware was made")
        assert second.find_file("/static/later.txt") is not None


@pytest.mark.django_db
def test_a_static_file_is_served_by_every_client() -> None:
    for _ in range(2):
        response = Client().get("/static/lexweb/app.css")
        assert response.status_code == 200
        assert response.getvalue()


@pytest.mark.django_db(transaction=True)
def test_under_asgi_a_static_file_is_sent_a_block_at_a_time_with_its_headers() -> None:
    """Served by uvicorn as `make run` serves it: whole, with WhiteNoise's caching headers, and
    without Django reading it whole into memory first (its "must consume synchronous
    iterators" warning)."""
    expected = (Path(settings.BASE_DIR) / "static" / "lexweb" / "app.css").read_bytes()
    with warnings.catch_warnings(record=True) as caught, served_asgi() as url:
        warnings.simplefilter("always")
        response = httpx.get(f"{url}/static/lexweb/app.css", timeout=30)
    assert response.status_code == 200
    assert response.content == expected
    assert response.headers["content-type"].startswith("text/css")
    assert "max-age" in response.headers["cache-control"]
    assert not [w for w in caught if "must consume synchronous iterators" in str(w.message)]


# --- collectstatic's compressed copies (lexweb.static_files.CompressedStaticFiles) ----------

_TEXT = "body { color: #123456; }\n" * 400  # compresses well


def _collect(source: Path, root: Path) -> None:
    with override_settings(  # the storage is made anew for a new STATIC_ROOT
        STATICFILES_DIRS=[str(source)],
        STATIC_ROOT=str(root),
        STATICFILES_FINDERS=["django.contrib.staticfiles.finders.FileSystemFinder"],
    ):
        call_command("collectstatic", interactive=False, verbosity=0)


def _mark(copy: Path) -> None:
    """Write a marker into a compressed copy, keeping its date (what a kept copy keeps)."""
    dates = copy.stat()
    copy.write_bytes(b"kept")
    os.utime(copy, ns=(dates.st_atime_ns, dates.st_mtime_ns))


def test_a_second_collectstatic_keeps_the_copies_of_files_that_did_not_change(
    tmp_path: Path,
) -> None:
    source, root = tmp_path / "source", tmp_path / "root"
    source.mkdir()
    (source / "site.css").write_text(_TEXT)
    _collect(source, root)
    brotli, gzip = root / "site.css.br", root / "site.css.gz"
    assert brotli.stat().st_size < len(_TEXT) / 10 and gzip.exists()
    _mark(brotli)
    _mark(gzip)

    _collect(source, root)

    assert brotli.read_bytes() == b"kept" and gzip.read_bytes() == b"kept"


def test_a_changed_file_is_compressed_again_and_a_stale_copy_never_stays(tmp_path: Path) -> None:
    source, root = tmp_path / "source", tmp_path / "root"
    source.mkdir()
    css, script = source / "site.css", source / "app.js"
    css.write_text(_TEXT)
    script.write_text("let x = 1;\n" * 500)
    _collect(source, root)
    _mark(root / "site.css.br")
    _mark(root / "app.js.br")
    later = css.stat().st_mtime + 10
    css.write_text(_TEXT + "p { margin: 0; }\n" * 300)
    script.write_bytes(os.urandom(8000))  # no longer worth compressing
    for changed in (css, script):
        os.utime(changed, (later, later))

    _collect(source, root)

    assert (root / "site.css.br").read_bytes() != b"kept"
    assert len((root / "site.css.br").read_bytes()) > 10
    assert not (root / "app.js.br").exists() and not (root / "app.js.gz").exists()


def test_source_maps_are_not_compressed(tmp_path: Path) -> None:
    source, root = tmp_path / "source", tmp_path / "root"
    source.mkdir()
    (source / "bundle.js.map").write_text('{"mappings": "' + "AAAA," * 2000 + '"}')
    (source / "bundle.js").write_text("let y = 2;\n" * 500)
    _collect(source, root)
    assert sorted(p.name for p in root.iterdir()) == [
        "bundle.js",
        "bundle.js.br",
        "bundle.js.gz",
        "bundle.js.map",
    ]
