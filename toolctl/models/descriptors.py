"""The four descriptor kinds (tool, service, action, group), each with one runtime section
taken from the table of runtimes, and the plain-JSON form the registry caches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    Field,
    create_model,
    field_validator,
    model_validator,
)

from toolctl.arguments import DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT, MAX_OUTPUT_LIMIT, MAX_TIMEOUT
from toolctl.models.fields import Argument, DescriptorModel
from toolctl.models.tool_sections import ToolAnnotations
from toolctl.names import NAME_PATTERN
from toolctl.runtimes import (
    BY_NAME,
    MCP_IDLE_TIMEOUT,
    SERVICE_SECTIONS,
    TOOL_SECTIONS,
    import_dotted,
)

RUNTIMES = tuple(BY_NAME)
"""The built-in runtimes, from the table of runtimes in ``toolctl.runners``."""
ToolState = Literal["active", "staging", "disabled", "deprecated"]
"""Only "active" tools run; the others need `run --allow-staging` (``tool_state``)."""


def _sections(
    base: type[DescriptorModel], kind: str, names: tuple[str, ...]
) -> type[DescriptorModel]:
    """``base`` plus one optional field per runtime section, its model from the table."""
    fields: dict[str, Any] = {}
    for name in names:
        row = BY_NAME[name]
        model = import_dotted(str(row.tool_model if kind == "tool" else row.service_model))
        fields[name] = (model | None, None)
    sections: type[DescriptorModel] = create_model(
        f"{base.__name__}Sections", __base__=base, __module__=__name__, **fields
    )
    return sections


def _given(model: BaseModel, names: tuple[str, ...]) -> list[str]:
    """The runtime sections a descriptor has, in the table's order."""
    return [name for name in names if getattr(model, name, None) is not None]


def _either(sections: tuple[str, ...], prefix: str) -> str:
    """'[tool.local], [tool.container] or [tool.http]'."""
    named = [f"[{prefix}.{name}]" for name in sections]
    return ", ".join(named[:-1]) + " or " + named[-1] if len(named) > 1 else named[0]


class _ToolHead(DescriptorModel):
    name: str = Field(pattern=NAME_PATTERN)
    title: str | None = None
    """The name in the system it came from, when that is not a valid registry name."""
    description: str = ""
    state: ToolState = "active"
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0, le=MAX_TIMEOUT, strict=True)
    """Seconds; at most a day."""
    max_output: int = Field(default=DEFAULT_MAX_OUTPUT, gt=0, le=MAX_OUTPUT_LIMIT, strict=True)
    """Bytes of output a result holds (``arguments.DEFAULT_MAX_OUTPUT``); at most 1 GiB. A
    size as `run --max-output` takes it (``"512KiB"``, ``"16MiB"``) is read as its bytes."""

    @field_validator("max_output", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        from toolctl.arguments import parse_size
        from toolctl.errors import UsageError

        try:
            return parse_size(value, "max_output")
        except UsageError as exc:
            raise ValueError(exc.message.removeprefix("max_output ")) from None

    output: Literal["text", "mcp"] = "text"
    """What the tool answers: text or JSON, or ``"mcp"``: MCP content blocks (a JSON list
    of them, or a whole ``tools/call`` result), which the MCP doors pass on as they are."""


if TYPE_CHECKING:
    _ToolSections = _ToolHead
else:
    _ToolSections = _sections(_ToolHead, "tool", TOOL_SECTIONS)


class Tool(_ToolSections):
    """A tool: metadata, arguments, and exactly one way to run it (its runtime's section)."""

    service: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    runtime: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_-]*$")
    """A runtime some installed package registers under ``toolctl.runners``."""
    options: dict[str, Any] = Field(default_factory=dict)
    """That runtime's settings, passed to its runner untouched."""
    arguments: list[Argument] = Field(default_factory=list)
    parameters: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    """`[tool.annotations]`: readOnlyHint etc., what `mcp serve` and `export --format mcp` show."""

    @model_validator(mode="after")
    def _one_runtime(self) -> Tool:
        given = _given(self, TOOL_SECTIONS)
        sections = ", ".join(f"[tool.{name}]" for name in TOOL_SECTIONS)
        if self.runtime is not None:
            if self.runtime in RUNTIMES:
                raise ValueError(
                    f"write [tool.{self.runtime}] (or service =) for a built-in "
                    f'runtime, not runtime = "{self.runtime}"'
                )
            if given or self.service is not None:
                raise ValueError(
                    f'runtime = "{self.runtime}" cannot be combined with {sections} or service'
                )
            return self._check_arguments()
        if self.options:
            raise ValueError("'options' belong to a plugin runtime: add runtime = \"NAME\"")
        if len(given) > 1:
            raise ValueError(f"exactly one runtime allowed, found {' and '.join(given)}")
        if not given and self.service is None:
            raise ValueError(f'missing runtime: add {sections} or service = "NAME"')
        if given and BY_NAME[given[0]].service_model is None and self.service is not None:
            raise ValueError(f"a {given[0]} tool cannot also name a service")
        http = getattr(self, "http", None)
        if http is not None and http.path is not None and self.service is None:
            raise ValueError('http.path needs service = "NAME" to say what it is below')
        if getattr(self, "mcp", None) is not None and self.service is None:
            raise ValueError('[tool.mcp] needs service = "NAME": the MCP server it is on')
        return self._check_arguments()

    def _check_arguments(self) -> Tool:
        if self.arguments and self.parameters is not None:
            raise ValueError("give 'arguments' or 'parameters', not both")
        names = [a.name for a in self.arguments]
        if len(names) != len(set(names)):
            raise ValueError("argument names must be unique")
        return self

    @field_validator("parameters")
    @classmethod
    def _parameters_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return value
        if value.get("type", "object") != "object":
            raise ValueError("parameters must be a JSON Schema of type 'object'")
        from toolctl.schemas import check_parameters

        check_parameters(value)  # SchemaProblem is a ValueError: pydantic reports it
        return value

    @property
    def runtime_section(self) -> str | None:
        """The runtime the descriptor names itself; None means 'whatever the service is'."""
        if self.runtime is not None:
            return self.runtime
        given = _given(self, TOOL_SECTIONS)
        return given[0] if given else None

    def argument_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments: the single source for validation and export."""
        if self.parameters is not None:
            return {"type": "object", **self.parameters}
        mcp = getattr(self, "mcp", None)
        if mcp is not None and mcp.parameters is not None:
            return {"type": "object", **mcp.parameters}
        return {
            "type": "object",
            "properties": {a.name: a.schema_property() for a in self.arguments},
            "required": [a.name for a in self.arguments if a.required and a.default is None],
            "additionalProperties": False,
        }


ServiceState = Literal["active", "disabled"]
"""A disabled service's tools run only with `run --allow-staging`; `check --live` skips it."""
MCP_DEFAULTS: dict[str, Any] = {
    "transport": None,
    "idle_timeout": MCP_IDLE_TIMEOUT,
    "disabled_tools": [],
    "enabled_tools": None,
    "tool_timeout": None,
    "elicit": {},
    "elicit_defaults": False,
    "oauth": {},
    "pins": None,
}
"""[service.mcp] fields left out of the cached data at their defaults (locks stay the same)."""


class _ServiceHead(DescriptorModel):
    name: str = Field(pattern=NAME_PATTERN, validation_alias=AliasChoices("name", "id"))
    title: str | None = None
    description: str = ""
    state: ServiceState = "active"


if TYPE_CHECKING:
    _ServiceSections = _ServiceHead
else:
    _ServiceSections = _sections(_ServiceHead, "service", SERVICE_SECTIONS)


class Service(_ServiceSections):
    """A service tools run through: one runtime's section (Pulsar queues, an HTTP base...)."""

    @model_validator(mode="after")
    def _one_runtime(self) -> Service:
        if len(_given(self, SERVICE_SECTIONS)) != 1:
            sections = _either(SERVICE_SECTIONS, "service")
            raise ValueError(f"a service needs exactly one of {sections}")
        return self

    @property
    def runtime(self) -> str:
        """The runtime of its one section (kept as ``transport`` in its normalised data)."""
        return _given(self, SERVICE_SECTIONS)[0]


class CallEdge(DescriptorModel):
    """Action → tool: the action may call the tool, with this likelihood."""

    tool: str
    score: float = 1.0


class NextEdge(DescriptorModel):
    """Action → action: the second may follow the first, with this strength."""

    action: str
    score: float = 1.0


class Action(DescriptorModel):
    """A decision point in the toolkit graph (Chat2Graph's Action)."""

    name: str = Field(pattern=NAME_PATTERN)
    title: str | None = None
    description: str = ""
    tools: list[CallEdge] = Field(default_factory=list)
    next: list[NextEdge] = Field(default_factory=list)


class Group(DescriptorModel):
    """Tools meant to be used together, in ``usage_order`` (tool_agent's ToolGroup)."""

    name: str = Field(pattern=NAME_PATTERN)
    title: str | None = None
    description: str = ""
    category: str | None = None
    tools: list[str] = Field(default_factory=list)
    usage_order: list[str] = Field(default_factory=list)
    usage_example: str = ""

    @model_validator(mode="after")
    def _order_within_tools(self) -> Group:
        stray = [t for t in self.usage_order if t not in self.tools]
        if stray:
            raise ValueError(f"usage_order names tools not in the group: {', '.join(stray)}")
        return self


MODELS: dict[str, type[DescriptorModel]] = {
    "tool": Tool,
    "service": Service,
    "action": Action,
    "group": Group,
}


def normalise(kind: str, model: BaseModel) -> dict[str, Any]:
    """The plain-JSON form the registry caches: defaults filled, derived fields added."""
    data = model.model_dump(mode="json")
    # Left out at their defaults, so entries that never set them read as before.
    if data.get("title", "") is None:
        del data["title"]
    if data.get("state") == "active":
        del data["state"]
    if data.get("max_output") == DEFAULT_MAX_OUTPUT:
        del data["max_output"]
    if data.get("output") == "text":
        del data["output"]
    for runtime in BY_NAME:  # its section as before unless set (locks stay the same)
        if isinstance(data.get(runtime), dict) and data[runtime].get("pass_env") == []:
            del data[runtime]["pass_env"]
    if isinstance(model, Tool):
        data["schema"] = model.argument_schema()
        options = [a.name for a in model.arguments if a.allow_option]
        if options:
            data["allow_option"] = options
        for argument in data.get("arguments", []):
            if not argument.get("allow_option"):
                argument.pop("allow_option", None)  # as before unless set
        data["runtime"] = model.runtime_section  # None until the index resolves the service
        mcp = data.get("mcp")
        if isinstance(mcp, dict) and mcp.get("output_schema") is None:
            mcp.pop("output_schema", None)  # as before unless set (locks stay the same)
    elif isinstance(model, Service):
        data["transport"] = model.runtime
        mcp = data.get("mcp")
        if isinstance(mcp, dict):
            for key, default in MCP_DEFAULTS.items():
                if mcp.get(key) == default:
                    del mcp[key]
    return data
