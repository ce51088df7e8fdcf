"""The secrets a descriptor passes kept out of what a failed call tells.

A tool's descriptor (or its service's) passes values with ``${env:NAME}``: an API key in a
header, a token in an MCP server's environment. A server that echoes one back in an error
("invalid key sk-...") would have it printed on the terminal, answered to an agent through
``serve`` or ``mcp serve``, and logged. The error of every failed call, its output and its
MCP content are read here first, each of those values as ``***`` (the values the run
history masks, toolctl.records.masking). A successful answer is data and stays as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolctl.descriptor_env import descriptor_secrets, hide_values, unleaked_error

if TYPE_CHECKING:
    from collections.abc import Mapping
    from concurrent.futures import Future

    from toolctl.runners.base import ToolResult, ToolSpec

__all__ = ["passed_secrets", "unleaked_error", "unleaked_future", "unleaked_result"]


def passed_secrets(tool: ToolSpec, environ: Mapping[str, str]) -> frozenset[str]:
    """The values ``tool``'s descriptor and its service's pass with ``${env:NAME}``."""
    return descriptor_secrets((tool.data, tool.service), environ)


def unleaked_result(result: ToolResult, secrets: frozenset[str]) -> ToolResult:
    """A failed ``result`` with ``secrets`` masked in its error, output, data (a failed
    HTTP call's JSON body, which may echo the header it was sent) and MCP content."""
    if result.success or not secrets:
        return result
    return result._replace(
        error=hide_values(result.error, secrets) if result.error is not None else None,
        output=hide_values(result.output, secrets),
        data=_hidden(result.data, secrets),
        mcp=_hidden(result.mcp, secrets) if result.mcp is not None else None,
    )


def unleaked_future(sent: Future[ToolResult], secrets: frozenset[str]) -> Future[ToolResult]:
    """A Future of ``sent``'s result or error with ``secrets`` masked (a pipelined call)."""
    from toolctl.calls.content import mapped_future

    def settled(result: ToolResult) -> ToolResult:
        return unleaked_result(result, secrets)

    sent.add_done_callback(lambda done: _unleak_exception(done, secrets))  # before it's read
    return mapped_future(sent, settled)


def _unleak_exception(done: Future[ToolResult], secrets: frozenset[str]) -> None:
    from toolctl.errors import ToolctlError

    if not done.cancelled() and isinstance(error := done.exception(), ToolctlError):
        unleaked_error(error, secrets)


def _hidden(value: Any, secrets: frozenset[str]) -> Any:
    """A JSON value with ``secrets`` masked in every string it holds."""
    if isinstance(value, str):
        return hide_values(value, secrets)
    if isinstance(value, dict):
        return {key: _hidden(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [_hidden(item, secrets) for item in value]
    return value
