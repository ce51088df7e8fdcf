"""The HTTP runtime: a tool is a request to a URL, fixed or below its (maybe managed) service.

POST sends the arguments as a JSON body, GET as query parameters. Each thread of a runner
gets its own ``httpx.Client``, which keeps its connections open across that thread's calls:
one shared client would make the 16 threads of a ``--batch`` queue on its pool's lock
(httpcore checks every pooled socket under it as each request starts and ends). Clients
keep no cookies: every call stands alone. Redirects are followed only within the same
origin (scheme, host and port): a redirect elsewhere is reported, never followed, so headers
carrying secrets stay home.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlencode

from toolctl.errors import Interrupted, TimedOut, TransportUnavailable, UsageError
from toolctl.imports import skip_httpx_cli
from toolctl.runners.base import Call, ToolResult, ToolSpec, expand_env_map
from toolctl.settings import Settings

if TYPE_CHECKING:
    import httpx

MAX_REDIRECTS = 5
EXCERPT = 200
_LOOPBACK = ("all://127.0.0.1", "all://localhost", "all://[::1]")


class HttpRunner:
    """Runs ``[tool.http]``: one request per call over a shared keep-alive client."""

    runtime = "http"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._local = threading.local()  # this thread's client
        self._trust: _LazyTrust | None = None  # one TLS context, loaded once, for all
        self._clients: list[httpx.Client] = []  # every thread's, to close
        self._bases: dict[str, str] = {}
        self._urls: dict[str, httpx.URL] = {}
        self._lock = threading.Lock()
        self._closed = False

    def describe(self, call: Call) -> dict[str, Any]:
        tool, arguments = call.tool, call.arguments
        section = _section(tool)
        method = section["method"]
        url, managed, state = self._planned_url(tool)
        if method == "GET" and arguments:
            url += ("&" if "?" in url else "?") + urlencode(_query(arguments))
        plan: dict[str, Any] = {
            "transport": self.runtime,
            "method": method,
            "url": url,
            "headers": expand_env_map(section["headers"], self.settings, mask=True),
            "body": "arguments as JSON" if method == "POST" else "none (arguments in the query)",
            "timeout": call.timeout,
            "managed": managed,
        }
        if tool.service is not None:
            plan["service"] = tool.service["name"]
        if state:
            plan["service_state"] = state
        return plan

    def run(self, call: Call) -> ToolResult:
        tool = call.tool
        section = _section(tool)
        headers = expand_env_map(section["headers"], self.settings)  # a missing secret: exit 2
        check_headers(tool.name, headers)
        if call.traceparent and not any(k.lower() == "traceparent" for k in headers):
            headers["traceparent"] = call.traceparent
        url = self._url(tool)  # may start the managed service
        started = time.perf_counter()
        answer = self._send(
            section["method"], url, call.arguments, headers, call.timeout, call.max_output
        )
        duration = round((time.perf_counter() - started) * 1000, 3)
        if answer.response.is_success:
            return _success(answer.text(), duration)._replace(truncated=answer.dropped)
        failed = _failure(answer.whole(), section["method"], url, duration)
        return failed._replace(truncated=answer.dropped)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()

    # -- the request ------------------------------------------------------------------

    def _send(
        self,
        method: str,
        url: str,
        arguments: dict[str, Any],
        headers: dict[str, str],
        timeout: float,
        max_output: int | None = None,
    ) -> _Answer:
        client = self._http()  # imports httpx
        import httpx

        body = {"json": arguments} if method == "POST" else {"params": _query(arguments)}
        deadline = time.monotonic() + timeout
        try:
            request = client.build_request(
                method, self._parsed(url), headers=headers, timeout=timeout, **body
            )
            answer = _read(client, request, deadline, max_output)
            for _ in range(MAX_REDIRECTS):
                following = answer.response.next_request
                if following is None or not _same_origin(following.url, request.url):
                    break
                answer = _read(client, following, deadline, max_output)
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise TimedOut(f"{method} {url} got no answer within {timeout:g} s") from exc
        except httpx.ConnectError as exc:
            raise TransportUnavailable(
                f"cannot connect to {url}: {exc}",
                hint="is the server running? check the tool's url (or 'toolctl service status')",
            ) from exc
        except httpx.TransportError as exc:
            reason = _redact(str(exc) or type(exc).__name__, headers)
            raise TransportUnavailable(f"{method} {url} failed: {reason}") from None
        return answer

    def _parsed(self, url: str) -> httpx.URL:
        """``url`` parsed once per runner: parsing is a tenth of what building a request costs."""
        parsed = self._urls.get(url)
        if parsed is None:
            import httpx

            parsed = self._urls[url] = httpx.URL(url)
        return parsed

    def _http(self) -> httpx.Client:
        """This thread's client, made on its first call (a --dry-run never pays for one)."""
        client: httpx.Client | None = getattr(self._local, "client", None)
        if client is not None and not self._closed:
            return client
        if self._closed:
            raise Interrupted("the call was stopped")
        skip_httpx_cli()
        import httpx

        from toolctl import __version__

        with self._lock:
            if self._trust is None:
                self._trust = _LazyTrust.make(self.settings.environ)
        client = httpx.Client(
            verify=self._trust,
            follow_redirects=False,
            headers={"User-Agent": f"toolctl/{__version__}"},
            cookies=_no_cookies(),
            # a proxy from the environment must not catch managed services on loopback
            mounts=dict.fromkeys(_LOOPBACK),
        )
        with self._lock:
            self._clients.append(client)
        self._local.client = client
        return client

    # -- where the request goes -------------------------------------------------------

    def _url(self, tool: ToolSpec) -> str:
        section = _section(tool)
        if section.get("url"):
            return str(section["url"])
        return _join(self._base(tool), section["path"])

    def _base(self, tool: ToolSpec) -> str:
        """The service's base URL; a managed service is started (once per runner) if needed."""
        service = _service_http(tool)
        if service.get("url"):
            return str(service["url"])
        name = str(tool.service["name"]) if tool.service else ""
        if (known := self._bases.get(name)) is not None:
            return known
        with self._lock:  # batch threads wait for the one that starts the service
            if name not in self._bases:
                from toolctl.processes.services import ManagedService, ensure_running

                # the service's cwd is relative to the file that defines the service
                managed = ManagedService(name, service, tool.service_dir)
                record, _ = ensure_running(self.settings, managed)
                assert record.url is not None
                self._bases[name] = record.url
            return self._bases[name]

    def _planned_url(self, tool: ToolSpec) -> tuple[str, bool, str | None]:
        """URL, whether the service is managed, and its state; starts nothing."""
        section = _section(tool)
        if section.get("url"):
            return str(section["url"]), False, None
        service = _service_http(tool)
        if service.get("url"):
            return _join(str(service["url"]), section["path"]), False, None
        from toolctl.processes.table import ProcessTable

        record = ProcessTable(self.settings).get(str(tool.service["name"]) if tool.service else "")
        if record is not None and record.url:
            return _join(record.url, section["path"]), True, f"running (pid {record.pid})"
        planned = _join("http://127.0.0.1:{port}", section["path"])
        return planned, True, "not running: started on a free port on first use"


class _Answer(NamedTuple):
    """An answer read whole: the (closed) response, its decoded body as far as it is held,
    and the bytes past ``max_output`` that were read and dropped."""

    response: httpx.Response
    body: bytes
    dropped: int

    def text(self) -> str:
        """The body as text, decoded as httpx's ``Response.text`` would (its default is UTF-8;
        the charset parameter is looked for only when there is one)."""
        declared = "charset" in self.response.headers.get("content-type", "").lower()
        encoding = self.response.encoding if declared else "utf-8"
        return self.body.decode(encoding or "utf-8", errors="replace")

    def whole(self) -> httpx.Response:
        """A response holding the body (a failure's excerpt and JSON are read from it)."""
        import httpx

        streamed = self.response
        headers = [
            (key, value)
            for key, value in streamed.headers.multi_items()
            if key.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        whole = httpx.Response(  # already decoded (gzip, ...): the encoding headers are gone
            streamed.status_code,
            headers=headers,
            content=self.body,
            request=streamed.request,
            extensions=streamed.extensions,
        )
        whole.next_request = streamed.next_request
        return whole


def _read(
    client: httpx.Client, request: httpx.Request, deadline: float, limit: int | None = None
) -> _Answer:
    """Send and read the whole answer by ``deadline``: httpx's timeouts bound each read,
    so a server dripping bytes (or streaming forever) would otherwise hold the call open.

    The body is read chunk by chunk against the deadline; a server silent for a whole
    timeout is cut by the read timeout, so a call ends within its timeout plus one gap.
    At most ``limit`` bytes of the (decoded) body are held; the rest is read and counted.
    """
    streamed = _exchange(client, request)
    held = bytearray()
    dropped = 0
    try:
        for chunk in streamed.iter_bytes():
            room = len(chunk) if limit is None else max(limit - len(held), 0)
            held += chunk[:room]
            dropped += len(chunk) - min(room, len(chunk))
            if time.monotonic() > deadline:
                raise TimeoutError
    finally:
        streamed.close()
    return _Answer(streamed, bytes(held), dropped)


def _exchange(client: httpx.Client, request: httpx.Request) -> httpx.Response:
    """``client.send(request, stream=True)`` without the client's per-request layers.

    Those layers (auth flow, redirect loop, event hooks, cookie extraction through urllib's
    cookie machinery, logging) cost a fifth of a call's CPU, and this runner uses none of
    them: no auth, no cookies, redirects are its own. The request still goes through the
    transport the client mounted for its URL (an environment proxy, or none for loopback),
    and a redirect's next request is built by the client, as ``send`` would.
    An httpx without those two private methods (they are stable through 0.28) gets the
    public ``send``, with the same answers.
    """
    transport_for = getattr(client, "_transport_for_url", None)
    if transport_for is None or not hasattr(client, "_build_redirect_request"):
        return client.send(request, stream=True)
    response: httpx.Response = transport_for(request.url).handle_request(request)
    response.request = request
    if response.has_redirect_location:
        try:
            response.next_request = client._build_redirect_request(request, response)
        except BaseException:  # a Location that is no URL: the connection is not kept
            response.close()
            raise
    return response


def _no_cookies() -> Any:
    """A cookie jar that keeps nothing and sends nothing: no state passes between calls."""
    import http.cookiejar

    class NoCookies(http.cookiejar.CookieJar):
        def extract_cookies(self, response: Any, request: Any) -> None:
            pass

        def add_cookie_header(self, request: Any) -> None:
            pass

    return NoCookies()


class _LazyTrust(ssl.SSLContext):
    """httpx's default TLS context, but the CA bundle is read on the first TLS handshake.

    Reading it costs 40-70 ms, a quarter of a whole ``toolctl run``; a plain http:// tool
    (every managed service) never needs it. Same trust as httpx: $SSL_CERT_FILE, else
    $SSL_CERT_DIR, else certifi's bundle.
    """

    _trust: tuple[str | None, str | None]
    _loaded: threading.Lock | None

    @classmethod
    def make(cls, environ: Mapping[str, str]) -> _LazyTrust:
        context = cls(ssl.PROTOCOL_TLS_CLIENT)  # verifies certificates and host names
        if environ.get("SSL_CERT_FILE"):
            context._trust = (environ["SSL_CERT_FILE"], None)
        elif environ.get("SSL_CERT_DIR"):
            context._trust = (None, environ["SSL_CERT_DIR"])
        else:
            import certifi

            context._trust = (certifi.where(), None)
        context._loaded = threading.Lock()
        return context

    def _load(self) -> None:
        lock = self._loaded
        if lock is None:
            return
        with lock:
            if self._loaded is not None:
                self.load_verify_locations(cafile=self._trust[0], capath=self._trust[1])
                self._loaded = None

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self._load()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self._load()
        return super().wrap_bio(*args, **kwargs)


def _section(tool: ToolSpec) -> Mapping[str, Any]:
    section: Mapping[str, Any] | None = tool.data.get("http")
    if not section:
        service = tool.service["name"] if tool.service else "?"
        raise UsageError(
            f"tool '{tool.name}' uses HTTP service '{service}' but has no [tool.http]",
            hint="add [tool.http] with the path to call; 'toolctl check' reports this",
        )
    return section


def _service_http(tool: ToolSpec) -> Mapping[str, Any]:
    service: Mapping[str, Any] | None = (tool.service or {}).get("http")
    if not service:
        raise UsageError(
            f"tool '{tool.name}': http.path needs an HTTP service, "
            f"'{(tool.service or {}).get('name', '?')}' is not one",
            hint="run 'toolctl check'",
        )
    return service


def _join(base: str, path: str) -> str:
    return base.rstrip("/") + "/" + path.lstrip("/")


def _query(arguments: Mapping[str, Any]) -> dict[str, str]:
    """GET parameters: strings as they are, everything else JSON-encoded (``true``, ``3``)."""
    return {
        key: value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        for key, value in arguments.items()
        if value is not None
    }


def _same_origin(target: httpx.URL, origin: httpx.URL) -> bool:
    return (target.scheme, target.host, target.port) == (origin.scheme, origin.host, origin.port)


def _success(text: str, duration_ms: float) -> ToolResult:
    result = ToolResult.from_answer(text, runtime=HttpRunner.runtime, duration_ms=duration_ms)
    # plain JSON data (not ToolResult-shaped) with an "output" field: that is the observation
    if isinstance(result.data, dict) and result.output == text.rstrip("\n"):
        answer = result.data.get("output")
        if isinstance(answer, str):
            return result._replace(output=answer)
    return result


def _failure(response: httpx.Response, method: str, url: str, duration_ms: float) -> ToolResult:
    status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
    location = response.headers.get("location")
    if response.is_redirect and location:
        reason = f"{status} from {method} {url}: redirect to {location} not followed"
        following = response.next_request
        cross = following is not None and not _same_origin(following.url, response.request.url)
        reason += " (another host)" if cross else f" (more than {MAX_REDIRECTS} redirects)"
    else:
        reason = f"{status} from {method} {url}: {_excerpt(response.text) or '(empty body)'}"
    try:
        data = response.json() if response.content else None
    except ValueError:
        data = None
    return ToolResult(
        False, "", data, reason, duration_ms=duration_ms, transport=HttpRunner.runtime
    )


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT else flat[:EXCERPT] + "…"


_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def check_headers(tool: str, headers: Mapping[str, str]) -> None:
    """A UsageError (exit 2) naming the first header that cannot be sent, and why; the value
    itself (a secret from ``${env:...}``, as often as not) is never part of the message."""
    for name, value in headers.items():
        why = None
        if not _HEADER_NAME.match(name):
            why = "its name is not a valid HTTP header name"
        elif not value.isascii():
            why = "its value has characters outside ASCII"
        elif any((ord(c) < 32 and c != "\t") or ord(c) == 127 for c in value):
            why = "its value has a control character (a newline, a carriage return)"
        elif value != value.strip(" \t"):
            why = "its value starts or ends with whitespace"
        if why:
            raise UsageError(
                f"tool '{tool}': header {ascii(name) if not name.isascii() else repr(name)} "
                f"cannot be sent: {why} (the value is not shown)",
                hint="check the environment variable the header takes its value from",
            )


def _redact(message: str, headers: Mapping[str, str]) -> str:
    """``message`` with every header value (and its repr) replaced by ``***``."""
    for value in headers.values():
        for shown in {
            value,
            value.strip(),
            repr(value)[1:-1],
            repr(value.encode(errors="replace"))[2:-1],
        }:
            if len(shown) >= 4:
                message = message.replace(shown, "***")
    return message
