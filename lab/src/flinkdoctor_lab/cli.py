"""`flinkdoctor-lab`: reproduce Flink incidents on a real local cluster and collect their bundles.

    flinkdoctor-lab list
    flinkdoctor-lab run SCENARIO... [--all] [--flink-version V]... [--out DIR] [--tar] [--record DIR]
    flinkdoctor-lab matrix [--scenario S]... [--flink-version V]... [--out DIR] [--record DIR]

`run` and `matrix` share one loop (`run_many`); `matrix` is `run` over every scenario and every recorded Flink
version, packed as .tar.gz. Errors are one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import traceback
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console

from . import LabError
from .install import FLINK_VERSIONS

EXIT_FAILED = 1  # a run failed or missed an expected log line; also a broken catalogue
EXIT_USAGE = 2
EXIT_INTERNAL = 4

_out_option = click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("lab-runs"),
    show_default=True,
    help="Directory for the run folders / archives and summary.md.",
)
_record_option = click.option(
    "--record",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Copy each bundle whose expected lines were all found to "
    "RECORD/<version>/<scenario>.tar.gz (implies --tar), e.g. tests/data/lab.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def lab() -> None:
    """Reproduce Flink incidents on a real local Flink cluster (see docs/lab.md)."""


@lab.command("list")
def list_scenarios() -> int:
    """List the scenarios and what each one does."""
    from rich.table import Table

    from .scenarios import SCENARIOS

    table = Table("scenario", "what happens")
    for s in SCENARIOS.values():
        table.add_row(s.name, s.summary)
    Console().print(table)
    return 0


@lab.command("run")
@click.argument("scenarios", nargs=-1)
@click.option("--all", "run_all", is_flag=True, help="Run every scenario.")
@click.option(
    "--flink-version",
    "versions",
    multiple=True,
    default=[FLINK_VERSIONS[0]],
    show_default=True,
    help=f"Flink version from PyPI (repeatable; recorded: {', '.join(FLINK_VERSIONS)}).",
)
@_out_option
@click.option("--tar", is_flag=True, help="Pack each bundle as <run>.tar.gz instead of a folder.")
@_record_option
def run(
    scenarios: tuple[str, ...], run_all: bool, versions: tuple[str, ...], out: Path, tar: bool, record: Path | None
) -> int:
    """Run SCENARIO(S) and write each bundle (logs, .out, REST JSON, config) under --out."""
    from .scenarios import SCENARIOS

    names = list(SCENARIOS) if run_all else list(scenarios)
    if not names:
        raise click.UsageError(f"name a scenario or use --all; scenarios: {', '.join(SCENARIOS)}")
    return run_many(names, list(versions), out, tar=tar or record is not None, record=record)


@lab.command("matrix")
@click.option("--scenario", "scenarios", multiple=True, help="Scenario to run (repeatable; default: all).")
@click.option(
    "--flink-version",
    "versions",
    multiple=True,
    default=list(FLINK_VERSIONS),
    show_default=True,
    help="Flink version from PyPI (repeatable).",
)
@_out_option
@_record_option
def matrix(scenarios: tuple[str, ...], versions: tuple[str, ...], out: Path, record: Path | None) -> int:
    """Run every scenario on every recorded Flink version, each bundle packed as .tar.gz; summarise."""
    from .scenarios import SCENARIOS

    return run_many(list(scenarios or SCENARIOS), list(versions), out, tar=True, record=record)


def run_many(names: list[str], versions: list[str], out: Path, tar: bool, record: Path | None) -> int:
    """The one run loop: each scenario on each version, one failure never hides the rest.

    Progress goes to stderr; the summary table (scenario x version -> seconds, final job state, the first
    line matching each expectation) to stdout and to <out>/summary.md. Returns the exit code."""
    from .runner import run_scenario
    from .scenarios import SCENARIOS

    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise click.UsageError(f"unknown scenario {', '.join(unknown)}; choose from: {', '.join(SCENARIOS)}")
    console = Console(stderr=True, highlight=False)
    rows = ["| scenario | Flink | seconds | job at end | expected lines found |", "|---|---|---|---|---|"]
    failed = 0
    for version in versions:
        for name in names:
            console.rule(f"{name} on Flink {version}")
            with console.status(f"{name}: starting") as status:

                def progress(msg: str, _name: str = name, _status=status) -> None:
                    console.log(msg)
                    _status.update(f"{_name}: {msg}")

                try:
                    meta = run_scenario(name, version, out, tar=tar, progress=progress)
                except LabError as e:
                    console.print(f"[red]{e}[/]")
                    rows.append(f"| {name} | {version} | - | error: {e} | |")
                    failed += 1
                    continue
            ok = _print_expectations(console, meta)
            failed += not ok
            if ok and record:
                _record(Path(meta["bundle"]), record, version, name)
            rows.append(_summary_row(name, version, meta))
            console.print(
                f"{name} on {version}: {meta['seconds']:.0f}s, job {meta['final_state']}, bundle {meta['bundle']}"
            )
    table = "\n".join(rows) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.md").write_text(table)
    click.echo(table, nl=False)
    return EXIT_FAILED if failed else 0


def _print_expectations(console: Console, meta: dict) -> bool:
    for e in meta["expectations"]:
        mark = "[green]ok[/]" if e["found"] else "[red]MISSING[/]"
        where = f"{e['file']}:{e['line']}: {e['text'][:160]}" if e["found"] else ""
        console.print(f"  {mark} /{e['pattern']}/ {where}", markup=True)
    return all(e["found"] for e in meta["expectations"])


def _summary_row(name: str, version: str, meta: dict) -> str:
    found = [e for e in meta["expectations"] if e["found"]]
    # the log message without its timestamp/level/logger header, where the layout has one
    lines = "<br>".join(
        f"`{e['text'][e['text'].find(' - ') + 3 :][:140]}`" if " - " in e["text"] else f"`{e['text'][:140]}`"
        for e in found
    )
    return (
        f"| {name} | {version} | {meta['seconds']:.0f} | {meta['final_state']} | "
        f"{len(found)}/{len(meta['expectations'])} {lines} |"
    )


def _record(archive: Path, root: Path, version: str, scenario: str) -> Path:
    dest = root / version / f"{scenario}.tar.gz"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(archive, dest)
    return dest


def main(argv: list[str] | None = None) -> None:
    """Console script: exit codes 0 ok, 1 a run failed, 2 usage, 4 internal error (traceback in a file)."""
    try:
        code = lab.main(args=argv, prog_name="flinkdoctor-lab", standalone_mode=False)
    except click.UsageError as e:
        _fail(f"{e.format_message()} (see flinkdoctor-lab --help)", EXIT_USAGE)
    except click.ClickException as e:
        _fail(e.format_message(), e.exit_code)
    except (click.Abort, KeyboardInterrupt):
        _fail("interrupted; every process the run started was stopped", 130)
    except LabError as e:
        _fail(str(e), EXIT_FAILED)
    except Exception as e:  # noqa: BLE001 (last resort: one line here, the traceback in a file)
        with tempfile.NamedTemporaryFile("w", prefix="flinkdoctor-lab-", suffix=".log", delete=False) as log:
            traceback.print_exc(file=log)
        _fail(f"internal error: {type(e).__name__}: {e} (traceback in {log.name})", EXIT_INTERNAL)
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int) -> NoReturn:
    one_line = " ".join(message.split())
    click.echo(f"flinkdoctor-lab: error: {one_line}", err=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
