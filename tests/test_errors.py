"""toolctl's errors as a library user meets them: whole after crossing a process boundary."""

from __future__ import annotations

import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

from toolctl.errors import NotFound, ReaderGone, ToolctlError
from toolctl.mcp.wire import ServerError
from toolctl.processes.launching import StartFailed

ERRORS = [
    NotFound("tool", "helo", ["hello"]),
    ReaderGone(),
    ServerError("tools/call", -32602, "bad params", {"field": "x"}),
    StartFailed("service", "s", "exited", status=1, log="/tmp/s.log", output="boom\n"),
    ToolctlError("plain", hint="a hint", details=["one"]),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_an_error_pickles_whole(error: ToolctlError) -> None:
    """A subclass whose __init__ takes other arguments than its message (NotFound(kind,
    name)) could not be unpickled: a process pool turned it into BrokenProcessPool."""
    error.hint = error.hint or "h"
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error)
    assert vars(back) == vars(error) and back.args == error.args
    assert (back.exit_code, back.error_code) == (error.exit_code, error.error_code)


def _raise_not_found(name: str) -> None:
    raise NotFound("tool", name, [])


def test_an_error_raised_in_a_worker_process_arrives_as_itself() -> None:
    with ProcessPoolExecutor(max_workers=1) as pool, pytest.raises(NotFound) as caught:
        pool.submit(_raise_not_found, "helo").result(timeout=60)
    assert caught.value.exit_code == 4 and "helo" in str(caught.value)


def test_a_name_not_found_is_quoted_with_its_controls_escaped() -> None:
    """A model's tool name with an ESC, a newline or a reordering character came back raw
    in the message the library hands the model (and a server logs)."""
    error = NotFound("tool", "nope\x1b[2J\nline2\u202e é")
    assert str(error) == "tool 'nope\\x1b[2J\\nline2\\u202e é' not found"
    assert error.name == "nope\x1b[2J\nline2\u202e é"  # the name itself, as given


def test_every_error_a_call_raises_is_importable_from_the_package() -> None:
    import toolctl

    assert issubclass(toolctl.Interrupted, toolctl.ToolctlError)
    assert "Interrupted" in toolctl.__all__
