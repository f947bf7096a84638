"""Shared fixtures: isolated HINDSIGHT_HOME, the offline embedder, a real uvicorn server; the `server` marker."""

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from click.testing import Result
from typer.testing import CliRunner

from indexing.db import migrate
from indexing.settings import Settings, get_settings
from tests.helpers import TEST_ENV, Server
from tests.replay_server import Replay

os.environ.update(TEST_ENV)  # before any Settings() is made: test homes embed with a torch backend (helpers.TEST_ENV)

# a test that asks for one of these starts a real server process, so it belongs to the second CI step
SERVER_FIXTURES = {"server_factory", "live_server"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.server)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    s = Settings(home=tmp_path / "home", service={"admin_token": "test-token"})
    migrate(s.db_path)
    return s


@pytest.fixture(scope="session")
def minilm() -> Any:
    from indexing.embedders.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


@pytest.fixture(scope="session")
def ir_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the session's int8 IR: its conversion (about 19 s) is paid once, not by each module."""
    return tmp_path_factory.mktemp("openvino-ir")


@pytest.fixture
def server_factory() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(home: Path, **kwargs: Any) -> Server:
        servers.append(Server(home, **kwargs))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


@pytest.fixture
def run_cli_here(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Result]]:
    """`hindsight ARGS` in this process (typer's runner) against the `settings` home."""
    from service.cli import app

    monkeypatch.setenv("HINDSIGHT_HOME", str(settings.home))
    get_settings.cache_clear()
    yield lambda *args: CliRunner().invoke(app, list(args))
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random qwen2 GGUF chat model (tests.factories.write_tiny_gguf) for the llama.cpp runtime's tests."""
    import importlib.util

    if importlib.util.find_spec("gguf") is None:
        pytest.skip("the gguf package (test extra) is not installed")
    from tests.factories import QWEN_LIKE_TEMPLATE, write_tiny_gguf

    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", template=QWEN_LIKE_TEMPLATE)


@pytest.fixture
def replay() -> Iterator[Callable[..., Replay]]:
    """replay(**recordings): real loopback servers replaying recorded API answers, closed after the test."""
    servers: list[Replay] = []

    def make(**kwargs: Any) -> Replay:
        servers.append(Replay(**kwargs))
        return servers[-1]

    yield make
    for r in servers:
        r.close()
