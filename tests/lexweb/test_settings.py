"""Settings read the environment through typed helpers: a bad value is one clear error."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.running import BASE_DIR


def _settings_probe(env: dict[str, str], expression: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'lexweb.settings');"
        "from django.conf import settings;"
        f"print({expression})"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env={"PATH": "/usr/bin:/bin", "LEXWEB_VAR_DIR": str(BASE_DIR / "var"), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_redis_url_switches_the_channel_layer_to_redis() -> None:
    result = _settings_probe(
        {"REDIS_URL": "redis://127.0.0.1:6379/3"},
        "settings.CHANNEL_LAYERS['default']['BACKEND']",
    )

    assert result.stdout.strip() == "channels_redis.core.RedisChannelLayer", result.stderr


def test_default_channel_layer_is_postgres_with_a_complete_database_dict() -> None:
    result = _settings_probe({}, "sorted(settings.CHANNEL_LAYERS['default']['CONFIG'])")

    keys = result.stdout.strip()
    for key in ("ENGINE", "NAME", "USER", "PASSWORD", "HOST", "PORT", "OPTIONS", "TIME_ZONE"):
        assert f"'{key}'" in keys, result.stderr


def test_database_url_is_used_when_set() -> None:
    result = _settings_probe(
        {"DATABASE_URL": "postgres://u:p@db.firm.test:5433/lexweb_prod"},
        "settings.DATABASES['default']['HOST'], settings.DATABASES['default']['NAME']",
    )

    assert result.stdout.strip() == "db.firm.test lexweb_prod", result.stderr


@pytest.mark.parametrize(
    "env, message",
    [
        ({"LEXWEB_DEBUG": "maybe"}, "LEXWEB_DEBUG must be true or false, not 'maybe'."),
        ({"LEXWEB_SESSION_SECONDS": "soon"}, "LEXWEB_SESSION_SECONDS must be a whole number"),
        ({"LEXWEB_SESSION_SECONDS": "10"}, "LEXWEB_SESSION_SECONDS must be at least 300"),
        ({"LEXWEB_SECRET_KEY": "short"}, "LEXWEB_SECRET_KEY must be at least 32 characters."),
        ({"DATABASE_URL": "mysql://u@h/db"}, "DATABASE_URL must point to PostgreSQL"),
        ({"LEXWEB_ADMIN_PASSWORD_FILE": "/nonexistent/pw"}, "LEXWEB_ADMIN_PASSWORD_FILE points"),
        ({"LEXWEB_CLUSTER_HEALTH_CRON": "every minute"}, "LEXWEB_CLUSTER_HEALTH_CRON must be"),
        (
            {"LEXWEB_CLUSTER_WORKER_CONCURRENCY": "0"},
            "LEXWEB_CLUSTER_WORKER_CONCURRENCY must be at least 1, not 0.",
        ),
        ({"LEXWEB_DEMO_BACKEND_PORT": "80"}, "LEXWEB_DEMO_BACKEND_PORT must be at least 1024"),
        (
            {"LEXWEB_DATABASE_RESTART_SECONDS": "1,soon"},
            "LEXWEB_DATABASE_RESTART_SECONDS must be whole seconds from 0 to 600 separated by "
            "commas, such as '2,4,8,16', not 'soon' in it.",
        ),
        (
            {"LEXWEB_DATABASE_RESTART_SECONDS": "601"},
            "LEXWEB_DATABASE_RESTART_SECONDS must be whole seconds from 0 to 600",
        ),
        (
            {"LEXWEB_STAGE_RETRY_SECONDS": "-5"},
            "LEXWEB_STAGE_RETRY_SECONDS must be whole seconds from 0 to 3600 separated by commas, "
            "such as '5,15,30', not '-5' in it.",
        ),
        (
            {"LEXWEB_DEMO_BACKEND_PORT": "65535"},
            "LEXWEB_DEMO_BACKEND_PORT must leave room for the demo's backends below 65536, "
            "not 65535.",
        ),
    ],
)
def test_bad_settings_fail_with_a_message_naming_the_variable(
    env: dict[str, str], message: str
) -> None:
    result = _settings_probe(env, "settings.DEBUG")

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr


def test_secrets_can_come_from_files(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("k" * 40 + "\n")

    result = _settings_probe({"LEXWEB_SECRET_KEY_FILE": str(key_file)}, "settings.SECRET_KEY")

    assert result.stdout.strip() == "k" * 40, result.stderr
