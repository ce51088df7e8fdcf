"""A secret a descriptor passes with ${env:NAME} never comes back in a failed call's
error, output or MCP content (toolctl.calls.leaks), on the pipelined path too; a
successful answer is data and stays as it is."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

from toolctl.calls.leaks import passed_secrets, unleaked_future, unleaked_result
from toolctl.errors import TransportUnavailable
from toolctl.runners.base import ToolResult, ToolSpec

SECRET = "k3y-of-the-service"


def tool() -> ToolSpec:
    service = {"mcp": {"env": {"API_KEY": "${env:KEY}"}}}
    return ToolSpec("call", "mcp", {"name": "call"}, service, Path("reg/tools.toml"))


def test_the_values_a_descriptor_and_its_service_pass_are_its_secrets() -> None:
    assert passed_secrets(tool(), {"KEY": SECRET, "OTHER": "unrelated"}) == {SECRET}
    assert passed_secrets(tool(), {}) == frozenset()


def test_a_failed_result_is_masked_everywhere_and_a_success_is_left_alone() -> None:
    told = f"invalid key {SECRET}"
    failed = ToolResult(
        False, told, error=told, mcp={"content": [{"type": "text", "text": told}], "isError": True}
    )
    masked = unleaked_result(failed, frozenset({SECRET}))
    assert SECRET not in repr(masked)
    assert masked.error == masked.output == "invalid key ***"
    assert masked.mcp == {"content": [{"type": "text", "text": "invalid key ***"}], "isError": True}
    answered = ToolResult(True, f"your key is {SECRET}")
    assert unleaked_result(answered, frozenset({SECRET})) is answered


def test_a_pipelined_result_and_error_are_masked_when_they_settle() -> None:
    sent: Future[ToolResult] = Future()
    masked = unleaked_future(sent, frozenset({SECRET}))
    sent.set_result(ToolResult(False, error=f"refused {SECRET}"))
    assert masked.result(1).error == "refused ***"
    sent = Future()
    masked = unleaked_future(sent, frozenset({SECRET}))
    sent.set_exception(TransportUnavailable(f"cannot reach with {SECRET}", hint=SECRET))
    error = masked.exception(1)
    assert SECRET not in str(error) and str(error) == "cannot reach with ***; ***"
    sent = Future()
    masked = unleaked_future(sent, frozenset({SECRET}))
    masked.cancel()
    assert sent.cancelled()


def test_a_secret_echoed_percent_encoded_is_masked_too() -> None:
    """Servers echo what they were sent as a query or a form holds it: a key with ``/``,
    ``+`` or ``=`` (an AWS secret, base64) comes back percent-encoded, in either case of
    hex, or with ``+`` for a space; each form is masked, in the error and the output."""
    from toolctl.descriptor_env import hide_values

    secret = "tok/en+with=chars and"
    for echoed in ("tok%2Fen%2Bwith%3Dchars%20and", "tok%2fen%2bwith%3dchars%20and",
                   "tok/en%2Bwith%3Dchars%20and", "tok%2Fen%2Bwith%3Dchars+and"):  # fmt: skip
        assert hide_values(f"bad key={echoed}!", [secret]) == "bad key=***!", echoed
    told = "HTTP 500: bad key=tok%2Fen%2Bwith%3Dchars%20and"
    masked = unleaked_result(ToolResult(False, told, error=told), frozenset({secret}))
    assert "tok%2F" not in repr(masked)
