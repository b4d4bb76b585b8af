"""Checkpoint charts as inline SVG, drawn by pygal: durations and sizes over time against the timeout and the
interval, failures marked. pygal's own scripts (tooltips, loaded from the network) are removed: the report works
offline and under a Content-Security-Policy that allows no inline script but the copy button's."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from datetime import datetime
from typing import TypedDict

from ..jsondata import JSON, JSONObject
from .sentences import checkpoint_sentences

SVG = "{http://www.w3.org/2000/svg}"
MOST_DRAWN = 1200  # points of one series a chart draws; a longer series is thinned to each span's extremes


class JobCharts(TypedDict):
    """One job's checkpoints as the HTML report shows them."""

    job: str
    summary: list[str]  # the sentences about its checkpoints
    charts: list[str]  # inline SVG


def _when(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).replace(tzinfo=None)
    except ValueError:
        return None


def line_chart(
    title: str,
    unit: str,
    series: dict[str, list[tuple[datetime, float]]],
    failures: list[tuple[datetime, float]],
    limits: dict[str, float],
) -> str:
    """An SVG line chart of values over time, with horizontal limit lines and failure dots."""
    import pygal
    from pygal.style import Style

    style = Style(
        background="white",
        plot_background="white",
        colors=("#1f6feb", "#8250df", "#d1242f", "#bf8700", "#57606a"),
        font_family="sans-serif",
    )
    chart = pygal.DateTimeLine(
        js=[],
        width=900,
        height=320,
        title=title,
        y_title=unit,
        style=style,
        x_label_rotation=25,
        x_value_formatter=lambda t: t.strftime("%m-%d %H:%M"),
        show_dots=True,
        dots_size=2,
        legend_at_bottom=True,
        truncate_legend=-1,
        disable_xml_declaration=True,
    )
    times = [t for points in series.values() for t, _ in points] + [t for t, _ in failures]
    for name, points in series.items():
        chart.add(_label(name, points), thin(points))
    if failures:
        chart.add(_label("failed / expired", failures), thin(failures), stroke=False, dots_size=5)
    if times:
        for name, value in limits.items():
            ends = [(min(times), value), (max(times), value)]
            chart.add(name, ends, show_dots=False, stroke_style={"dasharray": "6"})
    return strip_scripts(chart.render_tree())


def thin(points: list[tuple[datetime, float]], most: int = MOST_DRAWN) -> list[tuple[datetime, float]]:
    """The points in time order; more than `most` are cut into most/2 equal time spans, each drawn by its lowest
    and highest point, so a spike or a dip stays visible while a week of checkpoints stays a drawable chart (the
    report's JSON keeps every point)."""
    ordered = sorted(points)
    if len(ordered) <= most:
        return ordered
    spans = most // 2
    start, width = ordered[0][0], (ordered[-1][0] - ordered[0][0]) / spans
    extremes: dict[int, tuple[tuple[datetime, float], tuple[datetime, float]]] = {}
    for point in ordered:
        span = min(int((point[0] - start) / width), spans - 1) if width else 0
        low, high = extremes.get(span, (point, point))
        extremes[span] = (point if point[1] < low[1] else low, point if point[1] > high[1] else high)
    return sorted({p for pair in extremes.values() for p in pair})


def _label(name: str, points: list[tuple[datetime, float]]) -> str:
    return name if len(points) <= MOST_DRAWN else f"{name} ({len(points):,} points; each span's lowest and highest)"


def strip_scripts(tree: ElementTree.Element) -> str:
    """The SVG without pygal's script elements (its config and tooltip loader)."""
    ElementTree.register_namespace("", SVG[1:-1])
    ElementTree.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    for parent in list(tree.iter()):
        for child in list(parent):
            if child.tag in (f"{SVG}script", "script"):
                parent.remove(child)
    return ElementTree.tostring(tree, encoding="unicode")


def checkpoint_charts(data: JSONObject) -> list[JobCharts]:
    """Per job: the analytics' sentences and two charts, end-to-end durations (with timed storage steps such as an
    HDFS close as their own series) and sizes, against the timeout and the interval, failures marked."""
    section = data.get("checkpoints")
    charts: list[JobCharts] = []
    for job in section.get("jobs", []) if isinstance(section, dict) else []:
        series = job.get("series") or []
        limits = {
            f"{name} {_ms(job.get(key))}": float(job[key])
            for name, key in (("timeout", "timeout_ms"), ("interval", "interval_ms"))
            if job.get(key)
        }
        lines: dict[str, list[tuple[datetime, float]]] = {"end-to-end duration": [], "storage step (e.g. close)": []}
        failed, sizes = [], []
        for point in series:
            when = _when(point.get("time"))
            if when is None:
                continue
            duration = point.get("duration_ms")
            if point.get("status") in ("declined", "expired", "failed"):
                failed.append((when, float(duration if duration is not None else job.get("timeout_ms") or 0)))
            elif duration is not None:
                stage = "storage step (e.g. close)" if point.get("stage") == "storage-close" else "end-to-end duration"
                lines[stage].append((when, float(duration)))
            if point.get("size_bytes") is not None:
                sizes.append((when, float(point["size_bytes"]) / 2**20))
        item: JobCharts = {
            "job": job.get("job") or "job",
            "summary": checkpoint_sentences(job),
            "charts": [],
        }
        drawn = {name: points for name, points in lines.items() if points}
        if drawn or failed:
            item["charts"].append(line_chart("Checkpoint duration", "ms", drawn, failed, limits))
        if sizes:
            item["charts"].append(line_chart("Checkpoint size", "MiB", {"size": sizes}, [], {}))
        charts.append(item)
    return charts


def checkpoint_missing(data: JSONObject) -> list[str]:
    """What the checkpoint analytics could not measure, and which input would show it."""
    section = data.get("checkpoints")
    return [str(line) for line in section.get("missing", [])] if isinstance(section, dict) else []


def _ms(value: JSON) -> str:
    return f"{float(value):,.0f} ms" if value is not None else ""


def config_audit(data: JSONObject) -> list[JSONObject]:
    """Rows of the configuration audit, risky ones first (the analytics order them so)."""
    audit = data.get("config_audit")
    return list(audit.get("settings", [])) if isinstance(audit, dict) else []


def config_missing(data: JSONObject) -> list[str]:
    audit = data.get("config_audit")
    return [str(line) for line in audit.get("missing", [])] if isinstance(audit, dict) else []


def checkpoint_summaries(data: JSONObject) -> list[tuple[str, list[str]]]:
    """Per job, the sentences about its checkpoints (percentiles against timeout and interval, trend, failure
    pattern), written from the analytics' numbers."""
    section = data.get("checkpoints")
    jobs = section.get("jobs", []) if isinstance(section, dict) else []
    return [(str(job.get("job") or "job"), checkpoint_sentences(job)) for job in jobs]
