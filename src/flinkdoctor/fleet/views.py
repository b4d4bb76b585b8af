"""The fleet report's views: JSON (the contract), HTML (one self-contained page) and the terminal (terminal.py).

Every string goes out masked: the JSON view masks the whole document, and the HTML view renders from that same
masked data, through the diagnose HTML view's autoescaping, inert Jinja2 environment, under its strict
Content-Security-Policy. The page's one script filters the answers table in the browser; it is allowed by its
hash and reads nothing from the network.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ..safety.masking import mask, scrub
from .report import FleetReport
from .terminal import render_terminal

_RAW_UNSAFE = re.compile("[\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
WIDTH, LABEL, LANE, TOP = 1100, 260, 28, 30

FILTER_SCRIPT = """
(function () {
  var words = document.getElementById("filter");
  var verdict = document.getElementById("verdict");
  var only = document.getElementById("in-incident");
  var shown = document.getElementById("shown");
  var rows = Array.prototype.slice.call(document.querySelectorAll("#answers tbody tr"));
  function apply() {
    var wanted = words.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var count = 0;
    rows.forEach(function (row) {
      var text = row.textContent.toLowerCase();
      var keep = wanted.every(function (word) { return text.indexOf(word) >= 0; }) &&
        (!verdict.value || row.dataset.verdict === verdict.value) &&
        (!only.checked || row.dataset.incidents !== "");
      row.hidden = !keep;
      if (keep) { count += 1; }
    });
    shown.textContent = String(count);
  }
  words.addEventListener("input", apply);
  verdict.addEventListener("change", apply);
  only.addEventListener("change", apply);
  apply();
})();
"""


def render_json(report: FleetReport) -> str:
    """The fleet report's JSON, masked as a structure (scrub), a value JSON has no type for (a time) as the text
    it becomes: never the serialised text, where a mask would take an escaped quote for the end of a value and
    cut the document (a failed bundle's reason `password=x"y` made JSON no reader could parse)."""
    text = json.dumps(scrub(report.to_dict()), indent=2, ensure_ascii=False, default=lambda value: mask(str(value)))
    return _RAW_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@dataclass
class Timeline:
    """The incidents over time, a lane per resource: coordinates only, the template draws them."""

    width: int = WIDTH
    height: int = 0
    lanes: list[tuple[float, str]] = field(default_factory=list)
    ticks: list[tuple[float, str, str]] = field(default_factory=list)  # x, label, text-anchor
    bars: list[dict] = field(default_factory=list)
    span: str = ""


def timeline(incidents: list[dict]) -> Timeline:
    drawn = Timeline()
    placed = []
    for incident in incidents:
        try:
            start, end = (datetime.fromisoformat(incident[k]) for k in ("start", "end"))
        except ValueError:
            continue
        placed.append((start, end, incident))
    if not placed:
        return drawn
    lanes: dict[str, int] = {}
    for _, _, incident in sorted(placed, key=lambda p: p[0]):
        lanes.setdefault(f"{incident['kind']} {incident['key']}", len(lanes))
    first, last = min(p[0] for p in placed), max(p[1] for p in placed)
    seconds = (last - first).total_seconds() or 1.0
    right = WIDTH - 50  # room for the last bar's label

    def x(at: datetime) -> float:
        return round(LABEL + (at - first).total_seconds() / seconds * (right - LABEL), 1)

    drawn.height = TOP + LANE * len(lanes) + 10
    drawn.lanes = [(TOP + LANE * i + LANE / 2, name) for name, i in lanes.items()]
    moments = [first + (last - first) * (i / 4) for i in range(5)]
    drawn.ticks = [(x(at), f"{at:%m-%d %H:%M}", "end" if i == 4 else "middle") for i, at in enumerate(moments)]
    drawn.span = f"{first:%Y-%m-%d %H:%M:%S} to {last:%Y-%m-%d %H:%M:%S} UTC"
    for start, end, incident in placed:
        left = x(start)
        drawn.bars.append(
            {
                "x": left,
                "y": TOP + LANE * lanes[f"{incident['kind']} {incident['key']}"] + 6,
                "width": max(6.0, x(end) - left),
                "number": incident["number"],
                "title": f"#{incident['number']} {incident['cause']}: {len(incident['jobs'])} jobs, "
                f"{incident['start']} to {incident['end']}, chance {incident['chance']:.2g}",
            }
        )
    return drawn


def render_html(report: FleetReport, generated: datetime | None = None) -> str:
    from ..views.html import content_security_policy, environment

    data = json.loads(render_json(report))
    return (
        environment()
        .get_template("fleet.html.j2")
        .render(
            report=data,
            csp=content_security_policy(FILTER_SCRIPT),
            script=FILTER_SCRIPT,
            timeline=timeline(data["incidents"]),
            verdicts=sorted({a["verdict"] or a["status"] for a in data["answers"]}),
            generated=(generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC"),
        )
    )


VIEWS = {"json": render_json, "html": render_html}  # format -> function(report) -> str; terminal prints to a console
__all__ = ["VIEWS", "render_html", "render_json", "render_terminal", "timeline"]
