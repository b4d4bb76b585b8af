"""`flinkdoctor lab`: reproduce Flink incidents on a real local cluster and collect their bundles.

Kept import-light (click and rich only; the runner is imported when a command runs) because the
main CLI imports this module on every start.
"""
from __future__ import annotations

from pathlib import Path

import click

DEFAULT_VERSION = "1.20.3"


@click.group()
def lab():
    """Reproduce Flink incidents on a real local Flink cluster."""


@lab.command("list")
def list_scenarios():
    """List the scenarios and what each one does."""
    from rich.console import Console
    from rich.table import Table

    from .scenarios import SCENARIOS

    table = Table("scenario", "what happens")
    for s in SCENARIOS.values():
        table.add_row(s.name, s.summary)
    Console().print(table)


@lab.command("run")
@click.argument("scenarios", nargs=-1)
@click.option("--all", "run_all", is_flag=True, help="Run every scenario.")
@click.option("--flink-version", "versions", multiple=True, default=[DEFAULT_VERSION], show_default=True,
              help="Flink version from PyPI (repeatable, e.g. 1.20.3 and 2.1.1).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("lab-runs"),
              show_default=True, help="Directory for the run folders / archives.")
@click.option("--tar", is_flag=True, help="Pack each bundle as <run>.tar.gz instead of a folder.")
def run(scenarios, run_all, versions, out, tar):
    """Run SCENARIO(S) and write each bundle (logs, .out, REST JSON, config) under --out."""
    from rich.console import Console

    from .runner import run_scenario
    from .scenarios import SCENARIOS

    names = list(SCENARIOS) if run_all else list(scenarios)
    unknown = [n for n in names if n not in SCENARIOS]
    if not names or unknown:
        raise click.UsageError(f"unknown or missing scenario {unknown}; choose from: {', '.join(SCENARIOS)}")
    console = Console(stderr=True)
    failed = 0
    for version in versions:
        for name in names:
            console.rule(f"{name} on Flink {version}")
            with console.status(f"{name}: starting") as status:
                def progress(msg, _name=name):
                    console.log(msg)
                    status.update(f"{_name}: {msg}")
                try:
                    meta = run_scenario(name, version, out, tar=tar, progress=progress)
                except RuntimeError as e:
                    console.print(f"[red]{e}[/]", highlight=False)
                    failed += 1
                    continue
            for e in meta["expectations"]:
                mark = "[green]ok[/]" if e["found"] else "[red]MISSING[/]"
                where = f"{e['file']}:{e['line']}: {e['text'][:160]}" if e["found"] else ""
                console.print(f"  {mark} /{e['pattern']}/ {where}", highlight=False, markup=True)
            ok = all(e["found"] for e in meta["expectations"])
            failed += not ok
            console.print(f"{name} on {version}: {meta['seconds']:.0f}s, job {meta['final_state']}, "
                          f"bundle {meta['bundle']}")
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    lab()
