"""`manage.py fake_backend`: serves until SIGINT, and refuses a bad number or a busy port in one
line."""

import re
import signal
import socket
import subprocess
import sys

import httpx
import pytest

from tests.harness.commands import command_as_process
from tests.running import BASE_DIR, read_until


def fake_backend(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "manage.py", "fake_backend", *args],
        cwd=BASE_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_serves_until_sigint_then_exits_0() -> None:
    process = fake_backend("--kind", "llama_cpp", "--port", "0", "--slots", "3")
    try:
        line = read_until(process, "fake llama_cpp backend at http://127.0.0.1:", timeout=60)
        url = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert url is not None
        assert httpx.get(f"{url.group()}/health").json() == {"status": "ok"}
        assert len(httpx.get(f"{url.group()}/slots").json()) == 3
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("port", ["http", "70000", "busy"])
def test_bad_or_busy_port_is_one_clear_line_and_exit_1(port: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        number = str(taken.getsockname()[1]) if port == "busy" else port
        ran = command_as_process("fake_backend", "--kind", "ollama", "--port", number)

    assert ran.returncode == 1
    assert "Traceback" not in ran.stderr
    message = ran.stderr.strip().splitlines()[-1]
    expected = "it is in use" if port == "busy" else "must be a number from 0 to 65535"
    assert message.startswith("CommandError:") and expected in message


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--tokens-per-second", "nan", "--tokens-per-second must be a finite number of at least 0"),
        ("--tokens-per-second", "inf", "--tokens-per-second must be a finite number of at least 0"),
        ("--tokens-per-second", "-1", "--tokens-per-second must be a finite number of at least 0"),
        ("--tokens-per-second", "fast", "--tokens-per-second must be a finite number"),
        ("--context", "0", "--context must be a whole number of at least 1, not '0'."),
        ("--context", "-4096", "--context must be a whole number of at least 1, not '-4096'."),
        ("--slots", "0", "--slots must be a whole number of at least 1, not '0'."),
        ("--slots", "-2", "--slots must be a whole number of at least 1, not '-2'."),
        ("--slots", "1.5", "--slots must be a whole number of at least 1, not '1.5'."),
        ("--loading-seconds", "-1", "--loading-seconds must be a finite number of at least 0"),
        ("--loading-seconds", "nan", "--loading-seconds must be a finite number of at least 0"),
    ],
)
def test_bad_numbers_are_one_clear_line_and_exit_1(option: str, value: str, expected: str) -> None:
    # `--opt=value`, so that argparse reads "-1" as the value and not as another option.
    ran = command_as_process(
        "fake_backend", "--kind", "llama_cpp", "--port", "0", f"{option}={value}"
    )

    assert ran.returncode == 1
    assert "Traceback" not in ran.stderr
    [line] = ran.stderr.strip().splitlines()
    assert line.startswith("CommandError: ")
    assert expected in line and repr(value) in line
    # Refused before listening: no server was announced.
    assert "backend at" not in ran.stdout
