"""`flinkdoctor collect` and `flinkdoctor watch`, and the connection options `diagnose --rest` shares.

Secrets never go on the command line (where `ps` shows them): a basic-auth password comes from
FLINKDOCTOR_REST_PASSWORD (or user:password@ in the URL), a bearer token from a file or FLINKDOCTOR_REST_TOKEN.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from threading import Event

import click

from ..errors import InputError, UsageError
from ..safety import outbound
from ..safety.inert import inert
from .bundle import stamp
from .client import Connection, RestClient, RestError, redact
from .collector import DEFAULT_MAX_LOG_BYTES, CollectResult, Unreachable, collect
from .names import safe_name

PASSWORD_ENV = "FLINKDOCTOR_REST_PASSWORD"
TOKEN_ENV = "FLINKDOCTOR_REST_TOKEN"


def rest_options(required: bool):
    """The options that say how to reach a JobManager; `rest` is None when not given (and not required)."""
    options = [
        click.option(
            "--rest",
            "rest",
            required=required,
            metavar="URL",
            help="The JobManager's REST address, e.g. http://jm:8081 (the web UI's address).",
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0.1),
            default=10.0,
            show_default=True,
            help="Seconds to wait for a connection and for each read.",
        ),
        click.option(
            "--retries",
            type=click.IntRange(min=0, max=10),
            default=2,
            show_default=True,
            help="Retries of a request that was refused, timed out or answered 502/503/504.",
        ),
        click.option(
            "--max-log-mb",
            type=click.FloatRange(min=0.01),
            default=DEFAULT_MAX_LOG_BYTES / 2**20,
            show_default=True,
            help="Keep the last N MiB of each log (the bundle says which were cut).",
        ),
        click.option(
            "--ca-file",
            type=click.Path(exists=True, dir_okay=False),
            help="CA certificate(s) to verify an https JobManager with.",
        ),
        click.option("--insecure", is_flag=True, help="Do not verify the https certificate (a test cluster)."),
        click.option(
            "--client-cert",
            type=click.Path(exists=True, dir_okay=False),
            help="Client certificate for REST SSL mutual authentication (with --client-key).",
        ),
        click.option("--client-key", type=click.Path(exists=True, dir_okay=False)),
        click.option("--user", help=f"Basic-auth user; the password is read from ${PASSWORD_ENV}."),
        click.option(
            "--token-file",
            type=click.Path(exists=True, dir_okay=False),
            help=f"File holding a bearer token (or set ${TOKEN_ENV}).",
        ),
    ]

    def decorate(function):
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def connection(rest, timeout, retries, ca_file, insecure, client_cert, client_key, user, token_file) -> Connection:
    """The Connection the options describe; a bad combination is a usage error."""
    if bool(client_cert) != bool(client_key):
        raise UsageError("--client-cert and --client-key go together")
    token = None
    if token_file:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip() or None
        except (OSError, UnicodeDecodeError) as err:
            raise UsageError(f"--token-file: cannot read it ({type(err).__name__})") from None
    token = token or os.environ.get(TOKEN_ENV) or None
    password = os.environ.get(PASSWORD_ENV)
    if token and user:
        raise UsageError("use either basic auth (--user) or a bearer token, not both")
    try:
        return Connection.from_url(
            rest,
            timeout=timeout,
            retries=retries,
            ca_file=ca_file,
            insecure=insecure,
            client_cert=client_cert,
            client_key=client_key,
            token=token,
            **({"user": user, "password": password} if user else {}),
        )
    except ValueError as err:
        raise UsageError(f"--rest: {err}") from None


def default_bundle_path(conn: Connection) -> Path:
    return Path(f"flinkdoctor-{safe_name(conn.host)}-{stamp()}.tar.gz")


def collect_or_exit(conn: Connection, out: Path, max_log_mb: float, jobs=()) -> CollectResult:
    """Collect, say on stderr what could not be fetched; an unreachable JobManager is unreadable input (exit 3)."""
    try:
        result = collect(
            RestClient(conn),
            out,
            max_log_bytes=int(max_log_mb * 2**20),
            jobs=tuple(jobs),
            progress=lambda m: outbound.echo(f"flinkdoctor: {inert(m)}", err=True),
        )
    except Unreachable as err:
        raise InputError(f"nothing collected from the JobManager at {redact(conn.url)}: {err}") from None
    except OSError as err:
        raise UsageError(f"cannot write the bundle {out}: {err.strerror or err}") from None
    for note in result.notes:
        outbound.echo(f"flinkdoctor: collect: {inert(note)}", err=True)
    outbound.echo(
        f"flinkdoctor: bundle {inert(str(result.path))} (Flink {inert(result.flink_version or 'unknown')}, "
        f"{len(result.jobs)} jobs, {result.taskmanagers} TaskManagers, {result.logs} logs, {result.seconds} s)",
        err=True,
    )
    return result


@click.command("collect")
@rest_options(required=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Archive to write (default: flinkdoctor-<host>-<UTC time>.tar.gz here).",
)
@click.option("--job", "jobs", multiple=True, help="Only this job id (repeatable; default: every active job).")
def collect_command(
    rest, timeout, retries, max_log_mb, ca_file, insecure, client_cert, client_key, user, token_file, output, jobs
):
    """Collect an incident bundle from a running cluster's REST API (logs, exceptions, checkpoints, config)."""
    conn = connection(rest, timeout, retries, ca_file, insecure, client_cert, client_key, user, token_file)
    out = output or default_bundle_path(conn)
    if out.exists():
        raise UsageError(f"--output: {out} exists (flinkdoctor never overwrites a bundle)")
    collect_or_exit(conn, out, max_log_mb, jobs)
    outbound.echo(str(out))


@click.command("watch")
@rest_options(required=True)
@click.option(
    "--interval", type=click.FloatRange(min=0.5), default=10.0, show_default=True, help="Seconds between polls."
)
@click.option(
    "--cooldown",
    type=click.FloatRange(min=0),
    default=600.0,
    show_default=True,
    help="Seconds during which a job's further incidents are counted, not reported (unless worse).",
)
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("incidents"),
    show_default=True,
    help="Where each incident's bundle is kept.",
)
@click.option("--webhook", metavar="URL", help="Also POST each incident's JSON line to this URL.")
@click.option("--max-incidents", type=click.IntRange(min=1), help="Stop after this many incidents.")
@click.option("--master", help="Spark master for the diagnoses (default local[*]).")
def watch_command(
    rest,
    timeout,
    retries,
    max_log_mb,
    ca_file,
    insecure,
    client_cert,
    client_key,
    user,
    token_file,
    interval,
    cooldown,
    out_dir,
    webhook,
    max_incidents,
    master,
):
    """Poll a cluster; on an incident collect a bundle, diagnose it, print one JSON line (stops on Ctrl-C)."""
    from .watcher import Watcher, WatchOptions, json_line
    from .webhook import Webhook

    conn = connection(rest, timeout, retries, ca_file, insecure, client_cert, client_key, user, token_file)
    hook = Webhook(webhook, timeout=timeout) if webhook else None
    out_dir.mkdir(parents=True, exist_ok=True)

    def emit(incident: dict) -> None:
        outbound.echo(json_line(incident))
        sys.stdout.flush()
        if hook:
            problem = hook.post(json_line(incident))
            if problem:
                outbound.echo(f"flinkdoctor: webhook: {inert(problem)}", err=True)

    watcher = Watcher(
        RestClient(conn),
        WatchOptions(out_dir, interval, cooldown, int(max_log_mb * 2**20), max_incidents),
        diagnose=spark_diagnosis(master),  # replaced below, once the signal handlers are in place
        emit=emit,
        say=lambda m: outbound.echo(f"flinkdoctor: watch: {inert(m)}", err=True),
    )
    outbound.echo(f"flinkdoctor: watching {inert(redact(conn.url))} every {interval:g} s", err=True)
    with stop_on_signals() as (stop, reinstall):
        watcher.diagnose = spark_diagnosis(master, on_start=reinstall)
        watcher.run(stop)
    outbound.echo(f"flinkdoctor: watch stopped after {watcher.incidents} incidents", err=True)


def spark_diagnosis(master: str | None, on_start: Callable[[], None] = lambda: None):
    """bundle -> incident summary, on one Spark session started at the first incident and kept; `on_start` runs
    once it has started (PySpark installs its own SIGINT handler then)."""
    session = {}

    def run(bundle: Path) -> dict:
        from ..pipeline import diagnose
        from ..runtime.spark import spark_session
        from .watcher import summary

        if "spark" not in session:
            session["spark"] = spark_session(master) if master else spark_session()
            on_start()
        return summary(diagnose([bundle], spark=session["spark"]).to_dict())

    return run


@contextmanager
def stop_on_signals():
    """(an Event set by the first SIGINT or SIGTERM, a function that installs the handlers again); a second
    signal interrupts whatever runs. PySpark replaces the SIGINT handler when its context starts: install again
    after that."""
    stop = Event()

    def handler(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        outbound.echo("flinkdoctor: watch: stopping (after the incident in hand, if any)", err=True)

    def install() -> None:
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, handler)

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    install()
    try:
        yield stop, install
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


__all__ = ["RestError", "collect_command", "collect_or_exit", "connection", "rest_options", "watch_command"]
