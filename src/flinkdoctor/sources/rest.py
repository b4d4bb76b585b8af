"""REST snapshots as evidence: exception history and failed checkpoints from Flink's REST API JSON.

Each exception or checkpoint failure found in a JSON document becomes a text event (its time and its message
or stack trace), written to a derived source that the same Spark rules read. Evidence then points at the JSON
file. Walking the document generically (any object with a message field and a time field) keeps this working
across the REST versions: `root-exception`/`all-exceptions` (old), `exceptionHistory.entries` (1.13+),
checkpoint `history` entries with `failure_message`.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ..jsondata import JSON

MESSAGE_KEYS = ("stacktrace", "root-exception", "exception", "failure_message")
TIME_KEYS = ("timestamp", "failure_timestamp", "trigger_timestamp")


# Top-level keys of the REST answers that carry failures: /jobs/:id/exceptions and /jobs/:id/checkpoints.
REST_FAILURE_KEYS = ("root-exception", "exceptionHistory", "all-exceptions", "history")


def rest_events(document: JSON) -> list[tuple[int | None, str]]:
    """(epoch ms or None, text) for every exception and checkpoint failure in a REST JSON document."""
    if not (isinstance(document, dict) and any(key in document for key in REST_FAILURE_KEYS)):
        return []
    found: list[tuple[int | None, str]] = []
    seen: set[tuple[JSON, JSON]] = set()

    def walk(node: JSON) -> None:
        if isinstance(node, dict):
            text = next((node[k] for k in MESSAGE_KEYS if isinstance(node.get(k), str) and node[k].strip()), None)
            if text:
                when = next((node[k] for k in TIME_KEYS if isinstance(node.get(k), (int, float)) and node[k] > 0), None)
                key = (when, text)
                if key not in seen:
                    seen.add(key)
                    found.append((int(when) if when else None, text))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)
    found.sort(key=lambda item: (item[0] is None, item[0] or 0))
    return found


def render(events: list[tuple[int | None, str]]) -> str:
    """The derived source's text, in the `rest-event` layout: '@<UTC time>Z <first line>' then the rest."""
    out = []
    for when, text in events:
        stamp = (
            datetime.fromtimestamp(when / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
            if when
            else "0000-00-00T00:00:00.000"
        )
        lines = text.replace("\r\n", "\n").split("\n")
        out.append(f"@{stamp}Z {lines[0]}")
        out.extend(line for line in lines[1:] if line.strip())
    return "\n".join(out) + ("\n" if out else "")
