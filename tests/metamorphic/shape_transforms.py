"""The shapes real pastes and shippers give a log, as transformations of a plain case.

A case is a few plain files (name -> text). A transformation returns two cases: the reference (the plain text of
exactly what the shape carries) and the shaped one. Most shapes carry everything, and the reference is the case
itself; a shape that carries only part of a failure (the web UI shows the exception, not the log line around it;
the SQL client prints only the innermost exception) has as reference the plain text of that part, so the property
"same verdict, same category" compares like with like. A transformation that has nothing to carry in a case (no
trace, no timed line) returns None and is not counted for it.

Every shape is written as the real software writes it, or as a real paste shows it; each docstring says where the
shape comes from. The log lines themselves are never rewritten except where the shape does it (redaction,
localization, wrapping, cutting).
"""

from __future__ import annotations

import io
import json
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

import yaml
from shape_events import Event, exceptions, read_events

Files = dict[str, str]
Pair = tuple[Files, Files]
HERE = Path(__file__).parent


@dataclass(frozen=True)
class Transform:
    name: str
    reshape: Callable[[Files], Pair | None]
    keeps_times: bool  # the shape keeps each line's date and time: first_seen must stay the same
    # the shape cuts lines of its reference away (a trace cut to its head or tail): when the reference's answer
    # rests only on lines the cut removed, the shape no longer holds that answer's evidence (shape_runner.applies)
    cuts: bool = False

    @property
    def source(self) -> str:
        return (self.reshape.__doc__ or "").strip().split("\n\n")[0]


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _join(lines: list[str], newline: str = "\n") -> str:
    return newline.join(lines) + newline


def _per_line(files: Files, decorate: Callable[[int, str], str]) -> Pair:
    return files, {
        name: _join([decorate(i, line) for i, line in enumerate(_lines(text), 1)]) for name, text in files.items()
    }


def _per_event(files: Files, reshape: Callable[[str, list[Event]], list[str] | None]) -> Pair | None:
    """Reshape each file from its events; None when no file changes."""
    shaped, changed = {}, False
    for name, text in files.items():
        out = reshape(name, read_events(text))
        changed |= out is not None
        shaped[name] = text if out is None else _join(out)
    return (files, shaped) if changed else None


def _stamp(event: Event | None, digits: int = 3) -> str | None:
    """The event's time as RFC 3339 UTC with `digits` fraction digits, or None."""
    when = event.time if event else None
    if when is None:
        return None
    fraction = f"{when.microsecond // 1000:03d}".ljust(digits, "0")
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + fraction + "Z"


def _stamps(events: list[Event], digits: int) -> list[tuple[str | None, str]]:
    """(time of the event the line belongs to, or of the last timed event before it, line) of every line."""
    out, last = [], None
    for event in events:
        last = _stamp(event, digits) or last
        out += [(last, line) for line in event.lines]
    return out


# -- decoration a person adds when pasting --------------------------------------------------------------------


def quote(files: Files) -> Pair:
    """Quote markers: '> ' before every line, as a reply by e-mail or a GitHub/Markdown blockquote quotes a log
    (incident d23 was posted behind a '>'; tests/data/shapes/decorated/jobmanager-quoted.txt)."""
    return _per_line(files, lambda _, line: "> " + line)


def indent(files: Files) -> Pair:
    """Common indentation: two spaces before every line, as incident d02's JobManager excerpt was posted (a code
    block nested in a list)."""
    return _per_line(files, lambda _, line: "  " + line)


def line_numbers(files: Files) -> Pair:
    """Line numbers: `cat -n FILE` output (GNU coreutils: the number right-aligned in six columns, then a tab),
    as a log is shown from a terminal."""
    return _per_line(files, lambda n, line: f"{n:6d}\t{line}")


def windows_line_ends(files: Files) -> Pair:
    """Windows line ends: every line ends with CR LF, as a log saved or pasted on Windows is."""
    return files, {name: _join(_lines(text), "\r\n") for name, text in files.items()}


def bullets(files: Files) -> Pair | None:
    """A Markdown list: '- ' before each event's first line, its further lines indented by two to stay in the
    item (tests/data/shapes/decorate.py's `bullets`, the CommonMark list-item rule)."""

    def reshape(_: str, events: list[Event]) -> list[str]:
        return [("- " if i == 0 else "  ") + line for event in events for i, line in enumerate(event.lines)]

    return _per_event(files, reshape)


def table(files: Files) -> Pair:
    """A Markdown table of one column: '| line |', padded to the longest line (tests/data/shapes/decorate.py's
    `table`, as a log is pasted into a wiki table)."""
    result = {}
    for name, text in files.items():
        lines = _lines(text)
        width = max(map(len, lines), default=0)
        result[name] = _join([f"| {line.ljust(width)} |" for line in lines])
    return files, result


def tui_box(files: Files) -> Pair:
    """A terminal UI's box: every line between '│ ' and ' │', under a top and over a bottom border, as a TUI
    draws a log pane; rendered by rich's Panel (box.SQUARE), tabs expanded, as on the terminal. The box is as
    wide as the longest line, up to 240 columns; a longer line is folded inside the box, as rich folds it."""
    from rich import box
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    result = {}
    for name, text in files.items():
        lines = _lines(text)
        body = Text("\n".join(lines), no_wrap=False, overflow="fold", tab_size=8)
        width = min(max((len(line.expandtabs(8)) for line in lines), default=0) + 4, 240)
        sink = io.StringIO()
        Console(file=sink, width=width, color_system=None, legacy_windows=False, emoji=False, highlight=False).print(
            Panel(body, box=box.SQUARE, expand=False)
        )
        result[name] = "\n".join(line.rstrip() for line in sink.getvalue().split("\n")).rstrip("\n") + "\n"
    return files, result


def redacted(files: Files) -> Pair | None:
    """Redacted numbers, ids and hosts, as users blank them before posting: IP addresses as 'x.x.x.x' (and the
    port after them), hex ids (job, vertex, checkpoint handle) and YARN/Kubernetes ids as 'xxxxxx', host names as
    'xxx' where an address names them (a URL's authority, host:port; seed 001's 'xxxxxx_topic-0', seed 002's
    'hdfs://HDFSaaaa/' are redactions of the same kind)."""
    rules = [
        (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{2,5})?\b"), "x.x.x.x"),
        (re.compile(r"\b(?:container|application|appattempt)(?:_e\d+)?(?:_\d+)+\b"), "xxxxxx"),
        (re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{16,}\b"), "xxxxxx"),
        (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "xxxxxx"),
        (re.compile(r"(?<=//)[a-z][\w.-]*(?=[:/])"), "xxx"),  # a URL's host: hdfs://namenode:8020/
        (re.compile(r"(?<=@)[a-z][\w.-]*(?=:\d)"), "xxx"),  # akka/pekko addresses: flink@host:port
        (re.compile(r"\b[a-z][\w-]*(?:\.[\w-]+)+(?=:\d{2,5}\b)"), "xxx"),  # host:port
    ]

    def redact(line: str) -> str:
        for regex, blank in rules:
            line = regex.sub(blank, line)
        return line

    shaped = {name: _join([redact(line) for line in _lines(text)]) for name, text in files.items()}
    return (files, shaped) if shaped != files else None


@cache
def _strerror_zh() -> dict[str, str]:
    return json.loads((HERE / "data" / "strerror-zh_CN.json").read_text("utf-8"))["messages"]


def localized_zh_cn(files: Files) -> Pair | None:
    """Localized JVM messages: a JVM on a zh-CN system prints the C library's error texts in Chinese (glibc's
    zh_CN translations, data/strerror-zh_CN.json); JDK 8's socket errors keep the English text in parentheses,
    as in incident d23 ('java.net.ConnectException: 拒绝连接 (Connection refused)')."""
    table = _strerror_zh()
    phrase = re.compile("|".join(re.escape(k) for k in sorted(table, key=len, reverse=True)))

    def localize(line: str) -> str:
        line = re.sub(
            rf"({phrase.pattern}) \(\1\)", lambda m: f"{table[m.group(1)]} ({m.group(1)})", line
        )  # JDK 8 sockets: strerror, then the JDK's own English in parentheses
        return re.sub(rf"(?<!\()({phrase.pattern})(?!\))", lambda m: table[m.group(1)], line)

    shaped = {name: _join([localize(line) for line in _lines(text)]) for name, text in files.items()}
    return (files, shaped) if shaped != files else None


def timeline(files: Files) -> Pair | None:
    """A human-written timeline: one Markdown bullet per event, the log's time as printed, then the message as
    quoted by the person (the level and the logger left out), the message's further lines and the stack trace
    indented by two under the bullet, as an item's further lines are (the CommonMark list-item rule); how
    incident write-ups list what happened when."""

    def reshape(_: str, events: list[Event]) -> list[str] | None:
        if not any(event.fields.get("ts") for event in events):
            return None
        out = []
        for event in events:
            message, trace = event.message, event.trace
            text = message[0].strip() if message else ""
            first = f"{event.fields['ts']} {text}" if event.fields.get("ts") else text
            out.append(f"- {first}" if first else "-")
            out += ["  " + line for line in message[1:] + trace]
        return out

    return _per_event(files, reshape)


# -- collectors and container runtimes ------------------------------------------------------------------------


def kubectl_prefix(files: Files) -> Pair | None:
    """`kubectl logs --prefix --timestamps`: the kubelet's RFC 3339 nanosecond time and
    '[pod/<pod>/<container>] ' before every line (tests/data/shapes/decorate.py's `kubectl`)."""

    def reshape(name: str, events: list[Event]) -> list[str] | None:
        pod = f"[pod/{_service(name)}-7d9c5b6f4-x2k8q/flink-main-container]"
        return [f"{when or '1970-01-01T00:00:00.000000000Z'} {pod} {line}" for when, line in _stamps(events, 9)]

    return _per_event(files, reshape)


def _service(name: str) -> str:
    """The compose service / pod a file's log came from, by its name."""
    stem = PurePosixPath(name).name.lower()
    for word, service in (
        ("taskexecutor", "taskmanager"),
        ("taskmanager", "taskmanager"),
        ("standalonesession", "jobmanager"),
        ("jobmanager", "jobmanager"),
        ("client", "client"),
        ("sql", "sql-client"),
        ("operator", "flink-operator"),
    ):
        if word in stem:
            return service
    return re.sub(r"[^a-z0-9]+", "-", PurePosixPath(name).stem.lower()).strip("-") or "flink"


def compose_prefix(files: Files) -> Pair:
    """`docker compose logs` (Compose v2, no TTY): '<service>-1' padded to the longest container name, then
    ' | ', before every line."""
    width = max(len(_service(name)) + 2 for name in files)
    return files, {
        name: _join([f"{_service(name) + '-1':<{width}}  | {line}" for line in _lines(text)])
        for name, text in files.items()
    }


def docker_json(files: Files) -> Pair | None:
    """Docker's json-file logging driver: one '{"log": "<line>\\n", "stream": "stdout", "time": "<RFC 3339
    nanoseconds>"}' object per line (tests/data/shapes/wrap.py's `docker`)."""

    def reshape(_: str, events: list[Event]) -> list[str]:
        out = []
        for when, line in _stamps(events, 9):
            record = {"log": line + "\n", "stream": "stdout", "time": when or "1970-01-01T00:00:00.000000000Z"}
            out.append(json.dumps(record, separators=(",", ":"), ensure_ascii=False))
        return out

    return _per_event(files, reshape)


def cri(files: Files) -> Pair | None:
    """CRI (containerd, CRI-O): '<RFC 3339 nanoseconds> stdout F <line>' per line, as the kubelet stores a
    container's output under /var/log/pods (tests/data/shapes/wrap.py's `cri`)."""

    def reshape(_: str, events: list[Event]) -> list[str]:
        return [f"{when or '1970-01-01T00:00:00.000000000Z'} stdout F {line}" for when, line in _stamps(events, 9)]

    return _per_event(files, reshape)


def _record_parts(event: Event) -> tuple[str, list[str]]:
    """(message, trace lines) of a timed event, as a structured layout separates them."""
    message = "\n".join(event.message)
    return message, event.trace if event.lines[1:] or not event.trace else []


def _structured(event: Event) -> bool:
    """An event a structured layout writes as a record: it has a level and a date and time (a log4j line, not a
    syslog line without a year or a web UI copy)."""
    return bool(event.fields.get("level")) and event.time is not None


def json_lines_ecs(files: Files) -> Pair | None:
    """JSON lines: log4j's JsonTemplateLayout with its ECS template, as Flink writes it with
    `classpath:EcsLayout.json` (field names and order from tests/data/shapes/json/jobmanager-ecs.json: the trace
    in `error.stack_trace`, its newlines and tabs escaped)."""

    def reshape(_: str, events: list[Event]) -> list[str] | None:
        if not any(_structured(event) for event in events):
            return None
        out = []
        for event in events:
            if not _structured(event):
                out += event.lines  # lines before the first header: printed before log4j started, as they are
                continue
            message, trace = _record_parts(event)
            record: dict = {"@timestamp": _stamp(event), "ecs.version": "1.2.0"}
            record.update({"log.level": event.fields.get("level", "INFO"), "message": message})
            record.update(
                {"process.thread.name": event.fields.get("thread", ""), "log.logger": event.fields.get("logger", "")}
            )
            if trace:
                (cls, msg), *_ = exceptions(trace) or [(trace[0].split(":")[0], None)]
                record.update({"error.type": cls, "error.message": msg or "", "error.stack_trace": "\n".join(trace)})
            out.append(
                json.dumps(
                    {k: v for k, v in record.items() if v is not None}, ensure_ascii=False, separators=(",", ":")
                )
            )
        return out

    return _per_event(files, reshape)


def json_pretty(files: Files) -> Pair | None:
    """Pretty-printed multi-line JSON exception objects: log4j's LogstashJsonEventLayoutV1 template (field names
    and order from tests/data/shapes/json/jobmanager-logstash.json, the exception as {"exception": {
    "exception_class", "exception_message", "stacktrace"}}), each record put through `jq .` (two-space indent),
    as a record is pasted from a log search UI or a terminal."""

    def reshape(_: str, events: list[Event]) -> list[str] | None:
        if not any(_structured(event) for event in events):
            return None
        out = []
        for event in events:
            if not _structured(event):
                out += event.lines
                continue
            message, trace = _record_parts(event)
            record: dict = {}
            if trace:
                (cls, msg), *_ = exceptions(trace) or [(trace[0].split(":")[0], None)]
                record["exception"] = {
                    "exception_class": cls,
                    "exception_message": msg or "",
                    "stacktrace": "\n".join(trace),
                }
            when = event.time
            stamp = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}+0000" if when else None
            record.update({"@version": 1, "source_host": "vm", "message": message})
            record.update({"thread_name": event.fields.get("thread", ""), "@timestamp": stamp})
            record.update({"level": event.fields.get("level", "INFO"), "logger_name": event.fields.get("logger", "")})
            out += json.dumps({k: v for k, v in record.items() if v is not None}, indent=2, ensure_ascii=False).split(
                "\n"
            )
        return out

    return _per_event(files, reshape)


# -- archives, consoles and terminals -------------------------------------------------------------------------


def mail_wrap(files: Files) -> Pair:
    """A mail archive's hard wrap: every line longer than 80 columns broken at the last blank before column 80
    (a word longer than the width is not broken), as list archives and mail clients send plain text; Flink's
    padded header then shows its level and logger on one line and the message on the next."""

    def wrap(line: str) -> list[str]:
        if len(line) <= 80:
            return [line]
        return textwrap.wrap(
            line, 80, expand_tabs=False, replace_whitespace=False, break_long_words=False, break_on_hyphens=False
        ) or [line]

    return files, {name: _join([part for line in _lines(text) for part in wrap(line)]) for name, text in files.items()}


def ci_markers(files: Files) -> Pair | None:
    """A CI console copied into an issue: Jenkins' Timestamper prints '<b>HH:mm:ss</b> ' before every line,
    which wiki markup shows as '*05:23:50*'; the copy lost the line breaks, so the lines run together, each behind
    its marker. Each line gets the time of its event (05:23:50 where the text has none)."""

    def reshape(_: str, events: list[Event]) -> list[str]:
        parts = []
        for when, line in _stamps(events, 3):
            parts.append(f"*{when[11:19] if when else '05:23:50'}* {line}")
        return [" ".join(parts)]

    return _per_event(files, reshape)


def time_only(files: Files) -> Pair | None:
    """Time-only stamps: Flink's pattern with the date left out, '%d{HH:mm:ss,SSS} %-5p %-60c %x - %m%n', as
    test and CI logging prints it (Paimon's tools/ci log4j2.properties, Flink CDC's log4j2-test.properties, in
    /work/.mirror at the time of writing); the header's date is all that differs."""

    def reshape(_: str, events: list[Event]) -> list[str] | None:
        out, changed = [], False
        for event in events:
            ts = event.fields.get("ts", "")
            m = re.match(r"\d{4}-\d\d-\d\d[ T](\d\d:\d\d:\d\d(?:[,.]\d+)?)$", ts)
            if m and event.header and ts in event.header:
                out.append(event.header.replace(ts, m.group(1), 1))
                out += event.lines[1:]
                changed = True
            else:
                out += event.lines
        return out if changed else None

    return _per_event(files, reshape)


def trace_head(files: Files) -> Pair | None:
    """A trace cut to its head: each exception of a trace keeps its first three frames, the rest cut by hand and
    marked '... more', as incident d03's trace was posted (the JVM's own '... N more' lines are kept)."""

    def reshape(_: str, events: list[Event]) -> list[str] | None:
        out, changed = [], False
        for event in events:
            frames = 0
            cut = False
            for line in event.lines:
                if re.match(r"^\s+at\s", line):
                    frames += 1
                    if frames > 3:
                        if not cut:
                            out.append("\t... more")
                            cut = changed = True
                        continue
                else:
                    frames, cut = 0, False
                out.append(line)
        return out if changed else None

    return _per_event(files, reshape)


def _traces(files: Files) -> list[tuple[str, Event]]:
    """(file name, event) of every event that holds a stack trace or an exception line."""
    return [(name, event) for name, text in files.items() for event in read_events(text) if event.trace]


def _split(name: str, n: int, suffix: str | None = None) -> str:
    path = PurePosixPath(name)
    return str(path.with_name(f"{path.stem}-{n}{suffix or path.suffix or '.log'}"))


def trace_tail(files: Files) -> Pair | None:
    """A trace cut to its tail: from its first 'Caused by:' to its end, each pasted as a block of its own, as
    incidents d04, d15, d18 and d23 were posted. The reference is the same traces whole, pasted alike (without
    the log line they followed)."""
    reference, shaped = {}, {}
    for n, (name, event) in enumerate(_traces(files), 1):
        trace = event.trace
        at = next((i for i, line in enumerate(trace) if line.lstrip().startswith("Caused by:")), None)
        if at is None:
            continue
        reference[_split(name, n)] = _join(trace)
        shaped[_split(name, n)] = _join(trace[at:])
    return (reference, shaped) if shaped else None


def web_ui_exception(files: Files) -> Pair | None:
    """The web UI's exception view copied: the exception's time ('yyyy-MM-dd HH:mm:ss') on a line of its own,
    then the trace, as seed 001's webui-root-exception.txt and incident d10 were copied. The reference is the bare
    trace."""
    reference, shaped = {}, {}
    for n, (name, event) in enumerate(_traces(files), 1):
        when = event.time
        if when is None:
            continue
        file = _split(name, n, ".txt")
        reference[file] = _join(event.trace)
        shaped[file] = _join([when.strftime("%Y-%m-%d %H:%M:%S"), *event.trace])
    return (reference, shaped) if shaped else None


def cli_output(files: Files) -> Pair | None:
    """A CLI's output, starting with the command line: '$ ./bin/flink run ...', then what the flink CLI prints on
    a failure (CliFrontend in flink-dist 1.20.3: a line of 60 '-', ' The program finished with the following
    exception:', a blank line), then the trace; incident d02's client output. The reference is the bare trace."""
    reference, shaped = {}, {}
    banner = ["", "-" * 60, " The program finished with the following exception:", ""]
    for n, (_name, event) in enumerate(_traces(files), 1):
        file = _split("flink-client.log", n)
        reference[file] = _join(event.trace)
        shaped[file] = _join(["$ ./bin/flink run -d ./usrlib/job.jar", *banner, *event.trace])
    return (reference, shaped) if shaped else None


def sql_client(files: Files) -> Pair | None:
    """SQL-client console output: '[ERROR] Could not execute SQL statement. Reason:' then the innermost exception
    with a message as 'class: message' (CliStrings.messageError in flink-sql-client 1.20.3), behind the prompt
    'Flink SQL> ' and the statement; incident d16. The reference is that exception's line."""
    reference, shaped = {}, {}
    for n, (_name, event) in enumerate(_traces(files), 1):
        chain = [(cls, msg) for cls, msg in exceptions(event.trace) if msg]
        if not chain:
            continue
        cls, msg = chain[-1]
        file = _split("sql-client.log", n)
        reference[file] = _join([f"{cls}: {msg}"])
        shaped[file] = _join(
            [
                "Flink SQL> INSERT INTO sink SELECT * FROM source;",
                "[ERROR] Could not execute SQL statement. Reason:",
                f"{cls}: {msg}",
            ]
        )
    return (reference, shaped) if shaped else None


def operator_status(files: Files) -> Pair | None:
    """A Kubernetes operator's custom resource status in YAML, its error an embedded JSON string: the Flink
    Kubernetes operator sets `status.error` to its FlinkResourceException as JSON (type, message,
    additionalMetadata, throwableList of the causes; no frames by default) when a reconciliation fails
    (flink-kubernetes-operator FlinkResourceExceptionUtils), and `kubectl get flinkdeployment -o yaml` prints it
    as a quoted scalar folded at 80 columns. The reference is the chain's exception lines."""
    reference, shaped = {}, {}
    for n, (_name, event) in enumerate(_traces(files), 1):
        chain = exceptions(event.trace)
        if not chain:
            continue
        first = f"{chain[0][0]}: {chain[0][1]}" if chain[0][1] is not None else chain[0][0]
        error = {
            "type": "org.apache.flink.kubernetes.operator.exception.ReconciliationException",
            "message": first,
            "additionalMetadata": {},
            "throwableList": [
                {"type": cls, **({"message": msg} if msg is not None else {}), "additionalMetadata": {}}
                for cls, msg in chain
            ],
        }
        resource = {
            "apiVersion": "flink.apache.org/v1beta1",
            "kind": "FlinkDeployment",
            "metadata": {"name": "basic-example", "namespace": "default"},
            "status": {
                "error": json.dumps(error, separators=(",", ":"), ensure_ascii=False),
                "lifecycleState": "UPGRADING",
            },
        }
        file = _split("flinkdeployment.yaml", n, ".yaml")
        text_file = _split("flinkdeployment.txt", n)
        lines = [f"{cls}: {msg}" if msg is not None else cls for cls, msg in chain]
        reference[text_file] = _join([lines[0], *("Caused by: " + line for line in lines[1:])])
        shaped[file] = yaml.safe_dump(resource, sort_keys=False, width=80, allow_unicode=True)
    return (reference, shaped) if shaped else None


def kubectl_events(files: Files) -> Pair | None:
    """`kubectl describe flinkdeployment` event rows: the Flink Kubernetes operator records each job exception as
    a Warning event, reason JobException, component Job, its message the first five lines of the stack trace and
    '... (N more lines)' (JobStatusObserver, `events.exceptions.stacktrace-lines` default 5). kubectl prints
    'Events:', then '  Type\tReason\tAge\tFrom\tMessage', '  ----\t------\t...' and a row per event through a
    tabwriter (padding 2; kubernetes/kubectl pkg/describe/describe.go DescribeEvents, tabbedString): a message's
    further lines are printed as they are, and a line without cells ends the tabwriter's column block, so the rows
    after a multi-line message are aligned anew. The reference is the trace's first five lines."""
    rows, reference = [], {}
    for n, (name, event) in enumerate(_traces(files), 1):
        trace = event.trace
        message = [trace[0].strip(), *trace[1:5]] + ([f"... ({len(trace) - 5} more lines)"] if len(trace) > 5 else [])
        rows.append((("Warning", "JobException", f"{n + 1}m", "Job"), message))
        reference[_split(name, n)] = _join(trace[:5])
    if not rows:
        return None
    out = ["Events:"]
    block: list = [(("Type", "Reason", "Age", "From"), ["Message"]), (("----", "------", "----", "----"), ["-------"])]
    for row in rows:
        block.append(row)
        if len(row[1]) > 1:  # a multi-line message ends the column block
            out += _aligned(block)
            block = []
    out += _aligned(block)
    return reference, {"kubectl-describe.txt": _join(out)}


def _aligned(block: list) -> list[str]:
    """Rows of one tabwriter block: each cell padded to its column's widest cell plus two blanks."""
    if not block:
        return []
    width = [max(len(cells[i]) for cells, _ in block) + 2 for i in range(4)]
    out = []
    for cells, message in block:
        out.append("  " + "".join(f"{cell:<{w}}" for cell, w in zip(cells, width, strict=True)) + message[0])
        out += message[1:]
    return out


TRANSFORMS: tuple[Transform, ...] = (
    Transform("quote", quote, True),
    Transform("indent", indent, True),
    Transform("line-numbers", line_numbers, True),
    Transform("windows-line-ends", windows_line_ends, True),
    Transform("bullets", bullets, True),
    Transform("table", table, True),
    Transform("tui-box", tui_box, True),
    Transform("redacted", redacted, True),
    Transform("localized-zh-cn", localized_zh_cn, True),
    Transform("timeline", timeline, True),
    Transform("kubectl-prefix", kubectl_prefix, True),
    Transform("compose-prefix", compose_prefix, True),
    Transform("docker-json", docker_json, True),
    Transform("cri", cri, True),
    Transform("json-lines-ecs", json_lines_ecs, True),
    Transform("json-pretty", json_pretty, True),
    Transform("mail-wrap", mail_wrap, True),
    Transform("ci-markers", ci_markers, False),
    Transform("time-only", time_only, False),
    Transform("trace-head", trace_head, True, cuts=True),
    Transform("trace-tail", trace_tail, False, cuts=True),
    Transform("web-ui-exception", web_ui_exception, False),
    Transform("cli-output", cli_output, False),
    Transform("sql-client", sql_client, False),
    Transform("operator-status", operator_status, False),
    Transform("kubectl-events", kubectl_events, False),
)
