"""The shape-invariance suite at full size, for the closing figures: every failure of the lab recordings, the seeds
and the incidents in every shape (tests/metamorphic), the share that keeps its answer per transformation, and
every case that does not.

    flock /tmp/flinkdoctor-spark.lock python tools/shape_invariance.py [--only quote,mail-wrap] [--json out.json]

It runs what tests/metamorphic/test_shape_invariance.py runs (one Spark session: the plain diagnoses of the full
inputs, then one fleet pass over every shaped and reference bundle) and prints the table, the failures, and how
long each step took.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "metamorphic")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated transformation names")
    parser.add_argument("--json", type=Path, help="write the figures and failures here")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    import shape_cases
    import shape_runner
    from shape_transforms import TRANSFORMS

    from flinkdoctor.knowledge.rulebook import load_rules
    from flinkdoctor.pipeline import diagnose
    from flinkdoctor.runtime.spark import spark_session

    transforms = tuple(t for t in TRANSFORMS if not args.only or t.name in args.only.split(","))
    started = time.perf_counter()
    spark = spark_session("local[2]")
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    rules = load_rules()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)

        def plain(path: Path) -> dict:
            run = work / f"plain-{len(list(work.glob('plain-*')))}"
            return diagnose([path], spark=spark, work_dir=run, rules=rules).to_dict()

        cases = shape_cases.build_cases(plain)
        timings = {"plain diagnoses": time.perf_counter() - started}
        trials, bundles = shape_runner.trials(cases, transforms)
        outcomes = shape_runner.diagnose_all(bundles, spark, rules, work / "fleet", progress=print)
        timings["fleet"] = time.perf_counter() - started - timings["plain diagnoses"]
    result = shape_runner.figures(trials, outcomes, transforms)
    excerpts = [(c.id, c.answer, outcomes[shape_runner.bundle_key({**c.fixed, **c.files})].category) for c in cases]
    print(shape_runner.render(result, len(cases)))
    print(f"\n{len(trials)} trials, {len(bundles)} bundles; " + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()))
    differ = [(case, full, excerpt) for case, full, excerpt in excerpts if full != excerpt]
    print(f"\ncases whose plain excerpt answers otherwise than the full input: {len(differ)} of {len(cases)}")
    for case, full, excerpt in differ:
        print(f"  {case}: full {full}, excerpt {excerpt}")
    checked, missed = shape_runner.no_failure_over_traces(cases, trials, bundles, outcomes)
    print(f"\nnever no failure over a failure trace: {checked - len(missed)} of {checked} shaped traces")
    for transform, case, form in missed:
        print(f"  no failure: {transform} {case} ({form})")
    print("\nfailures:")
    for line in shape_runner.describe_failures(result):
        print("  " + line)
    if args.json:
        rows = [{"transformation": n, "cases": a, "hold": h} for n, a, h in result["rows"]]
        failures = shape_runner.describe_failures(result)
        out = {"rows": rows, "cut": result["cut"], "failures": failures, "timings": timings}
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
