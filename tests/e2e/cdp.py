"""A few calls of the Chrome DevTools Protocol, enough to drive headless Chromium in tests."""

import asyncio
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import websockets

# Flags for a closed network: no background calls home (see the env notes of this workplace).
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    def __init__(self, socket: Any) -> None:
        self._socket = socket
        self._next_id = 0

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        call_id = self._next_id
        await self._socket.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(await self._socket.recv())
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result

    async def evaluate(self, expression: str) -> Any:
        result = await self.call(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        return result.get("result", {}).get("value")

    async def goto(self, url: str) -> None:
        await self.call("Page.navigate", url=url)
        await self.wait_for("document.readyState === 'complete'", timeout=30)

    async def wait_for(self, expression: str, timeout: float) -> Any:
        """Poll a JS expression until it is truthy (the browser's own state; no fixed sleeps)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = await self.evaluate(expression)
            if value:
                return value
            await asyncio.sleep(0.1)
        raise AssertionError(f"timed out waiting for: {expression}")


@asynccontextmanager
async def browser_page() -> AsyncIterator[Page]:
    binary = chromium_path()
    assert binary, "Chromium is not installed"
    # Chromium's helper processes may still be writing their profile as the folder goes away.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        process = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            port = _devtools_port(process)
            targets = httpx.get(f"http://127.0.0.1:{port}/json", timeout=10).json()
            url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
            async with websockets.connect(url, max_size=None) as socket:
                page = Page(socket)
                await page.call("Page.enable")
                yield page
        finally:
            # The browser and its renderer/GPU helpers share one process group.
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)


def _devtools_port(process: subprocess.Popen[str]) -> int:
    """Read Chromium's stderr until it says where DevTools listens."""
    assert process.stderr is not None
    deadline = time.monotonic() + 30
    seen: list[str] = []
    with selectors.DefaultSelector() as selector:
        selector.register(process.stderr, selectors.EVENT_READ)
        while time.monotonic() < deadline and selector.select(deadline - time.monotonic()):
            line = process.stderr.readline()
            if not line:
                break
            seen.append(line)
            match = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if match:
                return int(match.group(1))
    raise AssertionError("Chromium did not open its DevTools port:\n" + "".join(seen))
