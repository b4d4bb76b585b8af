"""One part of a bundle as a scan task runs it (scan_part, no Spark): its task CPU, where it goes (cProfile), and
a fingerprint of everything it keeps, to check that a change to the scan keeps every answer.

    python bench/part_profile.py FILE [--part 0] [--profile 25] [--dump OUT.json] [--write [--keep DIR]]

FILE is one log of a bench bundle (e.g. bench/out/lab-1G/container_003/taskmanager.log). The file is ingested
alone, split as the scan splits it, and part `--part` is scanned with the cycle collector off, as a task scans:
once untimed (the worker's first-call costs: regex compiles, the catalogue's database; pyarrow told that the
process holds no pandas first, as a task's worker is: runtime/worker.py), then timed, then
profiled. `--write` times and profiles the part as the task runs it (scanner.run), its events' file and its
measured rows written too (to a temporary folder). `--dump` writes per kept event its line, signatures, matches,
measures, catalogue entries, level, repeats and a digest of its text; two dumps are equal when the scan kept and
matched the same. `--keep DIR`: the files the task wrote (DIR/events, DIR/measures) kept, to compare them.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import hashlib
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--part", type=int, default=0)
    parser.add_argument("--profile", type=int, default=25, help="rows of the profile to print (0: none)")
    parser.add_argument("--dump", help="write the kept events' fingerprint here")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="the task's files written too (scanner.run)")
    parser.add_argument(
        "--keep", help="with --write: keep the task's last written files in this folder (DIR/events, DIR/measures)"
    )
    args = parser.parse_args()

    import pyarrow as pa

    from flinkdoctor.analytics.metrics import load_metrics, measured_rows
    from flinkdoctor.knowledge.rulebook import load_rules
    from flinkdoctor.runtime.worker import without_pandas
    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.scan.scanner import PartStats, _no_cycle_collection, run, scan_part
    from flinkdoctor.sources.ingest import ingest

    matcher = build_matcher(load_rules(), tuple(m.line for m in load_metrics()))
    with tempfile.TemporaryDirectory() as work:
        manifest = ingest([args.file], Path(work) / "in")
        part = [p for task in plan(manifest.text_sources, SPLIT_BYTES) for p in task][args.part]

        def once() -> list:  # the cycle collector off, as in a task (each match it tracks would start its passes)
            with _no_cycle_collection():
                return list(scan_part(part, matcher.prefilter, matcher))

        def written() -> None:  # as the task runs it: its events' file and measured rows written
            with tempfile.TemporaryDirectory() as files:
                events, rows = Path(args.keep or files) / "events", Path(args.keep or files) / "measures"
                events.mkdir(parents=True, exist_ok=True)
                rows.mkdir(exist_ok=True)
                spec = dataclasses.replace(measured_rows(load_metrics()), out_dir=str(rows))
                ids = pa.record_batch([pa.array([0], pa.int64())], names=["id"])
                for _ in run(iter([ids]), [[part]], matcher.prefilter, str(events), matcher, spec):
                    pass

        task = written if args.write else once
        out: list = []
        first = _timed(lambda: (without_pandas(), out.extend(once())))
        best = min(_timed(task) for _ in range(args.runs))
        stats = next(o for o in out if isinstance(o, PartStats))
        timing = {"task_cpu_s": round(best, 3), "first_call_cpu_s": round(first, 3)}
        print(json.dumps({"part": [part.path, part.start, part.end], **timing, **vars(stats)}))
        if args.profile:
            profile = cProfile.Profile()
            profile.enable()
            task()
            profile.disable()
            pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(args.profile)
        if args.dump:
            rows = []
            for batch in out:
                if isinstance(batch, PartStats):
                    continue
                for row in batch.to_pylist():
                    text = row.pop("text")
                    row["text"] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
                    rows.append(row)
            rows.sort(key=lambda r: (r["block"], r["first_rel"]))
            Path(args.dump).write_text(json.dumps({"stats": vars(stats), "rows": rows}, default=str, sort_keys=True))
            print(f"{len(rows)} kept events -> {args.dump}")


def _timed(run) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


if __name__ == "__main__":
    main()
