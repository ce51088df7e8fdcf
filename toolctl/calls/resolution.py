"""What a call is made of: the tool a name stands for (the definition in force, or its
OpenAI function name, with its service; refused if not runnable), and its validated
arguments, timeout and output cap."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolctl import arguments as tool_args
from toolctl.errors import NotFound, RegistryError, ToolctlError
from toolctl.runners.base import ToolSpec

if TYPE_CHECKING:
    from toolctl.registry.index import Registry
    from toolctl.registry.loader import Definition


def resolve(registry: Registry, name: str, *, allow_staging: bool = False) -> ToolSpec:
    """The tool in force under ``name``, with its service's descriptor if it has one.

    A tool whose ``state`` is not "active" is refused unless ``allow_staging``.
    """
    from toolctl.tool_state import check_runnable, check_service_runnable

    try:
        tool = registry.resolve("tool", name)
    except NotFound:
        tool = _by_function_name(registry, name)
    check_runnable(tool.data, allow_staging)
    service = None
    if tool.data.get("service"):
        try:
            service = registry.resolve("service", tool.data["service"])
        except NotFound as exc:  # the registry is broken, not the command line
            raise RegistryError(
                f"tool '{tool.name}' names unknown service '{tool.data['service']}'"
                + (f" ({exc.hint})" if exc.hint else ""),
                hint="run 'toolctl check'",
            ) from exc
        check_service_runnable(tool.name, service.data, allow_staging)
    runtime = tool.data.get("runtime")
    if not runtime:
        raise RegistryError(f"tool '{name}' has no runtime", hint="run 'toolctl check'")
    return ToolSpec(
        tool.name,
        runtime,
        tool.data,
        None if service is None else service.data,
        Path(tool.file),
        None if service is None else Path(service.file),
    )


def _by_function_name(registry: Registry, name: str) -> Definition:
    """The tool in force whose function name is ``name`` (``Registry.by_function_name``);
    else NotFound."""
    holder = registry.by_function_name(name)
    if holder is None:
        raise registry.not_found("tool", name)
    return holder


def tools_in_force(registry: Registry) -> list[ToolSpec]:
    """Every tool a call can name (first definition of each name), sorted by name.

    A tool whose service is missing is left out: no call can reach it (``check`` says why).
    """
    found = []
    for definition in registry.winners("tool"):
        try:
            found.append(resolve(registry, definition.name))
        except ToolctlError:
            continue
    return sorted(found, key=lambda spec: spec.name)


def build_arguments(
    tool: ToolSpec, given: Mapping[str, Any] | None = None, pairs: Sequence[str] = ()
) -> dict[str, Any]:
    """``given`` with ``pairs`` over it and the declared defaults, validated (else exit 2)."""
    schema = tool.data["schema"]
    tool_args.an_object(tool.name, given)
    arguments = tool_args.build(schema, given, pairs)
    tool_args.validate(tool.name, schema, arguments)
    return tool_args.whole_numbers(schema, arguments)


def call_timeout(tool: ToolSpec, timeout: float | None, default: float | None = None) -> float:
    """The call's timeout: ``timeout`` if given, else the tool's (``default``, the project's
    or user's, for a tool that sets none); a finite number of seconds in (0, MAX_TIMEOUT],
    else a UsageError (exit 2) for every runtime."""
    if timeout is not None:
        return tool_args.check_timeout(timeout, "--timeout")
    seconds = tool_args.tool_timeout(tool.data, default)
    return tool_args.check_timeout(seconds, f"tool '{tool.name}': timeout")


def call_max_output(tool: ToolSpec, max_output: int | None) -> int:
    """Bytes of output the call's result may hold: ``max_output`` if given, else the
    tool's ``max_output``, else DEFAULT_MAX_OUTPUT (16 MiB)."""
    if max_output is not None:
        return max_output
    return int(tool.data.get("max_output") or tool_args.DEFAULT_MAX_OUTPUT)
