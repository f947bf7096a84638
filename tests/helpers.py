"""Shared test helpers: the repository's paths, a real uvicorn server on loopback, and the CLI as a subprocess."""

import os
from collections.abc import Callable
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# the command as a user runs it, from this checkout (an installed `hindsight` script may point at another one)
HINDSIGHT = [sys.executable, "-m", "service.cli"]


def _test_backend() -> str:
    from indexing.embedders.cpu import native_bf16

    return "torch-bf16" if native_bf16() else "torch"


# MiniLM's backend in test homes, in this process (conftest.py) and in the CLI and server subprocesses: a torch one,
# since `auto` (openvino-int8) converts the weights to an int8 IR once per home, about 19 s that every fresh test home
# would pay; tests of openvino-int8 and of `auto` ask for them by name. HINDSIGHT_MINILM_BACKEND set by the caller wins.
TEST_ENV = {"HINDSIGHT_MINILM_BACKEND": os.environ.get("HINDSIGHT_MINILM_BACKEND") or _test_backend()}


def changed(settings, **parts: dict):
    """A copy of settings with some fields of some components changed: changed(s, index={"minilm_backend": "torch"})."""
    return settings.model_copy(update={name: getattr(settings, name).model_copy(update=fields)
                                       for name, fields in parts.items()})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(home: Path, token: str | None = None, env: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without its HINDSIGHT_* settings (TEST_ENV's aside), pointed at `home`."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    full |= {**TEST_ENV, "HINDSIGHT_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"}
    if token:
        full["HINDSIGHT_ADMIN_TOKEN"] = token
    return full | (env or {})


def run_cli(home: Path, *args: str, env: dict[str, str] | None = None, token: str | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `hindsight ARGS` against this home as a subprocess and wait for it."""
    return subprocess.run([*HINDSIGHT, *args], cwd=ROOT, env=clean_env(home, token, env), capture_output=True,
                          text=True, timeout=timeout)


class Server:
    """`uvicorn service.app:create_app` on a free loopback port, logging into home/server.log."""

    def __init__(self, home: Path, token: str | None = "test-token", env: dict[str, str] | None = None,
                 log_level: str = "warning", start_timeout: float = 60) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.home, self.port = home, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = home / "server.log"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
        full_env |= {**TEST_ENV, "HINDSIGHT_HOME": str(home), **({"HINDSIGHT_ADMIN_TOKEN": token} if token else {}),
                     **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "service.app:create_app", "--factory", "--host", "127.0.0.1",
             "--port", str(self.port), "--log-level", log_level],
            cwd=ROOT, env=full_env, stdout=self.log.open("ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"server did not start within {start_timeout} s")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(15)


CHROMIUM = "/usr/bin/chromium"


def chromium(playwright):
    """Debian's headless Chromium, launched through playwright."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=[
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"])


def page_failures(page) -> list[str]:
    """A list the page's script errors and 5xx answers gather in from now on."""
    failures: list[str] = []
    page.on("pageerror", lambda e: failures.append(f"page error: {e}"))
    page.on("response", lambda r: failures.append(f"{r.status} {r.url}") if r.status >= 500 else None)
    return failures


def open_labelling_view(page, url: str, run_id: int, annotator: str = "reader") -> list[str]:
    """The dashboard's labelling view on a run's draws as `annotator` (token test-token); the page's errors and 5xx
    answers from then on gather in the list returned."""
    failures = page_failures(page)
    page.goto(url + "/")
    # typed, then left, as a user does: the input's own change event (a change dispatched by hand before it would
    # be followed by a second one, and a second load, at the first click elsewhere)
    page.fill("#labels-token", "test-token")
    page.locator("#labels-token").blur()
    labels_idle(page)  # the page's own first listing of runs and draws
    page.wait_for_selector(f"#labels-run option[value='{run_id}']", state="attached")
    page.select_option("#labels-run", str(run_id))
    labels_idle(page)
    page.wait_for_selector("#labels-draw option", state="attached")
    page.fill("#labels-annotator", annotator)
    page.locator("#labels-annotator").blur()
    labels_idle(page)
    return failures


def load_script(name: str, folder: str = "scripts"):
    """<folder>/<name>.py as a module (scripts/ and bench/ are not packages)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / folder / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

def labels_idle(page) -> None:
    """Waits until the labelling view has no load under way (an answer still on its way would redraw the card)."""
    page.wait_for_function("document.querySelector('#labels-section').dataset.busy === '0'")


def interleave(db_path: Path, act: Callable[[], object], table: str) -> dict[str, object]:
    """act() in a thread 'first'; as it is about to insert into table, the same act starts in 'second', and 'first'
    waits (2 s at most) for 'second' to read the table: at once, unless 'first' holds the write lock. Returns each
    thread's result, none of them an exception."""
    import threading

    from sqlalchemy import event

    from indexing.db import get_engine

    engine = get_engine(db_path)
    second_read = threading.Event()
    results: dict[str, object] = {}
    threads: dict[str, threading.Thread] = {}

    def run(name: str) -> None:
        try:
            results[name] = act()
        except Exception as exc:  # noqa: BLE001 - the caller's assertion names it
            results[name] = exc

    def meanwhile(conn, cursor, statement, parameters, context, executemany) -> None:
        who = threading.current_thread().name
        if who == "second" and statement.lstrip().upper().startswith("SELECT") and table in statement:
            second_read.set()
        if who == "first" and statement.startswith(f"INSERT INTO {table}") and "second" not in threads:
            threads["second"] = threading.Thread(target=run, args=("second",), name="second")
            threads["second"].start()
            second_read.wait(timeout=2)

    event.listen(engine, "before_cursor_execute", meanwhile)
    try:
        threads["first"] = threading.Thread(target=run, args=("first",), name="first")
        threads["first"].start()
        threads["first"].join(60)
        threads["second"].join(60)
    finally:
        event.remove(engine, "before_cursor_execute", meanwhile)
    for name in ("first", "second"):
        assert not isinstance(results[name], Exception), f"{name}: {results[name]!r}"
    return results
