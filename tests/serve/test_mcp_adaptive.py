"""`mcp serve --adaptive K` and `serve --adaptive K`, driven by the official MCP SDK client:
each session is listed its pinned tools and its K likeliest next ones (the learned graph),
and is told list_changed when a call of its own changes them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession

from tests.conftest import Toolctl, write_files
from tests.learning.support import FILES, SOCIAL, registry_toml, write_transcripts
from tests.serve.mcp_clients import Changes, http_session, stdio_session, texts
from tests.serve.serve_support import StartServe


@pytest.fixture
def learned(tmp_path: Path, toolctl: Toolctl) -> Path:
    """A registry of the transcripts' tools, and its learned file."""
    reg = write_files(tmp_path / "reg", {"tools.toml": registry_toml()})
    chat = write_transcripts(tmp_path / "chat.jsonl")
    done = toolctl("graph", "learn", "--from-transcripts", str(chat), "--registry", str(reg))
    assert done.returncode == 0, done.stderr
    return reg


def expected(toolctl: Toolctl, reg: Path, after: Sequence[str], top: int, pinned: str) -> list[str]:
    """What `recommend --after` ranks next, less the pinned tool: the same learned graph."""
    options = [arg for name in after for arg in ("--after", name)]
    done = toolctl("recommend", *options, "--top", str(top + 1), "--json", "--registry", str(reg))
    assert done.returncode == 0, done.stderr
    names = [r["name"] for r in json.loads(done.stdout)["next"] if r["name"] != pinned]
    return [pinned, *names[:top]]


async def names(session: ClientSession) -> list[str]:
    return [tool.name for tool in (await session.list_tools()).tools]


def test_a_session_is_listed_its_likeliest_next_tools_and_told_when_they_change(
    learned: Path, toolctl: Toolctl
) -> None:
    changes = Changes()
    after_cd = expected(toolctl, learned, ["cd"], 2, "grep")
    after_login = expected(toolctl, learned, ["authenticate_twitter"], 2, "grep")

    async def main() -> None:
        options = ("--adaptive", "2", "--pin", "grep")
        async with stdio_session(learned, *options, changes=changes) as session:
            start = await names(session)  # before any call: the likeliest first calls
            assert len(start) == 3 and start[0] == "grep"
            done = await session.call_tool("cd", {"name": "docs"})
            assert not done.isError, texts(done)
            assert changes.count == 1  # sent before the call's result
            listed = await names(session)
            assert listed == after_cd and set(listed[1:]) <= set(FILES)
            # a served tool not listed still runs, and ranks the list again
            other = await session.call_tool("authenticate_twitter", {"name": "me"})
            assert not other.isError, texts(other)
            assert changes.count == 2
            listed = await names(session)
            assert listed == after_login and set(listed[1:]) <= set(SOCIAL)

    anyio.run(main)
    assert after_cd != after_login


def test_http_sessions_are_narrowed_each_on_its_own(learned: Path, serve: StartServe) -> None:
    url = serve("--adaptive", "3", "--registry", str(learned)).url
    first, second = Changes(), Changes()

    async def main() -> None:
        async with http_session(url, first) as one, http_session(url, second) as two:
            before = await names(two)
            assert len(before) == 3 and await names(one) == before
            await one.call_tool("authenticate_twitter", {"name": "me"})
            with anyio.fail_after(10):
                await first.seen.wait()
            assert set(await names(one)) <= set(SOCIAL)
            assert await names(two) == before and second.count == 0

    anyio.run(main)


def test_without_a_learned_file_it_says_so_and_still_serves(tmp_path: Path) -> None:
    reg = write_files(tmp_path / "reg", {"tools.toml": registry_toml()})

    async def main() -> list[str]:
        async with stdio_session(reg, "--adaptive", "2", stderr=tmp_path / "err") as session:
            return await names(session)

    assert len(anyio.run(main)) == 2
    assert "graph learn" in (tmp_path / "err").read_text()


def test_a_damaged_history_is_a_warning_and_it_still_serves(tmp_path: Path) -> None:
    """Without a learned file the history is learned from; one that is no database made
    `mcp serve --adaptive` (and `serve`) refuse to start (exit 74)."""
    import os

    damaged = Path(os.environ["XDG_STATE_HOME"]) / "toolctl" / "history.sqlite3"
    damaged.parent.mkdir(parents=True, exist_ok=True)
    damaged.write_text("garbage")
    reg = write_files(tmp_path / "reg", {"tools.toml": registry_toml()})

    async def main() -> list[str]:
        async with stdio_session(reg, "--adaptive", "2", stderr=tmp_path / "err") as session:
            return await names(session)

    assert len(anyio.run(main)) == 2
    told = (tmp_path / "err").read_text()
    assert "cannot read the run history" in told and "ranking without it" in told


@pytest.mark.parametrize(
    ("options", "code", "message"),
    [
        (["--pin", "cd"], 2, "--pin needs --adaptive K"),
        (["--adaptive", "0"], 2, "--adaptive"),
        (["--adaptive", "2", "--pin", "cdd"], 4, "tool 'cdd' not found"),
    ],
)
def test_bad_adaptive_options_are_one_line(
    learned: Path, options: list[str], code: int, message: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolctl", "mcp", "serve", "--registry", str(learned), *options],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == code, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
