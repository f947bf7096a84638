"""`hindsight serve` without HINDSIGHT_ADMIN_TOKEN: on loopback it makes a one-time token and prints the dashboard's
URL with it, and the dashboard opened by that URL draws and labels in real Chromium; on any other host admin stays
off."""

import json
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from service.cli.serve import dashboard_url, is_loopback
from tests.factories import labels_store
from tests.helpers import CHROMIUM, HINDSIGHT, ROOT, chromium, clean_env, free_port, labels_idle, page_failures

URL = re.compile(r"http://\S+")


@contextmanager
def served(home: Path, host: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """`hindsight serve --host HOST` on a free port, as a user starts it (no token unless env has one): yields the
    loopback address to reach it and what it printed until it answered."""
    port = free_port()
    proc = subprocess.Popen([*HINDSIGHT, "serve", "--host", host, "--port", str(port), "--log-level", "warning"],
                            cwd=ROOT, env=clean_env(home, env=env), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    out: list[str] = []
    # read in a thread: a server that prints nothing must fail the test, not block it
    threading.Thread(target=lambda: out.extend(iter(proc.stdout.readline, "")) if proc.stdout else None,
                     daemon=True).start()
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"serve exited: {''.join(out)}"
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            raise AssertionError(f"serve did not answer within 60 s: {''.join(out)}")
        until = time.monotonic() + 5  # printed before uvicorn started, so in the pipe by now: the thread reads it
        while "http://" not in "".join(out) and time.monotonic() < until:
            time.sleep(0.05)
        yield base, "".join(out)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)


def test_loopback_hosts_and_the_printed_address():
    assert all(is_loopback(h) for h in ("127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.2"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.4", "example.org"))
    assert dashboard_url("127.0.0.1", 8000, "abc") == "http://127.0.0.1:8000/?token=abc"
    assert dashboard_url("::1", 8001) == "http://[::1]:8001/"


def test_the_demo_serves_on_loopback_without_a_token_so_it_prints_the_url():
    demo = (ROOT / "scripts" / "demo.sh").read_text()
    assert "serve --host 127.0.0.1" in demo and "HINDSIGHT_ADMIN_TOKEN=" not in demo


@pytest.mark.server
@pytest.mark.skipif(not (Path(CHROMIUM).exists() or shutil.which("chromium")), reason="Debian chromium is missing")
def test_the_printed_url_opens_a_dashboard_that_draws_and_labels(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    home = tmp_path / "home"
    labels_store(home, per_system=12)
    with served(home, "127.0.0.1") as (base, printed):
        urls = URL.findall(printed)
        assert len(urls) == 1 and re.fullmatch(rf"{base}/\?token=[\w-]{{40,}}", urls[0]), printed
        token = urls[0].partition("?token=")[2]
        assert httpx.post(f"{base}/v1/labels/draws", json={"run": "r1", "n": 1}).status_code == 401
        with sync_api.sync_playwright() as p:
            browser = chromium(p)
            try:
                page = browser.new_page(viewport={"width": 1360, "height": 1500})
                failures = page_failures(page)
                page.goto(urls[0])
                assert "token" not in page.url  # out of the address bar, the history and a copied link
                assert page.input_value("#labels-token") == token
                assert page.evaluate("sessionStorage.getItem('hindsight.adminToken')") == token
                labels_idle(page)
                page.fill("#labels-annotator", "reader")
                page.locator("#labels-annotator").blur()
                labels_idle(page)
                run = page.locator("#labels-run option", has_text="sys-a / r1").get_attribute("value")
                page.select_option("#labels-run", run)
                labels_idle(page)
                page.fill("#labels-n", "3")
                page.click("#labels-new-draw")
                page.wait_for_selector("#labels-card[data-ready='1'] .candidate")
                assert page.locator("#labels-message").is_hidden(), page.inner_text("#labels-message")
                assert page.locator("#labels-draw option").count() == 1
                idea = page.get_attribute("#labels-card", "data-idea")
                first = page.locator("#labels-card .candidate").first
                paper = first.get_attribute("data-paper")
                first.locator("button[data-choice='direction']").click()
                page.wait_for_selector(f"#labels-card .candidate[data-paper='{paper}'][data-label='direction']")
                assert page.locator("#labels-message").is_hidden(), page.inner_text("#labels-message")
                page.reload()  # the address has no token now: the tab's copy is what the view uses
                labels_idle(page)
                assert page.input_value("#labels-token") == token
                page.wait_for_function("document.querySelector('#labels-section').dataset.labelled === '1'")
                assert page.get_attribute("#labels-card", "data-idea") != idea  # it resumes after the labelled one
                page.click("#labels-prev")
                page.wait_for_function(f"document.querySelector('#labels-card').dataset.idea === '{idea}'")
                assert page.get_attribute(f"#labels-card .candidate[data-paper='{paper}']", "data-label") == "direction"
                assert not failures, failures
            finally:
                browser.close()
        lines = httpx.get(f"{base}/v1/labels/export", params={"run": "r1"}).text.splitlines()
        exported = [json.loads(x) for x in lines]
        assert [(r["idea_id"], r["paper_id"], r["label"], r["annotator"]) for r in exported] == [
            (idea, paper, "direction", "reader")]
        # the token is this server's: a client of the API uses it as the dashboard does
        assert httpx.post(f"{base}/v1/labels/draws", json={"run": "r1", "n": 1, "system": "sys-b"},
                          headers={"Authorization": f"Bearer {token}"}).status_code == 201


@pytest.mark.server
def test_on_any_other_host_without_a_token_admin_stays_off(tmp_path):
    home = tmp_path / "home"
    labels_store(home, per_system=3)
    with served(home, "0.0.0.0") as (base, printed):
        assert "token=" not in printed, printed
        answer = httpx.post(f"{base}/v1/labels/draws", json={"run": "r1", "n": 1, "system": "sys-a"},
                            headers={"Authorization": "Bearer anything"})
        assert answer.status_code == 403 and "disabled" in answer.json()["detail"], answer.text


@pytest.mark.server
def test_a_configured_token_is_kept_and_not_printed(tmp_path):
    home = tmp_path / "home"
    labels_store(home, per_system=3)
    with served(home, "127.0.0.1", env={"HINDSIGHT_ADMIN_TOKEN": "chosen-token"}) as (base, printed):
        assert "token=" not in printed and "chosen-token" not in printed, printed
        draw = {"run": "r1", "n": 1, "system": "sys-a"}
        assert httpx.post(f"{base}/v1/labels/draws", json=draw,
                          headers={"Authorization": "Bearer chosen-token"}).status_code == 201
