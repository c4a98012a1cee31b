"""A page opened in headless Chromium (Debian's `chromium`) through the DevTools protocol: the console errors and
uncaught exceptions it raised, and a screenshot. The protocol, because headless Chromium's own log flags do not
print console messages any more, and a report whose JavaScript fails must fail its test.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEVTOOLS_LINE = re.compile(r"DevTools listening on (ws://\S+)")


@dataclass(frozen=True)
class PageVisit:
    """What the browser saw: console errors and exceptions (text), and the screenshot as PNG bytes."""

    errors: tuple[str, ...]
    screenshot_png: bytes
    evaluated: Any = None


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def visit(
    path: Path,
    *,
    width: int = 1100,
    height: int = 1800,
    settle_s: float = 3.0,
    timeout_s: float = 60.0,
    evaluate: str | None = None,
) -> PageVisit:
    """Open `path` (a local file) in a fresh headless Chromium; wait for load plus `settle_s` for the charts;
    `evaluate`: a JavaScript expression whose (JSON) value is returned as `evaluated`."""
    import websocket  # websocket-client

    binary = chromium_binary()
    assert binary is not None, "chromium is not installed: apt-get install -y chromium (.ci/run does it)"
    profile = tempfile.mkdtemp(prefix="radar-chromium-")
    process = subprocess.Popen(
        [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            f"--user-data-dir={profile}", "--remote-debugging-port=0", f"--window-size={width},{height}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        endpoint = _devtools_endpoint(process, timeout_s)
        port = endpoint.split(":")[2].split("/")[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            pages = [t for t in json.loads(answer.read()) if t.get("type") == "page"]
        socket = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=timeout_s)
        session = _Session(socket)
        for method in ("Runtime.enable", "Log.enable", "Page.enable"):
            session.call(method)
        session.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        session.call("Page.navigate", {"url": path.resolve().as_uri()})
        session.wait_for("Page.loadEventFired", timeout_s)
        session.drain(settle_s)
        value = None
        if evaluate is not None:
            result = session.call("Runtime.evaluate", {"expression": evaluate, "returnByValue": True})
            value = result.get("result", {}).get("value")
        shot = session.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        socket.close()
        return PageVisit(tuple(session.errors), base64.b64decode(shot["data"]), value)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        shutil.rmtree(profile, ignore_errors=True)


def _devtools_endpoint(process: subprocess.Popen[str], timeout_s: float) -> str:
    assert process.stderr is not None
    deadline = time.monotonic() + timeout_s
    seen = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line and process.poll() is not None:
            break
        seen.append(line)
        match = DEVTOOLS_LINE.search(line)
        if match:
            return match.group(1)
    raise AssertionError("chromium did not open its DevTools endpoint: " + "".join(seen)[-2000:])


class _Session:
    """Calls and events on one page's DevTools socket; console errors are collected as they arrive."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.next_id = 0
        self.errors: list[str] = []
        self.events: list[str] = []

    def _receive(self) -> dict[str, Any]:
        message = json.loads(self.socket.recv())
        method = message.get("method")
        params = message.get("params", {})
        if method:
            self.events.append(method)
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append(str(details.get("exception", {}).get("description") or details.get("text")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.errors.append(str(params["entry"].get("text")))
        return message

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params or {}}))
        while True:
            message = self._receive()
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise AssertionError(f"{method} failed: {message['error']}")
                return message.get("result", {})

    def wait_for(self, event: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while event not in self.events:
            if time.monotonic() > deadline:
                raise AssertionError(f"the page sent no {event} within {timeout_s:.0f} s")
            self._receive()

    def drain(self, seconds: float) -> None:
        """Keep collecting events for `seconds` (the charts render after load)."""
        import websocket

        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.socket.settimeout(left)
            try:
                self._receive()
            except websocket.WebSocketTimeoutException:
                break
