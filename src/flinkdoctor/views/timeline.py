"""The chain as a graph over a timeline: one lane per host or component, a marker per finding, arrows from each
root cause to the symptoms it explains. Only coordinates are computed here; the template draws them as SVG, so
every label goes through the template's escaping."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from ..report.model import Evidence, Report

WIDTH, LABEL, LANE, TOP, NO_TIME = 1100, 230, 46, 34, 60


@dataclass(frozen=True)
class Marker:
    x: float
    y: float
    kind: str  # root, chain, other
    anchor: str
    title: str
    label: str


@dataclass
class Timeline:
    width: int = WIDTH
    height: int = 0
    lanes: list[tuple[float, str]] = field(default_factory=list)
    ticks: list[tuple[float, str]] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    edges: list[tuple[float, float, float, float]] = field(default_factory=list)
    untimed_x: float | None = None
    span: str = ""


def _time(ev: Evidence) -> datetime | None:
    if not ev.time:
        return None
    try:
        return datetime.fromisoformat(ev.time.replace("Z", "+00:00"))
    except ValueError:
        return None


def _lane(ev: Evidence, sources: dict[str, tuple[str | None, str]]) -> str:
    """A host when the line or its file names one (a kernel log, a YARN container), else the file itself."""
    host, kind = sources.get(ev.file, (None, "unknown"))
    host = ev.host or host
    return f"{host} ({kind})" if host else ev.file


def _points(report: Report) -> tuple[list[tuple[Evidence, str, str]], list[tuple[int, int]]]:
    """Each root cause's first evidence, its chain (linked cause -> effect by depth), then every other finding:
    each finding's first evidence unless a marker of its rule stands on that line already. Another rule that
    matched the root cause's line gets its own marker: a marker names one rule, and a line's other finding
    would otherwise be missing from the chart."""
    points: list[tuple[Evidence, str, str]] = []  # evidence, kind, rule
    links: list[tuple[int, int]] = []  # indexes into points: cause -> effect
    for root in report.root_causes:
        if not root.evidence:
            continue
        head = len(points)
        points.append((root.evidence[0], "root", root.rule))
        parents = {0: head}
        for step in root.chain:
            points.append((step.evidence, "chain", step.rule))
            links.append((parents.get(step.depth - 1, head), len(points) - 1))
            parents[step.depth] = len(points) - 1
    drawn = {(rule, ev.file, ev.line) for ev, _, rule in points}
    for finding in report.findings:
        if finding.evidence and (finding.rule, finding.evidence[0].file, finding.evidence[0].line) not in drawn:
            points.append((finding.evidence[0], "other", finding.rule))
    return points, links


def build_timeline(report: Report, anchor: Callable[[Evidence, str], str]) -> Timeline:
    sources = {s.path: (s.host, s.kind) for s in report.input.sources}
    points, links = _points(report)
    timeline = Timeline()
    if not points:
        return timeline
    lanes: dict[str, int] = {}
    for ev, _, _ in sorted(points, key=lambda p: (_time(p[0]) is None, _time(p[0]) or datetime.min, p[0].file)):
        lanes.setdefault(_lane(ev, sources), len(lanes))
    times = [t for t in (_time(ev) for ev, _, _ in points) if t]
    scale = _Scale(min(times), max(times), WIDTH - (NO_TIME if len(times) < len(points) else 20)) if times else None
    timeline.height = TOP + LANE * len(lanes) + 10
    timeline.lanes = [(TOP + LANE * i + LANE / 2, name) for name, i in lanes.items()]
    if scale:
        timeline.ticks = scale.ticks()
        timeline.span = f"{scale.start:%Y-%m-%d %H:%M:%S} to {scale.end:%Y-%m-%d %H:%M:%S} UTC"
    if len(times) < len(points):
        timeline.untimed_x = WIDTH - NO_TIME / 2
    placed: list[tuple[float, float]] = []
    for ev, kind, rule in points:
        when = _time(ev)
        x = scale.x(when) if scale and when else WIDTH - NO_TIME / 2
        y = TOP + LANE * lanes[_lane(ev, sources)] + LANE / 2
        nudge = sum(1 for px, py in placed if abs(px - x) < 7 and py == y)  # markers at one instant fan out
        placed.append((x, y))
        title = f"{rule}: {ev.time or 'no time'} {ev.file}:{ev.line}\n{ev.text[:300]}"
        timeline.markers.append(Marker(x + 7 * nudge, y, kind, anchor(ev, rule), title, rule))
    timeline.edges = [(m.x, m.y, n.x, n.y) for m, n in ((timeline.markers[a], timeline.markers[b]) for a, b in links)]
    return timeline


@dataclass(frozen=True)
class _Scale:
    start: datetime
    end: datetime
    right: float

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()

    def x(self, when: datetime) -> float:
        if not self.seconds:
            return (LABEL + self.right) / 2
        return LABEL + 10 + (when - self.start).total_seconds() / self.seconds * (self.right - LABEL - 20)

    def ticks(self) -> list[tuple[float, str]]:
        steps = 4 if self.seconds else 0
        moments = [self.start + (self.end - self.start) * (i / 4) for i in range(steps + 1)]
        return [(self.x(at), at.strftime("%H:%M:%S")) for at in moments]
