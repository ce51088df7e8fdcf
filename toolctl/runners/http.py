"""The HTTP runtime: a tool is a request to a URL, fixed or below its (maybe managed) service.

POST sends the arguments as a JSON body, GET as query parameters. Each thread of a runner
gets its own ``httpx.Client``, which keeps its connections open across that thread's calls:
one shared client would make the 16 threads of a ``--batch`` queue on its pool's lock
(httpcore checks every pooled socket under it as each request starts and ends). Clients
keep no cookies: every call stands alone. Redirects are followed only within the same
origin (scheme, host and port): a redirect elsewhere is reported, never followed, so headers
carrying secrets stay home. A call cancelled from another thread (a server's client gone,
a stopped ``--batch``) has its connection shut down, so it ends at once
(``http_exchange.Abortable``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from toolctl.errors import (
    Interrupted,
    RegistryError,
    TimedOut,
    TransportUnavailable,
    UsageError,
)
from toolctl.imports import skip_httpx_cli
from toolctl.processes.cancelling import on_cancel
from toolctl.runners.base import Call, ToolResult, ToolSpec, expand_env, expand_env_map
from toolctl.runners.http_exchange import Abortable, Answer, LazyTrust, no_cookies, read_answer
from toolctl.runners.http_messages import (
    MAX_REDIRECTS,
    RUNTIME,
    check_headers,
    failure_result,
    query,
    redact,
    same_origin,
    success_result,
)
from toolctl.settings import Settings
from toolctl.urls import shown_url, url_problem

if TYPE_CHECKING:
    import httpx

_LOOPBACK = ("all://127.0.0.1", "all://localhost", "all://[::1]")


class HttpRunner:
    """Runs ``[tool.http]``: one request per call over a shared keep-alive client."""

    runtime = RUNTIME

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._local = threading.local()  # this thread's client
        self._trust: LazyTrust | None = None  # one TLS context, loaded once, for all
        self._clients: list[tuple[httpx.Client, Abortable | None]] = []  # every thread's
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
            url += ("&" if "?" in url else "?") + urlencode(query(arguments))
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
        shown = self._shown(tool, url)
        started = time.perf_counter()
        answer = self._send(
            section["method"], url, call.arguments, headers, call.timeout, call.max_output, shown
        )
        duration = round((time.perf_counter() - started) * 1000, 3)
        if answer.response.is_success:
            return success_result(answer.text(), duration)._replace(truncated=answer.dropped)
        failed = failure_result(answer.whole(), section["method"], shown, duration, answer.text())
        return failed._replace(truncated=answer.dropped)

    def _shown(self, tool: ToolSpec, url: str) -> str:
        """``url`` as messages show it: the ``${env:}`` values it took masked (a whole URL
        from a variable may carry a token in its path), its password and query too."""
        section, service = _section(tool), (tool.service or {}).get("http") or {}
        raw = str(section.get("url") or service.get("url") or "")
        if "${env:" not in raw:
            return shown_url(url)
        masked = expand_env(raw, self.settings, mask=True)
        if not section.get("url"):
            masked = _join(masked, section["path"])
        return shown_url(masked)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            clients, self._clients = self._clients, []
        for _, backend in clients:  # the calls in flight end now, then their clients
            if backend is not None:
                backend.abort()
        for client, _ in clients:
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
        shown: str | None = None,
    ) -> Answer:
        client = self._http()  # imports httpx
        backend: Abortable | None = self._local.backend
        if backend is not None:
            backend.arm()  # a call cancelled before on this thread aborted it
            backend.deadline = time.monotonic() + timeout  # the head too (see Abortable)
        try:
            with on_cancel(backend.abort if backend is not None else _nothing):
                return self._exchange(
                    client,
                    method,
                    url,
                    arguments,
                    headers,
                    timeout,
                    max_output,
                    shown or shown_url(url),
                )
        finally:
            if backend is not None:
                backend.deadline = None

    def _exchange(
        self,
        client: httpx.Client,
        method: str,
        url: str,
        arguments: dict[str, Any],
        headers: dict[str, str],
        timeout: float,
        max_output: int | None,
        shown: str,
    ) -> Answer:
        import httpx

        deadline = time.monotonic() + timeout
        try:
            target = self._parsed(url)
            if method == "POST":
                body: dict[str, Any] = {"json": arguments}
            else:  # after the URL's own query (`?api_key=...`) as written (httpx's params
                body = {}  # replace it, and re-encode it: `?flag` became `?flag=`)
                given = {k: v for k, v in query(arguments).items() if k not in target.params}
                if given:
                    own = target.query.decode("ascii")
                    added = urlencode(given)
                    target = target.copy_with(query=(f"{own}&{added}" if own else added).encode())
            request = client.build_request(method, target, headers=headers, timeout=timeout, **body)
            answer = read_answer(client, request, deadline, max_output)
            for _ in range(MAX_REDIRECTS):
                following = answer.response.next_request
                if following is None or not same_origin(following.url, request.url):
                    break
                answer = read_answer(client, following, deadline, max_output)
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise TimedOut(f"{method} {shown} got no answer within {timeout:g} s") from exc
        except httpx.DecodingError as exc:  # a body its Content-Encoding does not decode
            raise TransportUnavailable(
                f"{method} {shown}: the answer cannot be read: {redact(str(exc), headers)}"
            ) from None
        except httpx.ConnectError as exc:
            raise TransportUnavailable(
                f"cannot connect to {shown}: {exc}",
                hint="is the server running? check the tool's url (or 'toolctl service status')",
            ) from exc
        except httpx.TransportError as exc:
            reason = redact(str(exc) or type(exc).__name__, headers)
            raise TransportUnavailable(f"{method} {shown} failed: {reason}") from None
        except (httpx.InvalidURL, UnicodeError, ValueError) as exc:  # a NUL, an IDNA label...
            reason = type(exc).__name__ if url in str(exc) else str(exc) or type(exc).__name__
            raise RegistryError(
                f"{method} {shown}: the url cannot be used: {reason}",
                hint="fix the tool's url",
            ) from None
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
                self._trust = LazyTrust.make(self.settings.environ)
        client = httpx.Client(
            verify=self._trust,
            follow_redirects=False,
            headers={"User-Agent": f"toolctl/{__version__}"},
            cookies=no_cookies(),
            # a proxy from the environment must not catch managed services on loopback
            mounts=dict.fromkeys(_LOOPBACK),
        )
        backend = _abortable(client)
        with self._lock:
            self._clients.append((client, backend))
        self._local.client, self._local.backend = client, backend
        return client

    # -- where the request goes -------------------------------------------------------

    def _url(self, tool: ToolSpec) -> str:
        """Where the call goes, its ``${env:NAME}`` values in (a missing one: exit 2)."""
        section = _section(tool)
        if section.get("url"):
            return self._expanded(tool, str(section["url"]))
        return _join(self._base(tool), section["path"])

    def _expanded(self, tool: ToolSpec, url: str) -> str:
        if "${env:" not in url:
            return url
        expanded = expand_env(url, self.settings)
        if url_problem(expanded):  # loading checked the rest: only a value can make it so
            raise UsageError(
                f"tool '{tool.name}': its url, with its ${{env:}} values, is not an http(s) "
                "URL toolctl can send to (check those variables)"
            )
        return expanded

    def _base(self, tool: ToolSpec) -> str:
        """The service's base URL; a managed service is started (once per runner) if needed."""
        service = _service_http(tool)
        if service.get("url"):
            return self._expanded(tool, str(service["url"]))
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
            return expand_env(str(section["url"]), self.settings, mask=True), False, None
        service = _service_http(tool)
        if service.get("url"):
            shown = expand_env(str(service["url"]), self.settings, mask=True)
            return _join(shown, section["path"]), False, None
        from toolctl.processes.table import ProcessTable

        record = ProcessTable(self.settings).get(str(tool.service["name"]) if tool.service else "")
        if record is not None and record.url:
            return _join(record.url, section["path"]), True, f"running (pid {record.pid})"
        planned = _join("http://127.0.0.1:{port}", section["path"])
        return planned, True, "not running: started on a free port on first use"


def _abortable(client: httpx.Client) -> Abortable | None:
    """Give the client's transports (its own, and an environment proxy's) one backend that
    another thread can abort (see ``Abortable``). httpx has no option for it: the pools'
    backend is set in place (stable through httpx 0.28, httpcore 1.0); an httpx without it
    keeps its own, and a stopped call then waits for its answer as before."""
    transports = [client._transport, *client._mounts.values()]
    pools: list[Any] = [getattr(t, "_pool", None) for t in transports if t is not None]
    if not all(hasattr(pool, "_network_backend") for pool in pools):
        return None
    backend = Abortable()
    for pool in pools:
        pool._network_backend = backend
    return backend


def _nothing() -> None:
    pass


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
