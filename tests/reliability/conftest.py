"""The reliability suite: every test runs real servers or CLI processes, so all of it is marked `server`."""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.helpers import LiveServer

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.server)


@pytest.fixture
def live_server() -> Iterator[Callable[..., LiveServer]]:
    started: list[LiveServer] = []

    def start(home: Path, **kwargs: Any) -> LiveServer:
        started.append(LiveServer(home, **kwargs))
        return started[-1]

    yield start
    for server in started:
        server.stop()
