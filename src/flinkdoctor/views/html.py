"""The HTML view: one self-contained file to attach to a ticket (no network at view time).

Jinja2 with autoescape renders every string, so log text is always text: a line holding `<script>` shows as
`<script>`. Charts are SVG drawn by pygal on our side, with its scripts removed; the only script is the copy
button's, allowed by its hash in a strict Content-Security-Policy (no inline handlers, no remote anything).
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from typing import TYPE_CHECKING

from ..report.model import Evidence, Report
from ..safety.inert import inert
from .charts import checkpoint_charts, checkpoint_missing, config_audit, config_missing
from .timeline import Timeline, build_timeline

if TYPE_CHECKING:
    from jinja2 import Environment

COPY_SCRIPT = """
document.querySelectorAll("button.copy").forEach(function (button) {
  button.addEventListener("click", function () {
    var source = document.getElementById(button.dataset.target);
    navigator.clipboard.writeText(source.textContent).then(function () {
      button.textContent = "copied";
    }, function () {
      var range = document.createRange();
      range.selectNodeContents(source);
      window.getSelection().removeAllRanges();
      window.getSelection().addRange(range);
      button.textContent = "selected: press Ctrl+C";
    });
  });
});
"""


@dataclass
class _Cards:
    """Evidence cards, numbered once so that timeline markers and lists link to the same card."""

    items: list[tuple[str, Evidence, str]] = field(default_factory=list)  # (anchor, evidence, label)
    index: dict[tuple[str, int], str] = field(default_factory=dict)

    def anchor(self, ev: Evidence, label: str) -> str:
        key = (ev.file, ev.line)
        if key not in self.index:
            self.index[key] = f"ev-{len(self.items) + 1}"
            self.items.append((self.index[key], ev, label))
        return self.index[key]


def content_security_policy(script: str) -> str:
    """The strict policy of every HTML view: nothing from the network, inline styles, and only `script` (by its
    hash) may run."""
    script_hash = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{script_hash}'; base-uri 'none'; form-action 'none'"
    )


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja2 environment of the HTML views: autoescaped, strict about undefined names, input made inert."""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
    from markupsafe import Markup

    env = Environment(
        # input text also inert: an escape sequence in a log line is shown, even to someone who cats the file
        finalize=lambda value: value if isinstance(value, Markup) or not isinstance(value, str) else inert(value, True),
        loader=PackageLoader("flinkdoctor.views", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["thousands"] = lambda n: f"{n:,}"
    return env


def render_html(report: Report, generated: datetime | None = None) -> str:
    csp = content_security_policy(COPY_SCRIPT)
    cards = _Cards()
    timeline: Timeline = build_timeline(report, cards.anchor)
    for root in report.root_causes:
        for ev in root.evidence:
            cards.anchor(ev, root.rule)
    for finding in report.findings:
        for ev in finding.evidence:
            cards.anchor(ev, finding.rule)
    data = report.to_dict()
    return (
        environment()
        .get_template("report.html.j2")
        .render(
            report=report,
            data=data,
            csp=csp,
            script=COPY_SCRIPT,
            timeline=timeline,
            cards=cards.items,
            anchors=cards.index,
            charts=checkpoint_charts(data),
            audit=config_audit(data),
            checkpoint_missing=checkpoint_missing(data),
            audit_missing=config_missing(data),
            generated=(generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC"),
        )
    )
