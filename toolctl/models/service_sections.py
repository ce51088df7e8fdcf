"""The runtime sections of a service: ``[service.pulsar]`` (its queues as TrustGraph names
them), ``[service.http]`` and ``[service.mcp]``."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    AliasChoices,
    Field,
    StrictBool,
    StringConstraints,
    field_validator,
    model_validator,
)

from toolctl.arguments import MAX_TIMEOUT
from toolctl.models.fields import Cwd, DescriptorModel, PassEnv, aliased
from toolctl.runtimes import (
    MCP_IDLE_TIMEOUT,
)
from toolctl.urls import headers_problem, shown_url, url_problem

TOPIC_PATTERN = re.compile(
    r"^(persistent|non-persistent)://[A-Za-z0-9_.=-]+/[A-Za-z0-9_.=-]+/[^/\s]+$"
)
Delivery = Literal["at-most-once", "at-least-once"]
"""How a Pulsar service's worker takes requests (``[service.pulsar] delivery``)."""
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


class ConfigParam(DescriptorModel):
    name: str = Field(min_length=1)
    required: bool = False


class PulsarService(DescriptorModel):
    """A TrustGraph tool service: request and response queues plus its config params."""

    request_queue: str = aliased("request_queue", "request-queue")
    response_queue: str = aliased("response_queue", "response-queue")
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


class HttpService(DescriptorModel):
    """An HTTP service at a fixed ``url``, or a managed one toolctl ``start``s on a free port."""

    url: str | None = None
    start: list[str] | None = Field(default=None, min_length=1)
    health: str = "/health"
    cwd: Cwd = None
    env: dict[str, str] = Field(default_factory=dict)
    pass_env: PassEnv
    startup_timeout: float = Field(default=30, gt=0)

    @model_validator(mode="after")
    def _url_or_start(self) -> HttpService:
        if (self.url is None) == (self.start is None):
            raise ValueError("give exactly one of 'url' (fixed) or 'start' (managed)")
        if self.url is not None and (problem := url_problem(self.url)):
            raise ValueError(
                f"url must be absolute http(s), got {shown_url(self.url)!r}: {problem}"
            )
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


class McpPins(DescriptorModel):
    """``[service.mcp.pins]``: the pins of what the server offers besides tools, each by its
    URI, URI template or name (written by `import mcp`)."""

    resources: dict[str, Pin] = Field(default_factory=dict)
    resource_templates: dict[str, Pin] = Field(default_factory=dict)
    prompts: dict[str, Pin] = Field(default_factory=dict)


class McpService(DescriptorModel):
    """An MCP server: a ``command`` toolctl starts (stdio) or a ``url`` (streamable HTTP,
    or the old HTTP+SSE transport). ``${env:NAME}`` may stand in the command's items, the
    URL, env values and headers."""

    command: list[str] | None = Field(default=None, min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    pass_env: PassEnv
    cwd: Cwd = None
    url: str | None = None
    transport: Literal["http", "sse"] | None = None
    """How ``url`` is reached: "http" streamable HTTP, "sse" the old HTTP+SSE transport;
    unset, streamable HTTP, then HTTP+SSE when the server refuses it with a 4xx."""
    headers: dict[str, str] = Field(default_factory=dict)
    keep_alive: StrictBool = False
    """A run starts a kept session (stdio) that later runs reuse, until ``idle_timeout``."""
    idle_timeout: float = Field(default=MCP_IDLE_TIMEOUT, ge=0, le=MAX_TIMEOUT)
    """Seconds a kept session started by a run waits for the next call before it ends
    (0: until `service down`). `service up` sessions stay until `service down`."""
    connect_timeout: float = Field(default=30, gt=0)
    disabled_tools: list[str] = Field(default_factory=list)
    """Tools `import mcp` writes disabled (a client config's ``disabledTools``)."""
    enabled_tools: list[str] | None = None
    """When set, `import mcp` writes every other tool disabled (``enabled_tools``)."""
    tool_timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT)
    """The ``timeout`` `import mcp` gives each tool (a client config's per-call timeout)."""
    elicit: dict[str, str] = Field(default_factory=dict)
    """Answers to the server's elicitations when nobody can be asked (``run``, a client
    without the capability): accepted when they cover every required field, else declined."""
    oauth: dict[str, str] = Field(default_factory=dict)
    """OAuth settings for `toolctl mcp login` (a server reached by URL): client_id and
    client_secret of a pre-registered client, client_metadata_url, scope, grant
    ("client_credentials" for CI; "id_jag": enterprise-managed, SEP-990, with
    idp_token_endpoint, idp_id_token, idp_client_id, idp_client_secret),
    token_endpoint_auth_method, private_key_pem, signing_algorithm, issuer (the only
    authorization server a login deals with); a secret as ``${env:NAME}``."""
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
                raise ValueError(
                    f"url must be absolute http(s), got {shown_url(self.url)!r}: {problem}"
                )
            if self.env or self.cwd is not None:
                raise ValueError("'env' and 'cwd' belong to a stdio server ('command')")
        if self.command is not None and self.headers:
            raise ValueError("'headers' belong to an HTTP server ('url')")
        if problem := headers_problem(self.headers):
            raise ValueError(problem)
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
