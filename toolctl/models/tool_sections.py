"""The runtime sections of a tool: ``[tool.local]``, ``[tool.container]``, ``[tool.http]``,
``[tool.mcp]`` (and its MCP annotations)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import (
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from toolctl.models.fields import Cwd, DescriptorModel, InputMode, PassEnv
from toolctl.urls import headers_problem, shown_url, url_problem


class LocalRuntime(DescriptorModel):
    """A subprocess: argv with per-item ``{arg}`` substitution, never a shell."""

    command: list[str] = Field(min_length=1)
    input: InputMode = "json"
    env: dict[str, str] = Field(default_factory=dict)
    pass_env: PassEnv
    cwd: Cwd = None


class ContainerRuntime(DescriptorModel):
    """A container run through the docker or podman CLI."""

    image: str = Field(min_length=1)
    command: list[str] = Field(default_factory=list)
    input: InputMode = "json"
    env: dict[str, str] = Field(default_factory=dict)
    network: str = "none"
    """What the container reaches: "none" (the default), "host", a network's name; never
    empty (`--network=` is the engine's default bridge: a network nobody asked for)."""
    memory: str | None = None
    cpus: float | None = Field(default=None, gt=0)
    read_only: bool = True
    engine: Literal["docker", "podman"] | None = None

    @field_validator("image", "network", "memory")
    @classmethod
    def _no_option(cls, value: str | None) -> str | None:
        if value is not None and value.startswith("-"):  # the engine would read an option
            raise ValueError(f"must not start with '-', got {value!r}")
        return value

    @field_validator("network")
    @classmethod
    def _a_network(cls, value: str) -> str:
        if not value.strip():
            raise ValueError('must name a network ("none" for none, "host" for the host\'s)')
        return value


class HttpRuntime(DescriptorModel):
    """An HTTP endpoint: an absolute ``url``, or a ``path`` below the tool's service."""

    url: str | None = None
    path: str | None = None
    method: Literal["GET", "POST"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _url_or_path(self) -> HttpRuntime:
        if (self.url is None) == (self.path is None):
            raise ValueError("give exactly one of 'url' (absolute) or 'path' (below the service)")
        if problem := headers_problem(self.headers):
            raise ValueError(problem)
        if self.url is not None and (problem := url_problem(self.url)):
            raise ValueError(
                f"url must be absolute http(s), got {shown_url(self.url)!r}: {problem}"
            )
        return self


class ToolAnnotations(DescriptorModel):
    """MCP's hints about a tool's behaviour, spelled as MCP spells them; served as given."""

    title: str | None = None
    readOnlyHint: bool | None = None
    destructiveHint: bool | None = None
    idempotentHint: bool | None = None
    openWorldHint: bool | None = None


PIN_PATTERN = r"^sha256:[0-9a-f]{64}$"


class McpRuntime(DescriptorModel):
    """One tool of an MCP service: the server's own name for it, its pin and its schema."""

    name: str = Field(min_length=1)
    """The server's name for the tool (any string the server uses, not a registry name)."""
    pin: str | None = Field(default=None, pattern=PIN_PATTERN)
    """``sha256:`` + 64 hex digits of the tool's canonical JSON when it was imported."""
    parameters: dict[str, Any] | None = None
    """The tool's ``inputSchema`` as the server sent it."""
    annotations: dict[str, Any] | None = None
    """The tool's ``annotations`` when it was imported (shown by ``--update``'s diff)."""
    output_schema: dict[str, Any] | None = None
    """The tool's ``outputSchema`` as the server sent it: what its ``structuredContent``
    holds, listed by toolctl's own MCP doors (their results pass the server's on)."""

    @field_validator("parameters", "output_schema", mode="before")
    @classmethod
    def _json_text(cls, value: Any, info: ValidationInfo) -> Any:
        """A schema holding a JSON ``null`` (``"default": null``) is kept as JSON text:
        TOML has no null."""
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError as exc:
                raise ValueError(f"mcp.{info.field_name} is not JSON: {exc}") from None
        return value

    @field_validator("parameters")
    @classmethod
    def _object_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and value.get("type", "object") != "object":
            raise ValueError("mcp.parameters must be a JSON Schema of type 'object'")
        if value is not None:
            from toolctl.schemas import check_parameters

            check_parameters(value)
        return value
