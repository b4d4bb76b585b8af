"""Query the lake: which jobs had a cause or symptom (a rule id or a category) in a time range, without Spark;
or any SQL over the four tables (Spark SQL, each table a view by its name)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..errors import UsageError
from . import lake

RELATIVE = re.compile(r"^(\d+)([mhdw])$")
UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_time(value: str | None, now: datetime | None = None) -> datetime | None:
    """`7d`, `12h`, `2w` (before now), or an ISO date or date-time (UTC)."""
    if not value:
        return None
    m = RELATIVE.match(value.strip())
    if m:
        now = now or datetime.now(timezone.utc).replace(tzinfo=None)
        return now - timedelta(**{UNITS[m.group(2)]: int(m.group(1))})
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError as err:
        raise UsageError(f"{value!r}: give a time as 7d, 12h, 2w or an ISO date such as 2026-11-16") from err
    return parsed.astimezone(timezone.utc).replace(tzinfo=None) if parsed.tzinfo else parsed


def jobs_with(lake_dir: str | Path, what: str, since: datetime | None = None, until: datetime | None = None):
    """Per job (bundle) that had `what` (a rule id or a category) in [since, until]: the rules, first and last
    time seen, the count (whole bundle), the hosts. A finding without a time matches only when no range is given."""
    rows = lake.read(lake_dir, "findings", ["bundle_id", "rule", "category", "time", "host", "count"])
    names = {b["bundle_id"]: b["name"] for b in lake.read(lake_dir, "bundles", ["bundle_id", "name"])}
    found: dict[str, dict] = {}
    for row in rows:
        if what not in (row["rule"], row["category"]):
            continue
        time = row["time"].replace(tzinfo=None) if row["time"] else None
        if (since or until) and (time is None or (since and time < since) or (until and time > until)):
            continue
        hit = found.setdefault(
            row["bundle_id"],
            {"job": names.get(row["bundle_id"], row["bundle_id"]), "bundle_id": row["bundle_id"], "rules": set()}
            | {"first": time, "last": time, "count": 0, "hosts": set()},
        )
        if row["rule"] not in hit["rules"]:
            hit["rules"].add(row["rule"])
            hit["count"] += row["count"]  # the rule's exact count in the bundle (the same on every row)
        if time:
            hit["first"] = min(filter(None, (hit["first"], time)))
            hit["last"] = max(filter(None, (hit["last"], time)))
        if row["host"]:
            hit["hosts"].add(row["host"])
    result = sorted(found.values(), key=lambda h: (h["first"] is None, h["first"] or datetime.min, h["job"]))
    for hit in result:
        hit["hosts"], hit["rules"] = sorted(hit["hosts"]), sorted(hit["rules"])
    return result


def sql(spark, lake_dir: str | Path, statement: str):
    """Spark SQL over the lake: bundles, events, findings and diagnoses are views of the same names (of finished
    runs only, and of `bundles` no row tried again since, as lake.read)."""
    done = sorted(lake.complete_runs(lake_dir))
    for table in lake.TABLES:
        path = lake.table_path(lake_dir, table)
        if path.is_dir():
            frame = spark.read.option("mergeSchema", "true").parquet(str(path))
            frame = frame.where(frame["run"].isin(done))
            if table == "bundles":
                frame = _not_superseded(frame)
            frame.createOrReplaceTempView(table)
    return spark.sql(statement)


def _not_superseded(bundles):
    """The bundles rows but those a later run tried again (lake._superseded's rule, in Spark SQL)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    unread = F.col("digest").isNull()
    again = F.coalesce(F.col("retry"), unread) if "retry" in bundles.columns else unread
    later = F.lit(False)
    for key in ("bundle_id", "path"):  # (a window is not allowed in a WHERE: a column first)
        bundles = bundles.withColumn(f"_latest_{key}", F.max("run").over(Window.partitionBy(key)))
        later = later | (F.col(key).isNotNull() & (F.col(f"_latest_{key}") > F.col("run")))
    return bundles.where(~(again & later)).drop("_latest_bundle_id", "_latest_path")
