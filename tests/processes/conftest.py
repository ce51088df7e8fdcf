"""Fixtures for the process tests: this test's settings; whatever it left running is stopped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolctl.processes import ProcessTable, stop
from toolctl.settings import Settings


@pytest.fixture
def settings(isolated_env: dict[str, str]) -> Iterator[Settings]:
    loaded = Settings.load(environ=isolated_env)
    yield loaded
    for name in ProcessTable(loaded).names():
        stop(loaded, name, grace=2.0)
