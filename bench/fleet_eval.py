"""Evaluation: precision and recall of the fleet's shared incidents on generated fleets (tests/fleetgen.py).

    python bench/fleet_eval.py --sizes 100,1000,10000 [--out DIR] [--lab]

Per size: a fleet of real recorded bundles with a background of mixed failures, planted shared incidents of
2 to 50 jobs (one cause on one host, storage or ZooKeeper quorum) and decoys; `flinkdoctor fleet` over it in its
own process, holding the shared Spark lock (/tmp/flinkdoctor-spark.lock) for that run only (the generation and
the scoring start no Spark); the report's incidents matched against the plan. A found incident is a true one
when a planted incident on the same resource shares at least half of the union of their jobs (Jaccard >= 0.5),
exact when the jobs are the same; every other found incident is a false one. The background alone: the
detector again over the same lake without the planted jobs (decoys, background failures and healthy jobs
kept), which must give none.
`--lab`: the recorded lab bundles themselves as one fleet (independent runs one after another on one host).

Each step's result is kept in DIR/eval-SIZE.json, so the sizes can be run one at a time (each holding the Spark
lock only for its own run); `--rescore` scores the kept lakes again with the detector as it is now (it reads only
the lake, no Spark). Prints a Markdown table (bench/RESULTS.md, Fleet incidents).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from fleetgen import LAB, generate  # noqa: E402

BUCKETS = ((2, 3), (4, 6), (8, 16), (20, 50))
LOCK = "/tmp/flinkdoctor-spark.lock"  # every run that starts Spark holds it (the machine is shared)


def fleet_run(root: Path, lake: Path) -> tuple[dict, float]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    subprocess.run(["rm", "-rf", str(lake)], check=True)
    started = time.perf_counter()  # includes the wait for the lock; the report's timings are the run's own
    done = subprocess.run(
        [
            "flock",
            LOCK,
            sys.executable,
            "-m",
            "flinkdoctor",
            "fleet",
            str(root),
            "--out",
            str(lake),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    if done.returncode != 0:
        raise SystemExit(f"fleet over {root} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout), time.perf_counter() - started


def detect_without(lake: Path, drop: set[str]) -> tuple[list, float]:
    """The detector over the lake's rows less the bundles named in `drop` (by name): no Spark."""
    import pyarrow.dataset as ds

    from flinkdoctor.fleet import lake as tables
    from flinkdoctor.fleet.incidents import detect
    from flinkdoctor.fleet.sightings import from_lake
    from flinkdoctor.knowledge.rulebook import load_rules

    started = time.perf_counter()
    bundles = [b for b in tables.read(lake, "bundles") if b["name"] not in drop]
    kept = {b["bundle_id"] for b in bundles}
    diagnoses = [d for d in tables.read(lake, "diagnoses") if d["bundle_id"] in kept]
    columns = ["bundle_id", "rule", "category", "role", "time", "host", "storage", "zookeeper", "kafka"]
    findings = tables.read(lake, "findings", columns, ds.field("role").isin(["cause", "symptom"]))
    findings = [f for f in findings if f["bundle_id"] in kept]
    found = detect(from_lake(bundles, diagnoses, findings, load_rules()))
    names = {b["bundle_id"]: b["name"] for b in bundles}
    return [{"kind": i.kind, "key": i.key, "cause": i.cause, "jobs": [names[b] for b in i.bundles]} for i in found], (
        time.perf_counter() - started
    )


def score(found: list[dict], planted: list[dict]) -> dict:
    """Found incidents against planted ones: true (Jaccard >= 0.5 on the same resource), exact, false."""
    by_resource: dict[tuple, list[dict]] = {}
    for incident in planted:
        by_resource.setdefault((incident["kind"], incident["key"]), []).append(incident)
    matched: dict[int, dict] = {}
    true = exact = 0
    false = []
    for incident in found:
        jobs = set(incident["jobs"])
        best, overlap = None, 0.0
        for candidate in by_resource.get((incident["kind"], incident["key"]), []):
            share = len(jobs & set(candidate["jobs"])) / len(jobs | set(candidate["jobs"]))
            if share > overlap:
                best, overlap = candidate, share
        if best is not None and overlap >= 0.5 and id(best) not in matched:
            matched[id(best)] = incident
            true += 1
            exact += jobs == set(best["jobs"])
        else:
            false.append({**incident, "overlap": round(overlap, 2)})
    buckets = {}
    for low, high in BUCKETS:
        inside = [p for p in planted if low <= p["strength"] <= high]
        buckets[f"{low}-{high}"] = [sum(id(p) in matched for p in inside), len(inside)]
    missed = [{k: p[k] for k in ("kind", "key", "strength")} for p in planted if id(p) not in matched]
    return {
        "found": len(found),
        "true": true,
        "exact": exact,
        "false": false,
        "planted": len(planted),
        "precision": round(true / len(found), 4) if found else 1.0,
        "recall": round(len(matched) / len(planted), 4) if planted else 1.0,
        "by_strength": buckets,
        "missed": missed,
    }


def evaluate(size: int, out: Path, seed: int, rescore: bool = False) -> dict:
    saved = out / f"eval-{size}.json"
    if saved.exists():
        result = json.loads(saved.read_text())
        if rescore:  # the detector again over the lake the fleet run wrote (it reads only the lake: no Spark)
            plan = json.loads((out / f"plan-{size}.json").read_text())
            planted_jobs = {job for incident in plan["incidents"] for job in incident["jobs"]}
            found, detect_s = detect_without(out / f"lake-{size}", set())
            result["incidents"] = score(found, plan["incidents"])
            result["background_only"]["incidents"], result["detect_background_s"] = detect_without(
                out / f"lake-{size}", planted_jobs
            )
            result["detect_s"] = round(detect_s, 2)
            result["found"] = [{**i, "jobs": len(i["jobs"])} for i in found]
            saved.write_text(json.dumps(result, indent=2))
        return result
    root, lake = out / f"fleet-{size}", out / f"lake-{size}"
    plan_file = out / f"plan-{size}.json"
    if not plan_file.exists():
        subprocess.run(["rm", "-rf", str(root)], check=True)
        started = time.perf_counter()
        plan = generate(root, size, seed)
        plan_file.write_text(json.dumps(plan))
        print(f"generated {size} bundles in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    plan = json.loads(plan_file.read_text())
    report, wall = fleet_run(root, lake)
    found = [{k: i[k] for k in ("kind", "key", "cause", "jobs")} for i in report["incidents"]]
    planted_jobs = {job for incident in plan["incidents"] for job in incident["jobs"]}
    background, detect_s = detect_without(lake, planted_jobs)
    result = {
        "size": size,
        "seed": seed,
        "bundles": report["bundles"],
        "verdicts": report["verdicts"],
        "background_failures": sum(
            1
            for name, scenario in plan["recordings"].items()
            if not scenario.startswith("healthy-") and name not in planted_jobs
        ),
        "fleet_wall_s": round(wall, 1),
        "timings": report["run"]["timings"],
        "incidents": score(found, plan["incidents"]),
        "background_only": {"jobs": report["bundles"] - len(planted_jobs), "incidents": background},
        "detect_background_s": round(detect_s, 2),
        "found": [{**i, "jobs": len(i["jobs"])} for i in report["incidents"]],
    }
    saved.write_text(json.dumps(result, indent=2))
    return result


def lab(out: Path) -> dict:
    saved = out / "eval-lab.json"
    if saved.exists():
        return json.loads(saved.read_text())
    root = out / "lab"
    root.mkdir(parents=True, exist_ok=True)
    for archive in sorted(LAB.glob("*/*.tar.gz")):
        link = root / f"{archive.parent.name}-{archive.name}"
        if not link.exists():
            link.symlink_to(archive)
    report, wall = fleet_run(root, out / "lake-lab")
    result = {"bundles": report["bundles"], "fleet_wall_s": round(wall, 1), "incidents": report["incidents"]}
    saved.write_text(json.dumps(result, indent=2))
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--out", type=Path, default=Path("/tmp/flinkdoctor-fleet-eval"))
    parser.add_argument("--lab", action="store_true", help="also the recorded lab bundles as one fleet")
    parser.add_argument("--rescore", action="store_true", help="score the kept lakes again with today's detector")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = [evaluate(int(size), args.out, args.seed, args.rescore) for size in args.sizes.split(",") if size]
    print(json.dumps(results, indent=2))
    print(
        "\n| bundles | background failures | planted (jobs 2-50) | found | true (exact jobs) | false | precision "
        "| recall | recall 2-3 / 4-6 / 8-16 / 20-50 jobs | background alone | fleet run |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|"
    )
    for r in results:
        s = r["incidents"]
        strengths = " / ".join(f"{hit}/{total}" for hit, total in s["by_strength"].values())
        print(
            f"| {r['bundles']:,} | {r['background_failures']} | {s['planted']} | {s['found']} | {s['true']} "
            f"({s['exact']}) | {len(s['false'])} | {s['precision']:.1%} | {s['recall']:.1%} | {strengths} "
            f"| {len(r['background_only']['incidents'])} incidents in {r['background_only']['jobs']:,} jobs "
            f"| {r['timings']['lake_s']:.0f} s |"
        )
    if args.lab:
        result = lab(args.out)
        print(f"\nlab: {result['bundles']} bundles, {len(result['incidents'])} incidents, {result['fleet_wall_s']} s")


if __name__ == "__main__":
    main()
