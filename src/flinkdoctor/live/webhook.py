"""POST each incident to a webhook (Slack-like receivers, an alert manager); a failure is reported, not raised."""

from __future__ import annotations

import urllib3

from ..errors import UsageError
from .client import redact


class Webhook:
    def __init__(self, url: str, timeout: float = 10.0):
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--webhook: not an http(s) URL: {redact(url)!r}")
        self.url = url
        self._pool = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=timeout, read=timeout),
            retries=urllib3.Retry(
                total=2,
                backoff_factor=0.5,
                status_forcelist=(502, 503, 504),
                allowed_methods=frozenset({"POST"}),
                raise_on_status=False,
            ),
        )

    def post(self, body: str) -> str | None:
        """None when the receiver took it, else why not (the URL without its user-info)."""
        try:
            response = self._pool.request(
                "POST", self.url, body=body.encode("utf-8"), headers={"Content-Type": "application/json"}
            )
        except urllib3.exceptions.HTTPError as err:
            return f"POST {redact(self.url)} failed: {type(err).__name__}"
        if not 200 <= response.status < 300:
            return f"POST {redact(self.url)} answered HTTP {response.status}"
        return None
