"""Pydantic models of the four descriptor kinds; validation only, no I/O.

These models check what comes from files and the wire. Once a descriptor is valid, the
registry keeps its normalised ``model_dump`` (plain JSON data) in the cache, so the hot
paths (``show``, ``run``) never import pydantic; see ``toolctl.registry``.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    create_model,
    field_validator,
    model_validator,
)

from toolctl.arguments import DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT, MAX_OUTPUT_LIMIT, MAX_TIMEOUT
from toolctl.names import NAME_PATTERN
from toolctl.runtimes import (
    BY_NAME,
    MCP_IDLE_TIMEOUT,
    SERVICE_SECTIONS,
    TOOL_SECTIONS,
    import_dotted,
)
from toolctl.urls import url_problem

ArgType = Literal["string", "integer", "number", "boolean", "object", "array"]
InputMode = Literal["json", "none"]
RUNTIMES = tuple(BY_NAME)
"""The built-in runtimes, from the table of runtimes in ``toolctl.runners``."""
TOPIC_PATTERN = re.compile(
    r"^(persistent|non-persistent)://[A-Za-z0-9_.=-]+/[A-Za-z0-9_.=-]+/[^/\s]+$"
)
Delivery = Literal["at-most-once", "at-least-once"]
"""How a Pulsar service's worker takes requests (``[service.pulsar] delivery``)."""
ToolState = Literal["active", "staging", "disabled", "deprecated"]
"""Only "active" tools run; the others need `run --allow-staging` (``tool_state``)."""
QUEUE_CLASSES = {
    "flow": "persistent",
    "request": "non-persistent",
    "response": "non-persistent",
    "notify": "non-persistent",
}


def pulsar_topic(queue: str) -> str:
    """A queue as TrustGraph's Pulsar backend maps it: ``request:tg:x`` is
    ``non-persistent://tg/request/x`` (``flow:`` is persistent); a full topic stays as is."""
    if "://" in queue:
        return queue
    parts = queue.split(":", 2)
    if len(parts) != 3:
        raise ValueError(
            f"malformed Pulsar topic {queue!r}: expected "
            "'{persistent|non-persistent}://tenant/namespace/topic' or TrustGraph's "
            "'class:topicspace:topic'"
        )
    cls, space, topic = parts
    if cls not in QUEUE_CLASSES:
        raise ValueError(
            f"malformed Pulsar topic {queue!r}: TrustGraph's queue class {cls!r} is not "
            "flow, request, response or notify"
        )
    return f"{QUEUE_CLASSES[cls]}://{space}/{cls}/{topic}"


def _alias(*names: str) -> Any:
    return Field(validation_alias=AliasChoices(*names))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Argument(_Model):
    """One argument an LLM (or a person) supplies, TrustGraph style."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$")
    type: ArgType = "string"
    description: str = ""
    required: bool = True
    default: Any = None
    enum: list[Any] | None = None
    allow_option: bool = False
    """Whether a value starting with ``-`` may fill a whole argv item (an option)."""

    def schema_property(self) -> dict[str, Any]:
        prop: dict[str, Any] = {"type": self.type}
        if self.description:
            prop["description"] = self.description
        if self.enum is not None:
            prop["enum"] = self.enum
        if self.default is not None:
            prop["default"] = self.default
        return prop


class LocalRuntime(_Model):
    """A subprocess: argv with per-item ``{arg}`` substitution, never a shell."""

    command: list[str] = Field(min_length=1)
    input: InputMode = "json"
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class ContainerRuntime(_Model):
    """A container run through the docker or podman CLI."""

    image: str = Field(min_length=1)
    command: list[str] = Field(default_factory=list)
    input: InputMode = "json"
    env: dict[str, str] = Field(default_factory=dict)
    network: str = "none"
    memory: str | None = None
    cpus: float | None = Field(default=None, gt=0)
    read_only: bool = True
    engine: Literal["docker", "podman"] | None = None


class HttpRuntime(_Model):
    """An HTTP endpoint: an absolute ``url``, or a ``path`` below the tool's service."""

    url: str | None = None
    path: str | None = None
    method: Literal["GET", "POST"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _url_or_path(self) -> HttpRuntime:
        if (self.url is None) == (self.path is None):
            raise ValueError("give exactly one of 'url' (absolute) or 'path' (below the service)")
        if self.url is not None and (problem := url_problem(self.url)):
            raise ValueError(f"url must be absolute http(s), got {self.url!r}: {problem}")
        return self


class ToolAnnotations(_Model):
    """MCP's hints about a tool's behaviour, spelled as MCP spells them; served as given."""

    title: str | None = None
    readOnlyHint: bool | None = None
    destructiveHint: bool | None = None
    idempotentHint: bool | None = None
    openWorldHint: bool | None = None


PIN_PATTERN = r"^sha256:[0-9a-f]{64}$"


class McpRuntime(_Model):
    """One tool of an MCP service: the server's own name for it, its pin and its schema."""

    name: str = Field(min_length=1)
    """The server's name for the tool (any string the server uses, not a registry name)."""
    pin: str | None = Field(default=None, pattern=PIN_PATTERN)
    """``sha256:`` + 64 hex digits of the tool's canonical JSON when it was imported."""
    parameters: dict[str, Any] | None = None
    """The tool's ``inputSchema`` as the server sent it."""
    annotations: dict[str, Any] | None = None
    """The tool's ``annotations`` when it was imported (shown by ``--update``'s diff)."""

    @field_validator("parameters", mode="before")
    @classmethod
    def _json_text(cls, value: Any) -> Any:
        """A schema holding a JSON ``null`` (``"default": null``) is kept as JSON text:
        TOML has no null."""
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError as exc:
                raise ValueError(f"mcp.parameters is not JSON: {exc}") from None
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


def _sections(base: type[_Model], kind: str, names: tuple[str, ...]) -> type[_Model]:
    """``base`` plus one optional field per runtime section, its model from the table."""
    fields: dict[str, Any] = {}
    for name in names:
        row = BY_NAME[name]
        model = import_dotted(str(row.tool_model if kind == "tool" else row.service_model))
        fields[name] = (model | None, None)
    sections: type[_Model] = create_model(
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


class _ToolHead(_Model):
    name: str = Field(pattern=NAME_PATTERN)
    title: str | None = None
    """The name in the system it came from, when that is not a valid registry name."""
    description: str = ""
    state: ToolState = "active"
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0, le=MAX_TIMEOUT)
    """Seconds; at most a day."""
    max_output: int = Field(default=DEFAULT_MAX_OUTPUT, gt=0, le=MAX_OUTPUT_LIMIT)
    """Bytes of output a result holds (``arguments.DEFAULT_MAX_OUTPUT``); at most 1 GiB."""
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


class ConfigParam(_Model):
    name: str = Field(min_length=1)
    required: bool = False


class PulsarService(_Model):
    """A TrustGraph tool service: request and response queues plus its config params."""

    request_queue: str = _alias("request_queue", "request-queue")
    response_queue: str = _alias("response_queue", "response-queue")
    config_params: list[ConfigParam] = Field(
        default=[], validation_alias=AliasChoices("config_params", "config-params")
    )
    handler: str | None = Field(default=None, pattern=r"^[\w.]+:[\w.]+$")
    delivery: Delivery = "at-most-once"
    """at-most-once: TrustGraph's way; at-least-once: acknowledged after the answer is sent."""

    @model_validator(mode="after")
    def _persistent_for_at_least_once(self) -> PulsarService:
        if self.delivery == "at-least-once":
            for key in ("request_queue", "response_queue"):
                if not getattr(self, key).startswith("persistent://"):
                    raise ValueError(
                        f'delivery = "at-least-once" needs persistent:// queues; '
                        f"{key} is {getattr(self, key)!r}"
                    )
        return self

    @field_validator("request_queue", "response_queue")
    @classmethod
    def _topic(cls, value: str) -> str:
        value = pulsar_topic(value)
        if not TOPIC_PATTERN.match(value):
            raise ValueError(
                f"malformed Pulsar topic {value!r}: expected "
                "'{persistent|non-persistent}://tenant/namespace/topic'"
            )
        return value


class HttpService(_Model):
    """An HTTP service at a fixed ``url``, or a managed one toolctl ``start``s on a free port."""

    url: str | None = None
    start: list[str] | None = Field(default=None, min_length=1)
    health: str = "/health"
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    startup_timeout: float = Field(default=30, gt=0)

    @model_validator(mode="after")
    def _url_or_start(self) -> HttpService:
        if (self.url is None) == (self.start is None):
            raise ValueError("give exactly one of 'url' (fixed) or 'start' (managed)")
        if self.url is not None and (problem := url_problem(self.url)):
            raise ValueError(f"url must be absolute http(s), got {self.url!r}: {problem}")
        if self.start is not None and not any("{port}" in item for item in self.start):
            raise ValueError("start must pass the port it is given: put {port} in one item")
        return self


CLIENT_PLACEHOLDER = re.compile(
    r"\$\{(?:input:[^}]*|workspaceFolder\w*|workspaceRoot|userHome|pathSeparator|/)\}"
    r"|\$\{\{[^}]*\}\}"
)
"""VS Code's, Cursor's and Continue's own variables, left in a descriptor by hand or by an
import before they were resolved."""


Pin = Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]


class McpPins(_Model):
    """``[service.mcp.pins]``: the pins of what the server offers besides tools, each by its
    URI, URI template or name (written by `import mcp`)."""

    resources: dict[str, Pin] = {}
    resource_templates: dict[str, Pin] = {}
    prompts: dict[str, Pin] = {}


class McpService(_Model):
    """An MCP server: a ``command`` toolctl starts (stdio) or a ``url`` (streamable HTTP,
    or the old HTTP+SSE transport). ``${env:NAME}`` may stand in the command's items, the
    URL, env values and headers."""

    command: list[str] | None = Field(default=None, min_length=1)
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    transport: Literal["http", "sse"] | None = None
    """How ``url`` is reached: "http" streamable HTTP, "sse" the old HTTP+SSE transport;
    unset, streamable HTTP, then HTTP+SSE when the server refuses it with a 4xx."""
    headers: dict[str, str] = {}
    keep_alive: StrictBool = False
    """A run starts a kept session (stdio) that later runs reuse, until ``idle_timeout``."""
    idle_timeout: float = Field(default=MCP_IDLE_TIMEOUT, ge=0, le=MAX_TIMEOUT)
    """Seconds a kept session started by a run waits for the next call before it ends
    (0: until `service down`). `service up` sessions stay until `service down`."""
    connect_timeout: float = Field(default=30, gt=0)
    disabled_tools: list[str] = []
    """Tools `import mcp` writes disabled (a client config's ``disabledTools``)."""
    enabled_tools: list[str] | None = None
    """When set, `import mcp` writes every other tool disabled (``enabled_tools``)."""
    tool_timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT)
    """The ``timeout`` `import mcp` gives each tool (a client config's per-call timeout)."""
    elicit: dict[str, str] = {}
    """Answers to the server's elicitations when nobody can be asked (``run``, a client
    without the capability): accepted when they cover every required field, else declined."""
    oauth: dict[str, str] = {}
    """OAuth settings for `toolctl mcp login` (a server reached by URL): client_id and
    client_secret of a pre-registered client, client_metadata_url, scope, grant
    ("client_credentials" for CI; "id_jag": enterprise-managed, SEP-990, with
    idp_token_endpoint, idp_id_token, idp_client_id, idp_client_secret),
    token_endpoint_auth_method, private_key_pem; a secret as ``${env:NAME}``."""
    elicit_defaults: StrictBool = False
    """Whether the defaults the server's own form gives (SEP-1034) count as answers too."""
    pins: McpPins | None = None
    """The pins of the server's resources, resource templates and prompts: with them the
    gateway serves only those pinned and unchanged; without, all, unchecked."""

    @model_validator(mode="after")
    def _command_or_url(self) -> McpService:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of 'command' (stdio) or 'url' (streamable HTTP)")
        if self.url is not None:
            if problem := url_problem(self.url):
                raise ValueError(f"url must be absolute http(s), got {self.url!r}: {problem}")
            if self.env or self.cwd is not None:
                raise ValueError("'env' and 'cwd' belong to a stdio server ('command')")
        if self.command is not None and self.headers:
            raise ValueError("'headers' belong to an HTTP server ('url')")
        if self.command is not None and self.transport is not None:
            raise ValueError("'transport' is for a server reached by 'url'")
        values = [*(self.command or []), self.url or "", *self.env.values(), *self.headers.values()]
        for value in values:
            if found := CLIENT_PLACEHOLDER.search(value):
                raise ValueError(
                    f"{found.group()!r} is an MCP client's placeholder, which toolctl does not "
                    "fill (the server would get it as text): write ${env:NAME}, as "
                    "'toolctl import mcp-config' does"
                )
        if self.command is not None and not all(self.command):
            raise ValueError("command items must not be empty")
        return self


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


class _ServiceHead(_Model):
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


class CallEdge(_Model):
    """Action → tool: the action may call the tool, with this likelihood."""

    tool: str
    score: float = 1.0


class NextEdge(_Model):
    """Action → action: the second may follow the first, with this strength."""

    action: str
    score: float = 1.0


class Action(_Model):
    """A decision point in the toolkit graph (Chat2Graph's Action)."""

    name: str = Field(pattern=NAME_PATTERN)
    title: str | None = None
    description: str = ""
    tools: list[CallEdge] = Field(default_factory=list)
    next: list[NextEdge] = Field(default_factory=list)


class Group(_Model):
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


MODELS: dict[str, type[_Model]] = {
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
    if isinstance(model, Tool):
        data["schema"] = model.argument_schema()
        options = [a.name for a in model.arguments if a.allow_option]
        if options:
            data["allow_option"] = options
        for argument in data.get("arguments", []):
            if not argument.get("allow_option"):
                argument.pop("allow_option", None)  # as before unless set
        data["runtime"] = model.runtime_section  # None until the index resolves the service
    elif isinstance(model, Service):
        data["transport"] = model.runtime
        mcp = data.get("mcp")
        if isinstance(mcp, dict):
            for key, default in MCP_DEFAULTS.items():
                if mcp.get(key) == default:
                    del mcp[key]
    return data
