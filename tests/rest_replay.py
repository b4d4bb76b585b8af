"""Recorded Flink REST answers: record them from a real cluster, and serve them again from a real HTTP server.

    python tests/rest_replay.py record http://localhost:8081 tests/data/rest/1.20.3/recording.json

records every GET that `flinkdoctor collect` makes (status, JSON body or text), with secrets masked and each log
cut to its last lines. `ReplayServer` serves a recording on 127.0.0.1 so the collector's tests run its real HTTP
client; a test can make a path answer slowly, answer another status, or make a TaskManager disappear.
"""

from __future__ import annotations

import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

LOG_LINES = 400  # a recorded log keeps its last lines


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


class ReplayServer:
    """Serves `recording["responses"]` ({path with query: {status, type, body}}) until stopped.

    slow: {path prefix: seconds to wait before answering}; status: {path prefix: status to answer instead};
    gone: path prefixes that answer 404 with Flink's error body once `gone_after` requests were served."""

    def __init__(self, recording: dict, tls: tuple[Path, Path] | None = None):
        self.responses = recording["responses"]
        self.slow: dict[str, float] = {}
        self.status: dict[str, int] = {}
        self.gone: list[str] = []
        self.gone_after = 0
        self.requests: list[tuple[str, dict]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                server.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                body, status, kind = server.answer(self.path)
                for prefix, seconds in server.slow.items():
                    if self.path.startswith(prefix):
                        time.sleep(seconds)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        scheme = "http"
        if tls:  # (certificate, key): serve https
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://localhost:{self.httpd.server_address[1]}"  # as the lab names its JobManager
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, path: str) -> tuple[bytes, int, str]:
        for prefix, status in self.status.items():
            if path.startswith(prefix):
                return _flink_error(f"Not found: {path}"), status, "application/json; charset=UTF-8"
        if any(path.startswith(p) for p in self.gone) and len(self.requests) > self.gone_after:
            return _flink_error("TaskManager not found"), 404, "application/json; charset=UTF-8"
        entry = self.responses.get(path)
        if entry is None:
            return _flink_error(f"Not found: {path}"), 404, "application/json; charset=UTF-8"
        if entry["type"] == "json":
            return json.dumps(entry["body"]).encode(), entry["status"], "application/json; charset=UTF-8"
        return entry["body"].encode(), entry["status"], "text/plain"

    def __enter__(self) -> ReplayServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _flink_error(message: str) -> bytes:
    return json.dumps({"errors": [message]}).encode()


def record(url: str, out: Path) -> None:
    """Run the real collector against `url` and keep every answer it got."""
    from flinkdoctor.live import client as live_client
    from flinkdoctor.live.collector import collect
    from flinkdoctor.safety.masking import mask, scrub

    responses: dict[str, dict] = {}
    real_json, real_tail = live_client.RestClient.get_json, live_client.RestClient.get_tail

    def get_json(self, path, max_bytes=live_client.MAX_JSON_BYTES):
        try:
            document, body = real_json(self, path, max_bytes)
        except live_client.RestError as err:
            responses[path] = {"status": err.status or 0, "type": "json", "body": {"errors": [str(err)]}}
            raise
        responses[path] = {"status": 200, "type": "json", "body": scrub(document)}
        return document, body

    def get_tail(self, path, keep):
        tail = real_tail(self, path, keep)
        lines = tail.data.decode("utf-8", "replace").splitlines(keepends=True)[-LOG_LINES:]
        responses[path] = {"status": 200, "type": "text", "body": "".join(mask(line) or "" for line in lines)}
        return tail

    live_client.RestClient.get_json, live_client.RestClient.get_tail = get_json, get_tail
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        result = collect(live_client.RestClient(live_client.Connection.from_url(url)), Path(tmp) / "b.tar.gz")
    out.parent.mkdir(parents=True, exist_ok=True)
    recording = {
        "flink_version": result.flink_version,
        "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "jobs": result.jobs,
        "responses": dict(sorted(responses.items())),
    }
    out.write_text(json.dumps(recording, indent=1) + "\n", encoding="utf-8")
    print(f"{len(responses)} answers from Flink {result.flink_version} in {out}")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "record":
        sys.exit(__doc__)
    record(sys.argv[2], Path(sys.argv[3]))
