"""One HTTP client for a JobManager's REST API: timeouts, retries, TLS and basic/bearer auth, bounded reads.

Every answer is hostile input: JSON bodies are read up to a size limit, logs are streamed and only their tail is
kept, and a failure becomes a `RestError` whose `kind` says what happened (refused, timeout, http, tls, invalid),
so callers can report it instead of crashing. Credentials live only in this object's headers, never in its URL.
"""

from __future__ import annotations

import json
import ssl
from collections import deque
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit, urlunsplit

import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)

MAX_JSON_BYTES = 32 * 1024 * 1024
CHUNK = 256 * 1024


class RestError(Exception):
    """A REST call that gave no usable answer. kind: refused, timeout, http, tls, invalid, too-large, other."""

    def __init__(self, path: str, kind: str, message: str, status: int | None = None):
        super().__init__(f"{path}: {message}")
        self.path, self.kind, self.status = path, kind, status


@dataclass(frozen=True)
class Connection:
    """How to reach the JobManager. `url` carries no credentials (see `from_url`)."""

    url: str
    timeout: float = 10.0
    retries: int = 2
    ca_file: str | None = None
    insecure: bool = False
    client_cert: str | None = None
    client_key: str | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)

    @classmethod
    def from_url(cls, url: str, **options) -> Connection:
        """A Connection for `url`; user:password@ in the URL becomes basic auth and leaves the URL."""
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {redact(url)!r}")
        if parts.username is not None:
            options.setdefault("user", parts.username)
            options.setdefault("password", parts.password)
        netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
        if parts.port:
            netloc += f":{parts.port}"
        clean = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
        return cls(url=clean, **options)

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or "jobmanager"


def redact(url: str) -> str:
    """A URL without its user-info, for messages."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def segment(value: str) -> str:
    """A REST path parameter (a TaskManager id, a log name) quoted so it stays one segment."""
    return quote(value, safe=":-_.")


@dataclass
class Tail:
    """The last bytes of a streamed body: `data`, and how many bytes the body had in all."""

    data: bytes
    total: int

    @property
    def truncated(self) -> bool:
        return self.total > len(self.data)


class RestClient:
    """GET requests against one JobManager; thread-safe (urllib3's pool is)."""

    def __init__(self, connection: Connection):
        self.connection = connection
        headers = {"Accept": "application/json, text/plain;q=0.9", "User-Agent": "flinkdoctor-collect"}
        if connection.token:
            headers["Authorization"] = f"Bearer {connection.token}"
        elif connection.user is not None:
            headers.update(urllib3.make_headers(basic_auth=f"{connection.user}:{connection.password or ''}"))
        tls: dict = {}
        if connection.url.startswith("https"):
            if connection.insecure:
                tls = {"cert_reqs": ssl.CERT_NONE, "assert_hostname": False}
                urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
            else:
                tls = {"cert_reqs": ssl.CERT_REQUIRED, "ca_certs": connection.ca_file}
            if connection.client_cert:
                tls.update(cert_file=connection.client_cert, key_file=connection.client_key)
        retries = urllib3.Retry(
            total=connection.retries,
            connect=connection.retries,
            read=connection.retries,
            status=connection.retries,
            status_forcelist=(502, 503, 504),
            backoff_factor=0.5,
            allowed_methods=frozenset({"GET"}),
            raise_on_status=False,
            redirect=0,
        )
        self._pool = urllib3.PoolManager(
            headers=headers,
            retries=retries,
            timeout=urllib3.Timeout(connect=connection.timeout, read=connection.timeout),
            **tls,
        )

    def _open(self, path: str) -> urllib3.BaseHTTPResponse:
        try:
            response = self._pool.request("GET", self.connection.url + path, preload_content=False)
        except MaxRetryError as err:
            raise _error(path, err.reason or err) from None
        except HTTPError as err:
            raise _error(path, err) from None
        if response.status != 200:
            try:
                body = _read(response, 64 * 1024)
            except HTTPError:
                body = b""  # the status says enough
            finally:
                response.release_conn()
            raise RestError(path, "http", f"HTTP {response.status}{_flink_error(body)}", response.status)
        return response

    def get_json(self, path: str, max_bytes: int = MAX_JSON_BYTES) -> tuple[object, bytes]:
        """The parsed JSON answer and its raw bytes; RestError when there is none."""
        response = self._open(path)
        try:
            body = _read(response, max_bytes + 1)
        except HTTPError as err:
            raise _error(path, err) from None
        finally:
            response.release_conn()
        if len(body) > max_bytes:
            raise RestError(path, "too-large", f"answer larger than {max_bytes} bytes")
        try:
            return json.loads(body.decode("utf-8")), body
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise RestError(path, "invalid", f"not JSON ({err})") from None

    def get_tail(self, path: str, keep: int) -> Tail:
        """Stream a text answer (a log) and keep its last `keep` bytes (Flink ignores Range headers)."""
        response = self._open(path)
        chunks: deque[bytes] = deque()
        held = total = 0
        try:
            for chunk in response.stream(CHUNK):
                chunks.append(chunk)
                held += len(chunk)
                total += len(chunk)
                while chunks and held - len(chunks[0]) >= keep:
                    held -= len(chunks.popleft())
        except HTTPError as err:
            raise _error(path, err) from None
        finally:
            response.release_conn()
        data = b"".join(chunks)
        return Tail(data[-keep:] if keep else b"", total)


def _read(response, limit: int) -> bytes:
    out = bytearray()
    for chunk in response.stream(CHUNK):
        out += chunk
        if len(out) >= limit:
            break
    return bytes(out[:limit])


def _flink_error(body: bytes) -> str:
    """Flink's own first error line ({"errors": [...]}), short, for the collector's log."""
    try:
        errors = json.loads(body.decode("utf-8")).get("errors") or []
    except (UnicodeDecodeError, ValueError, AttributeError):
        return ""
    first = str(errors[-1] if len(errors) > 1 else errors[0]).strip().splitlines() if errors else []
    return f": {first[0][:200]}" if first else ""


def _error(path: str, err: BaseException) -> RestError:
    if isinstance(err, (NewConnectionError, ConnectionRefusedError)):
        return RestError(path, "refused", "connection refused or host unreachable")
    if isinstance(err, (ConnectTimeoutError, ReadTimeoutError, TimeoutError)):
        return RestError(path, "timeout", "timed out")
    if isinstance(err, SSLError):
        return RestError(path, "tls", f"TLS error: {err}")
    if isinstance(err, ProtocolError):
        return RestError(path, "refused", f"connection dropped ({err})")
    return RestError(path, "other", f"{type(err).__name__}: {err}")
