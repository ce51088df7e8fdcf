"""``toolctl.calls.batch``, the function, stays the function after a batch has run.

(A submodule named ``toolctl/calls/batch.py`` would replace the package attribute the
moment it is imported, and the second ``calls.batch(...)`` would call a module.)
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write_files
from toolctl import calls
from toolctl.registry.index import Registry
from toolctl.settings import Settings


def test_batch_twice(tmp_path: Path) -> None:
    write_files(
        tmp_path / "registry",
        {
            "tools.toml": """
            [[tool]]
            name = "echo"
            [tool.local]
            command = ["echo", "{n}"]
            input = "none"
            [[tool.arguments]]
            name = "n"
            type = "integer"
            """
        },
    )
    settings = Settings.load([tmp_path / "registry"])
    for _ in range(2):
        results = list(
            calls.batch(settings, Registry.open(settings), "echo", ['{"n": 1}', "nope", '{"n": 2}'])
        )
        assert [r.output for r in results if r.success] == ["1", "2"]
        assert not results[1].success
