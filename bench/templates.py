"""Unexplained errors: template mining by masking in Spark (unexplained.py) against Drain3, on real bundles.

    python bench/templates.py BUNDLE...   (Drain3 importable, e.g. pip install --target DIR drain3; PYTHONPATH=DIR)

Per bundle: WARN+ events, then for each approach its wall time and number of templates, and how the two groupings
disagree: Spark templates whose events Drain3 splits into several clusters, and Drain3 clusters that hold events
of several Spark templates. Drain3 runs on the driver, so its time includes collecting the messages there.
Drain3 groups by message only; Spark by logger and message, so the comparison uses the message alone.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def main(bundles: list[str]) -> None:
    from drain3 import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig
    from pyspark.sql import functions as F

    from flinkdoctor.diagnosis.unexplained import collect_templates, template_column
    from flinkdoctor.knowledge.rulebook import load_rules
    from flinkdoctor.runtime.spark import spark_session
    from flinkdoctor.scan.events import WARN_LEVELS, build_events
    from flinkdoctor.scan.prefilter import build_prefilter
    from flinkdoctor.sources.ingest import ingest

    spark = spark_session()
    prefilter = build_prefilter(load_rules())
    for bundle in bundles:
        with tempfile.TemporaryDirectory() as work:
            manifest = ingest([bundle], Path(work))
            events = build_events(spark, manifest, Path(work), prefilter)
            frame = events.table(spark)
            collect_templates(frame, events.blocks, manifest)  # warm-up: the first Spark job pays for planning
            started = time.perf_counter()
            spark_templates = collect_templates(frame, events.blocks, manifest)
            spark_s = time.perf_counter() - started

            started = time.perf_counter()
            rows = frame.where(F.col("level").isin(*WARN_LEVELS)).select("message").collect()
            config = TemplateMinerConfig()
            config.profiling_enabled = False
            miner = TemplateMiner(config=config)
            drain = [miner.add_log_message(row.message or "")["cluster_id"] for row in rows]
            drain_s = time.perf_counter() - started

            per_event = frame.where(F.col("level").isin(*WARN_LEVELS)).select(
                template_column(F.coalesce("message", F.lit(""))).alias("t")
            )
            masked = [row.t for row in per_event.collect()]  # same order as `rows`: one file scan, no shuffle
            spark_to_drain, drain_to_spark = defaultdict(set), defaultdict(set)
            for t, c in zip(masked, drain, strict=True):
                spark_to_drain[t].add(c)
                drain_to_spark[c].add(t)
            split = sum(len(v) > 1 for v in spark_to_drain.values())
            merged = sum(len(v) > 1 for v in drain_to_spark.values())
            print(
                f"{bundle}: {len(rows)} WARN+ events; spark masking {len(spark_templates)} templates "
                f"(logger+message; {len(spark_to_drain)} by message) in {spark_s:.2f} s; drain3 "
                f"{len(miner.drain.clusters)} clusters in {drain_s:.2f} s; spark templates drain3 splits: {split}; "
                f"drain3 clusters holding several spark templates: {merged}"
            )
            for cluster in miner.drain.clusters:
                if len(drain_to_spark[cluster.cluster_id]) > 1:
                    print(f"   drain3 merges into {cluster.get_template()[:160]!r}:")
                    for t in sorted(drain_to_spark[cluster.cluster_id])[:4]:
                        print(f"      spark: {t[:160]!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
