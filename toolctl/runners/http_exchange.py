"""One HTTP exchange over httpx, read whole by its deadline and capped at ``max_output``,
through clients that keep no cookies and read their TLS trust on the first handshake."""

from __future__ import annotations

import codecs
import contextlib
import socket
import ssl
import threading
import time
import weakref
import zlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import httpx


class Answer(NamedTuple):
    """An answer read whole: the (closed) response, its decoded body as far as it is held,
    and the bytes past ``max_output`` that were read and dropped."""

    response: httpx.Response
    body: bytes
    dropped: int

    def text(self) -> str:
        """The body as text, decoded as httpx's ``Response.text`` would (its default is UTF-8;
        the charset parameter is looked for only when there is one). A charset naming no
        text encoding (``rot13``, ``base64``, ``zlib``: Python has codecs of those names),
        or one that cannot replace what it cannot read (``idna``), is read as UTF-8: it
        was an internal error (exit 70) a server could cause at will."""
        declared = "charset" in self.response.headers.get("content-type", "").lower()
        encoding = (self.response.encoding if declared else None) or "utf-8"
        try:
            if getattr(codecs.lookup(encoding), "_is_text_encoding", True):
                return self.body.decode(encoding, errors="replace")
        except (LookupError, UnicodeError, TypeError, ValueError):
            pass
        return self.body.decode("utf-8", errors="replace")

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


def read_answer(
    client: httpx.Client, request: httpx.Request, deadline: float, limit: int | None = None
) -> Answer:
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
        for chunk in _decoded(streamed):
            room = len(chunk) if limit is None else max(limit - len(held), 0)
            held += chunk[:room]
            dropped += len(chunk) - min(room, len(chunk))
            if time.monotonic() > deadline:
                raise TimeoutError
    finally:
        streamed.close()
    return Answer(streamed, bytes(held), dropped)


def _decoded(streamed: httpx.Response) -> Iterator[bytes]:
    """The body's bytes as sent before its ``Content-Encoding``. gzip and deflate are
    decoded here, whole or refused (httpx.DecodingError): httpx's decoder kept the first
    member of a gzip body of several, and took one cut short for the whole body, both
    without a word. Other codings (br, zstd, several at once) are httpx's to decode."""
    codings = [
        coding
        for part in streamed.headers.get("content-encoding", "").split(",")
        if (coding := part.strip().lower()) not in ("", "identity")
    ]
    if len(codings) != 1 or codings[0] not in ("gzip", "x-gzip", "deflate"):
        yield from streamed.iter_bytes()
        return
    inflater = _Inflater(gzip=codings[0] != "deflate")
    for raw in streamed.iter_raw():
        yield inflater.feed(raw)
    inflater.finish()


class _Inflater:
    """A gzip body of any number of members, or a deflate one (zlib-wrapped, or raw as some
    servers send it), decoded as it comes; ``finish`` refuses one that ends early."""

    def __init__(self, *, gzip: bool) -> None:
        self.gzip = gzip
        self.fed = False
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)

    def feed(self, data: bytes) -> bytes:
        import httpx

        out = bytearray()
        try:
            while data:
                if not self.gzip and not self.fed:  # the first bytes tell zlib from raw
                    try:
                        out += self._zlib.decompress(data)
                    except zlib.error:
                        self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                        out += self._zlib.decompress(data)
                else:
                    out += self._zlib.decompress(data)
                self.fed, data = True, b""
                rest = self._zlib.unused_data if self._zlib.eof else b""
                if self.gzip and rest.strip(b"\0"):  # the next member
                    self._zlib, data = zlib.decompressobj(zlib.MAX_WBITS | 16), rest
        except zlib.error as exc:
            raise httpx.DecodingError(f"its {self._name} body is not one ({exc})") from None
        return bytes(out)

    def finish(self) -> None:
        import httpx

        if self.fed and not self._zlib.eof:
            raise httpx.DecodingError(f"its {self._name} body ends before its data does")

    @property
    def _name(self) -> str:
        return "gzip" if self.gzip else "deflate"


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


def no_cookies() -> Any:
    """A cookie jar that keeps nothing and sends nothing: no state passes between calls."""
    import http.cookiejar

    class NoCookies(http.cookiejar.CookieJar):
        def extract_cookies(self, response: Any, request: Any) -> None:
            pass

        def add_cookie_header(self, request: Any) -> None:
            pass

    return NoCookies()


class LazyTrust(ssl.SSLContext):
    """httpx's default TLS context, but the CA bundle is read on the first TLS handshake.

    Reading it costs 40-70 ms, a quarter of a whole ``toolctl run``; a plain http:// tool
    (every managed service) never needs it. Same trust as httpx: $SSL_CERT_FILE, else
    $SSL_CERT_DIR, else certifi's bundle.
    """

    _trust: tuple[str | None, str | None]
    _loaded: threading.Lock | None

    @classmethod
    def make(cls, environ: Mapping[str, str]) -> LazyTrust:
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


class Abortable:
    """httpcore's network backend for one client, whose open sockets another thread can shut
    down (``abort``): a call blocked reading its answer then ends at once, where closing the
    client would leave it waiting for the server or its timeout (closing a socket does not
    wake a thread blocked on it; shutting it down does). Each thread's client has one, so
    aborting ends just the call that thread is making. Once aborted, the backend opens no
    connection until ``arm`` (the start of the thread's next call). A connection being made
    when the abort comes ends with its connect timeout.

    ``deadline`` (a ``time.monotonic()``; None: none) bounds every read and write of the
    thread's call: httpx's timeouts bound each read alone, so a server sending `100
    Continue` forever, or a head a byte at a time, held a call past its timeout for good.
    """

    def __init__(self) -> None:
        import httpcore

        self._backend = httpcore.SyncBackend()
        self._streams: weakref.WeakSet[_Kept] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._aborted = False
        self.deadline: float | None = None
        self.read_late, self.write_late = httpcore.ReadTimeout, httpcore.WriteTimeout

    def bounded(self, timeout: float | None, late: type[Exception]) -> float | None:
        """``timeout`` cut to what is left before the deadline; ``late`` once it passed."""
        if self.deadline is None:
            return timeout
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise late("the call's timeout passed")
        return left if timeout is None else min(timeout, left)

    def arm(self) -> None:
        with self._lock:
            self._aborted = False

    def abort(self) -> None:
        """Shut down every connection this backend opened (from any thread)."""
        with self._lock:
            self._aborted = True
            streams = list(self._streams)
        for stream in streams:
            stream.shut_down()

    def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
        return self._kept(self._backend.connect_tcp(*args, **kwargs))

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
        return self._kept(self._backend.connect_unix_socket(*args, **kwargs))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)

    def _kept(self, stream: Any) -> _Kept:
        kept = _Kept(stream, self)
        with self._lock:
            if not self._aborted:
                self._streams.add(kept)
                return kept
        stream.close()
        import httpcore

        raise httpcore.ConnectError("the call was stopped")

    def _upgraded(self, stream: _Kept) -> None:
        with self._lock:
            aborted = self._aborted
        if aborted:
            stream.shut_down()


class _Kept:
    """A connection of an ``Abortable`` backend (httpcore's NetworkStream interface)."""

    def __init__(self, stream: Any, backend: Abortable) -> None:
        self._stream = stream
        self._backend = backend

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        backend = self._backend
        data: bytes = self._stream.read(max_bytes, backend.bounded(timeout, backend.read_late))
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        backend = self._backend
        self._stream.write(buffer, backend.bounded(timeout, backend.write_late))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, *args: Any, **kwargs: Any) -> _Kept:
        # the TLS socket takes over the descriptor: the plain one can no longer shut it down
        self._stream = self._stream.start_tls(*args, **kwargs)
        self._backend._upgraded(self)
        return self

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)

    def shut_down(self) -> None:
        sock = self._stream.get_extra_info("socket")
        with contextlib.suppress(OSError, AttributeError):
            # the plain socket's shutdown even for a TLS one: no TLS close_notify, and no
            # change to the SSLSocket the reading thread is inside
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
