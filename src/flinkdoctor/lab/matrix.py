"""Run the whole fault-lab matrix (every scenario on every version) with one command.

    flock /tmp/flinkdoctor-heavy.lock python -m flinkdoctor.lab.matrix --out lab-runs [--record tests/data/lab]

Each bundle is packed as .tar.gz; with --record, bundles whose expected log lines were all found are
copied to <record>/<version>/<scenario>.tar.gz (the checked-in test data). A Markdown summary
(scenario x version -> seconds, final job state, the first line matching each expectation) is
printed and written to <out>/matrix.md.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from .install import DEFAULT_VERSIONS
from .runner import run_scenario
from .scenarios import SCENARIOS


def record_bundle(archive: Path, root: Path, version: str, scenario: str) -> Path:
    dest = root / version / f"{scenario}.tar.gz"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(archive, dest)
    return dest


@click.command()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("lab-runs"), show_default=True)
@click.option("--version", "versions", multiple=True, default=list(DEFAULT_VERSIONS), show_default=True)
@click.option("--scenario", "scenarios", multiple=True, default=list(SCENARIOS), show_default=True)
@click.option("--record", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Copy good bundles to RECORD/<version>/<scenario>.tar.gz.")
def main(out, versions, scenarios, record):
    """Run every scenario on every version; summarise."""
    rows = ["| scenario | Flink | seconds | job at end | expected lines found |", "|---|---|---|---|---|"]
    bad = 0
    for version in versions:
        for name in scenarios:
            try:
                meta = run_scenario(name, version, out, tar=True,
                                    progress=lambda m, n=name, v=version: print(f"[{v} {n}] {m}", file=sys.stderr))
            except Exception as e:  # one broken scenario must not hide the rest of the matrix
                bad += 1
                rows.append(f"| {name} | {version} | - | error: {type(e).__name__}: {e} | |")
                continue
            found = [e for e in meta["expectations"] if e["found"]]
            ok = len(found) == len(meta["expectations"])
            bad += not ok
            if ok and record:
                record_bundle(Path(meta["bundle"]), record, version, name)
            lines = "<br>".join(f"`{e['text'][e['text'].find(' - ') + 3:][:140]}`" if " - " in e["text"]
                                else f"`{e['text'][:140]}`" for e in found)
            rows.append(f"| {name} | {version} | {meta['seconds']:.0f} | {meta['final_state']} | "
                        f"{len(found)}/{len(meta['expectations'])} {lines} |")
            print(rows[-1], file=sys.stderr)
    table = "\n".join(rows) + "\n"
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / "matrix.md").write_text(table)
    print(table)
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
