"""The sentences a view prints about a job's checkpoints, written from the analytics' numbers (analytics/ returns
numbers only): counts, where the limits came from, percentiles against the timeout and the interval, the
longest timed step, checkpoints longer than the interval, the trend and the failure pattern.

They read the report's data (`Report.to_dict()`), as every view does."""

from __future__ import annotations

from ..jsondata import JSONObject

FAILED = ("declined", "expired", "failed")


def checkpoint_sentences(job: JSONObject) -> list[str]:
    timeout, interval = job.get("timeout"), job.get("interval")
    series = job.get("series") or []
    ended = [p for p in series if _is_end(p)]
    steps = [p for p in series if p.get("stage") != "checkpoint" and p.get("duration_ms") is not None]
    longest = max(steps, key=lambda p: p["duration_ms"]) if steps else None
    lines = []
    counts = job.get("counts") or {}
    if counts:
        total = sum(counts.values())
        lines.append(f"{total} checkpoints: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + ".")
    lines += [
        f"{name} {_ms(limit['ms'])}, from {limit['source']}."
        for name, limit in (("Timeout", timeout), ("Interval", interval))
        if limit
    ]
    lines += _durations(job.get("percentiles") or {}, timeout, interval, longest)
    if interval and ended:
        over = job.get("over_interval") or 0
        every = max(job.get("ended") or 0, len(ended))  # a long run's series shows only some of them
        lines.append(
            f"{over} of {every} checkpoints took longer than the {_ms(interval['ms'])} interval"
            + (": the next one was due before they ended, so checkpoints run back to back." if over else ".")
        )
    trend = job.get("trend")
    if trend:
        text = f"Trend: {trend['growth_ms_per_hour']:+,.0f} ms per hour over {trend['points']} completed checkpoints"
        if trend.get("hours_to_timeout") is not None:
            text += f"; at this rate the timeout is reached in about {_span(trend['hours_to_timeout'] * 3600)}"
        lines.append(text + ".")
    failures = job.get("failures")
    if failures:
        lines.append(_failures(failures))
    if interval and str(interval.get("source", "")).startswith("log: median gap"):
        lines.append("the interval is read from trigger times; a checkpoint still running delays the next one")
    return lines


def _is_end(point: JSONObject) -> bool:
    """A checkpoint that ended (completed, declined, expired, failed) with a duration: not a timed step."""
    return (
        point.get("stage") == "checkpoint"
        and point.get("duration_ms") is not None
        and point.get("status")
        in (
            "completed",
            *FAILED,
        )
    )


def _durations(
    pct: dict[str, float], timeout: JSONObject | None, interval: JSONObject | None, longest: JSONObject | None
) -> list[str]:
    lines = []
    if pct:
        text = f"Completed durations: p50 {_ms(pct['p50'])}, p95 {_ms(pct['p95'])}, max {_ms(pct['max'])}"
        if timeout:
            text += f"; p95 is {100 * pct['p95'] / timeout['ms']:.1f} % of the timeout"
        if interval:
            text += f", {100 * pct['p95'] / interval['ms']:.1f} % of the interval"
        lines.append(text + ".")
    if longest:
        text = (
            f"Longest timed step: {longest['stage']} of checkpoint {longest['id']} took {_ms(longest['duration_ms'])}"
        )
        if timeout:
            text += f", {longest['duration_ms'] / timeout['ms']:.1f} x the {_ms(timeout['ms'])} timeout"
        lines.append(text + f" ({longest['file']}:{longest['line']}).")
    return lines


def _failures(failures: JSONObject) -> str:
    if failures.get("periodic") and failures.get("period_s"):
        return f"Failures: {failures['failures']}, periodic, every ~{_span(failures['period_s'])}."
    gaps = failures.get("gaps_s") or []
    if gaps:
        return f"Failures: {failures['failures']}, no steady period (gaps {_span(min(gaps))} to {_span(max(gaps))})."
    return f"Failures: {failures['failures']}."


def _ms(value: float) -> str:
    return f"{value:,.0f} ms"


def _span(seconds: float) -> str:
    if seconds >= 5400:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 90:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
