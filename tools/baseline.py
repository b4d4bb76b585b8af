"""Build the healthy-run baseline of unexplained.py: which WARN+ templates the fault lab's healthy runs print.

    python tools/baseline.py [tests/data/lab] [-o src/flinkdoctor/knowledge/baseline.json]

A healthy run is a recording (RECORDINGS/<flink version>/<scenario>.tar.gz, its lab.json naming the scenario) of
a catalogue scenario (lab/src/flinkdoctor_lab/scenarios/catalogue.yaml) that injects no fault (`inject: healthy`)
on the base configuration (no `config`, no `setup`): a scenario with its own config, such as starved RocksDB
memory, is a misconfiguration on purpose. Every recorded Flink version's healthy run counts. Rebuild after
recording new healthy runs or after changing unexplained.MASKS (the keys are templates): the file is data, review
its diff. Needs Spark (run it alone: it starts one session).
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "lab/src/flinkdoctor_lab/scenarios/catalogue.yaml"


def healthy_scenarios(catalogue: Path = CATALOGUE) -> set[str]:
    data = yaml.safe_load(catalogue.read_text(encoding="utf-8"))
    return {
        s["name"] for s in data["scenarios"] if s.get("inject") == "healthy" and "config" not in s and "setup" not in s
    }


def recorded_scenario(archive: Path) -> str | None:
    """The scenario a recording's lab.json names (None when it has none)."""
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith("/lab.json") and member.name.count("/") == 1:
                handle = tar.extractfile(member)
                return json.load(handle).get("scenario") if handle else None
    return None


def healthy_recordings(recordings: Path) -> list[Path]:
    wanted = healthy_scenarios()
    return sorted(p for p in recordings.glob("*/*.tar.gz") if recorded_scenario(p) in wanted)


def templates_of(spark, bundle: Path) -> set[str]:
    from flinkdoctor.diagnosis.unexplained import collect_templates
    from flinkdoctor.knowledge.rulebook import load_rules
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.prefilter import build_prefilter
    from flinkdoctor.sources.ingest import ingest

    with tempfile.TemporaryDirectory(prefix="flinkdoctor-baseline-") as work:
        manifest = ingest([bundle], Path(work))
        events = build_events(spark, manifest, Path(work), build_prefilter(load_rules()))
        found = collect_templates(events.table(spark), events.blocks, manifest)
    return {t.key for t in found}


def build(recordings: Path) -> dict:
    from flinkdoctor.runtime.spark import spark_session

    runs = healthy_recordings(recordings)
    if not runs:
        raise SystemExit(f"no healthy recordings under {recordings}")
    spark = spark_session()
    seen: dict[str, int] = {}
    for run in runs:
        for key in templates_of(spark, run):
            seen[key] = seen.get(key, 0) + 1
    return {
        "about": "WARN+ templates of the fault lab's healthy runs (unexplained.py); rebuilt by tools/baseline.py",
        "runs": [str(p.relative_to(recordings)) for p in runs],
        "templates": {key: {"runs": seen[key]} for key in sorted(seen)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recordings", nargs="?", type=Path, default=ROOT / "tests/data/lab")
    parser.add_argument("-o", "--out", type=Path, default=ROOT / "src/flinkdoctor/knowledge/baseline.json")
    args = parser.parse_args(argv)
    data = build(args.recordings)
    args.out.write_text(json.dumps(data, indent=2, ensure_ascii=True) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(data['templates'])} templates from {len(data['runs'])} healthy runs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
