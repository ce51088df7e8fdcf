"""The local runtime: a tool is a subprocess, its arguments JSON on stdin (or in argv)."""

from __future__ import annotations

import json
from typing import Any

from toolctl.descriptor_env import child_environment
from toolctl.errors import TimedOut
from toolctl.runners.argv import render_argv
from toolctl.runners.base import Call, ToolResult, ToolSpec, expand_env_map
from toolctl.runners.process import Children, descriptor_cwd, ended, run_process
from toolctl.settings import Settings


class LocalRunner:
    """Runs ``[tool.local] command`` with per-item ``{arg}`` substitution, never a shell."""

    runtime = "local"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._children = Children()

    def describe(self, call: Call) -> dict[str, Any]:
        tool, arguments = call.tool, call.arguments
        section = tool.data["local"]
        return {
            "transport": self.runtime,
            "argv": self._argv(tool, arguments),
            "cwd": self._cwd(tool),
            "stdin": "arguments as JSON" if section["input"] == "json" else "none",
            "env": expand_env_map(section["env"], self.settings, mask=True),
            **({"pass_env": section["pass_env"]} if section.get("pass_env") else {}),
            "timeout": call.timeout,
        }

    def run(self, call: Call) -> ToolResult:
        tool, arguments, sink = call.tool, call.arguments, call.sink
        section = tool.data["local"]
        declared = expand_env_map(section["env"], self.settings)
        env = child_environment(self.settings.environ, declared, section.get("pass_env", ()))
        if call.traceparent:
            env["TRACEPARENT"] = call.traceparent
        stdin = json.dumps(arguments).encode() if section["input"] == "json" else None
        try:
            done = run_process(
                self._argv(tool, arguments),
                stdin=stdin,
                env=env,
                cwd=self._cwd(tool),
                timeout=call.timeout,
                stream=sink.output,
                stderr_fd=sink.stderr_fd,
                on_stderr=sink.stderr,
                children=self._children,
                max_output=call.max_output,
            )
        except TimedOut as exc:  # told by the tool's name, not its program's
            named = TimedOut(
                f"tool '{tool.name}' ran past its {call.timeout:g} s timeout and was killed",
                hint="give it longer with timeout in its descriptor, or run --timeout",
            )
            named.output = getattr(exc, "output", "")  # type: ignore[attr-defined]
            raise named from exc
        if done.returncode != 0:
            detail = done.stderr_tail.strip().splitlines()[-1:] if done.stderr_tail else []
            reason = ended(done.returncode) + (f": {detail[0]}" if detail else "")
            return done.failure(reason, self.runtime)
        return ToolResult.from_answer(
            done.stdout,
            runtime=self.runtime,
            exit_code=0,
            duration_ms=done.duration_ms,
            truncated=done.dropped,
        )

    def close(self) -> None:
        self._children.close()

    def _argv(self, tool: ToolSpec, arguments: dict[str, Any]) -> list[str]:
        declared = frozenset(tool.data["schema"].get("properties", {}))
        allowed = frozenset(tool.data.get("allow_option", ()))
        return render_argv(tool.data["local"]["command"], arguments, declared, allowed)

    def _cwd(self, tool: ToolSpec) -> str | None:
        return descriptor_cwd(f"tool '{tool.name}'", tool.base_dir, tool.data["local"].get("cwd"))
