"""Static files are read once per process and set-up (lexweb/static_files.py), and served alike.

Every Django test client makes its own middleware; before, each read the whole table of static
files again (about 20 ms of CPU, a fifth of the fast tier)."""

import warnings
from pathlib import Path

import httpx
import pytest
from django.conf import settings
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
