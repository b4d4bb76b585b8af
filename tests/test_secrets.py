"""No output shows a secret (issue #27): the configuration audit, and (the canary test) every byte of every command.

Logs and configurations are read where production credentials are, and reports are pasted into tickets.
"""

from __future__ import annotations

import ast
import json
import shutil
import time
from pathlib import Path

import pytest

from conftest import DATA

SEED1 = DATA / "seeds" / "001"


def test_the_configuration_audit_masks_a_keystore_password(diagnose_bundle, tmp_path):
    """Issue #27, defect 2: the audit listed security.ssl.keystore-password with its value in the JSON report."""
    bundle = tmp_path / "bundle"
    shutil.copytree(SEED1, bundle)
    with open(bundle / "flink-conf.yaml", "a", encoding="utf-8") as conf:
        conf.write("security.ssl.keystore-password: Ks-Canary-4711\n")
    report = diagnose_bundle(bundle)
    assert "Ks-Canary-4711" not in json.dumps(report)
    setting = next(s for s in report["config_audit"]["settings"] if s["key"] == "security.ssl.keystore-password")
    assert setting["value"] == "******" and setting["source"] == "flink-conf.yaml"


# -- the masker knows every key Flink masks ------------------------------------------------------------------------


def test_every_key_flink_masks_is_sensitive_here():
    """Flink's GlobalConfiguration.isSensitive: the lower-cased key contains one of SENSITIVE_KEYS (read from
    flink-dist-1.20.3.jar and flink-dist-2.1.1.jar with javap). Keys as Flink's docs and connectors spell them."""
    from flinkdoctor.safety.masking import FLINK_SENSITIVE, is_sensitive, mask_value

    assert set(FLINK_SENSITIVE) == {
        "password", "secret", "fs.azure.account.key", "apikey", "api-key", "auth-params", "service-key", "token",
        "basic-auth", "jaas.config", "http-headers",
    }  # fmt: skip
    for key in (
        "security.ssl.keystore-password",
        "security.ssl.rest.truststore-password",
        "s3.secret-key",
        "fs.azure.account.key.acct.blob.core.windows.net",
        "metrics.reporter.dghttp.apikey",
        "metrics.reporter.x.api-key",
        "security.ssl.internal.key-password",
        "properties.sasl.jaas.config",
        "metrics.reporter.prom.basic-auth",
        "metrics.reporter.otel.http-headers",
        "gs.auth-params",
        "fs.gs.auth.service-key.json",
        "security.delegation.token.provider.hadoopfs.renewer",
        "KAFKA_SASL_PASSWORD",
    ):
        assert is_sensitive(key), key
        assert mask_value(key, "v4lue") == "******"
    for key in ("state.backend.type", "execution.checkpointing.interval", "security.ssl.enabled", "rest.port"):
        assert not is_sensitive(key) and mask_value(key, "v4lue") == "v4lue"


def test_scrub_masks_a_setting_by_its_key_and_keeps_the_shape():
    from dataclasses import dataclass

    from flinkdoctor.safety.masking import scrub

    @dataclass(frozen=True)
    class Setting:
        key: str
        value: str
        source: str

    rest = [{"key": "security.ssl.keystore-password", "value": "pw1"}, {"key": "rest.port", "value": "8081"}]
    assert scrub(rest) == [{"key": "security.ssl.keystore-password", "value": "******"}, rest[1]]
    assert scrub({"s3.access-key": "AK1", "nested": {"password": "pw2", "n": 3}}) == {
        "s3.access-key": "******",
        "nested": {"password": "******", "n": 3},
    }
    setting = Setting("s3.secret-key", "pw3", "flink-conf.yaml")
    assert scrub(setting) == Setting("s3.secret-key", "******", "flink-conf.yaml")
    plain = Setting("rest.port", "8081", "x")
    assert scrub(plain) is plain  # nothing to mask: the same object
    assert scrub(("jdbc:postgresql://u:pw4@db/x",)) == ("jdbc:postgresql://u:******@db/x",)


def test_a_log_is_masked_line_by_line_and_a_pem_block_whole():
    from flinkdoctor.safety.masking import mask_log

    log = (
        b"2026-11-22 11:08:47,766 INFO  org.apache.flink.configuration.GlobalConfiguration           [] - "
        b"Loading configuration property: s3.secret-key, Sk-1\n"
        b"plain \xc8\xce line\n-----BEGIN RSA PRIVATE KEY-----\nMIIBody1\nMIIBody2\n-----END RSA PRIVATE KEY-----\n"
        b"url jdbc:mysql://app:Pw-2@db:3306/x\n"
    )
    masked = mask_log(log)
    assert not any(s in masked for s in (b"Sk-1", b"MIIBody", b"Pw-2"))
    assert b"plain \xc8\xce line\n" in masked and masked.count(b"\n") == log.count(b"\n")  # every line kept


# -- one way out ---------------------------------------------------------------------------------------------------

PACKAGE = Path(__import__("flinkdoctor").__file__).parent
# (module, primitive): why it may write without safety/outbound.py
RAW_WRITERS = {
    ("sources/archives.py", "open"): "unpacks an archive into the work dir's raw copies (removed after the run)",
    ("sources/archives.py", "write"): "the same",
    ("sources/staging.py", "open"): "stages a source into the work dir's raw copies (removed after the run)",
    ("sources/staging.py", "write"): "the same",
    ("sources/yarn.py", "open"): "splits a YARN log into the work dir's raw copies (removed after the run)",
    ("sources/yarn.py", "write"): "the same",
    (
        "sources/shapes.py",
        "write",
    ): "reads a source in its shape into the work dir's raw copies (removed after the run)",
    ("sources/ingest.py", "write_text"): "stages REST events as text among the raw copies (removed after the run)",
    ("scan/scanner.py", "write_table"): "the events table: its text masked by _masked as it is cut from the file",
    ("scan/scanner.py", "write"): "the same",
    ("scan/measured.py", "write_table"): "the measures' rows: lines of the events' text masked by the scan "
    "(scanner._masked), the events table's `measures` flattened",
    ("scan/taskfile.py", "ParquetWriter"): "a task's file: the events table's or the measures' rows (above)",
    ("scan/taskfile.py", "write_table"): "the same",
    ("analytics/metrics.py", "parquet"): "the measures read from the events table or the tasks' rows (masked when "
    "they were written), "
    "into the work dir for pyarrow to read (removed after the run)",
    ("fleet/run.py", "parquet"): "the lake's events: the scan's events table, masked when it was written",
    ("fleet/lake.py", "parquet"): "the lake's other tables: rows through outbound.rows",
    ("live/collector.py", "write"): "BundleWriter.write: through outbound.write_bytes",
    ("live/bundle.py", "write"): "the same",
    ("live/bundle.py", "open"): "packs the bundle's files, each written through outbound",
    ("live/webhook.py", "request"): "POSTs a watch line, made by outbound.dumps (watcher.json_line)",
    ("views/terminal.py", "print"): "prints to the console it is given: outbound.console (outbound.show_terminal)",
    ("fleet/terminal.py", "print"): "the same",
    ("cli.py", "print"): "prints to a console made by outbound.console",
    ("cases.py", "write_text"): "a rule's own case text, into a temporary file for the rule test",
    ("runtime/workdir.py", "write_text"): "the work dir's marker: fixed text",
    ("runtime/server.py", "write_text"): "the warm server's state: its URL, pid and log path",
    ("runtime/server.py", "open"): "the warm server's own log (its JVM's output)",
    ("runtime/spark.py", "open"): "the JVM's output; masked by outbound.mask_file when kept after a failure",
    ("runtime/userstate.py", "dump"): "flinkdoctor's cache of compiled rules (pickle), no input",
    ("scan/re2.py", "open"): "a developer's regeneration of the Unicode class table: Python's own data, no input",
    ("scan/re2.py", "dump"): "the same",
    ("scan/re2.py", "write"): "the same",
    ("runtime/jvm.py", "print"): "a fixed notice on a terminal",
}
_ALWAYS = {"print", "echo", "write", "write_text", "write_bytes", "dump", "write_table", "ParquetWriter", "addfile"}


def _writes(call: ast.Call) -> str | None:
    """The write primitive `call` is, if any: printing, writing a file or a table, or POSTing."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if name == "open":
        mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
        return name if isinstance(mode, ast.Constant) and any(c in str(mode.value) for c in "wax+") else None
    if name in _ALWAYS or name == "Console":
        return name
    if name == "parquet" and "write" in ast.unparse(func):  # DataFrame.write...parquet, not spark.read.parquet
        return name
    if name == "request" and call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value != "GET":
        return name
    return None


def test_nothing_is_written_but_through_the_one_way_out():
    """Every print, echo, file or table write and POST in the package goes through safety/outbound.py (masked), or
    is one of RAW_WRITERS with its reason. A new output path fails here until it goes through the way out."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module == "safety/outbound.py":
            continue
        tree = ast.parse(path.read_text("utf-8"))
        way_out = {  # the names this module gives safety/outbound.py
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("safety")
            for alias in node.names
            if alias.name == "outbound"
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not (primitive := _writes(node)):
                continue
            receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
            if isinstance(receiver, ast.Name) and receiver.id in way_out:
                continue
            assert (module, primitive) in RAW_WRITERS, (
                f"{module}:{node.lineno}: {primitive} not through safety/outbound.py"
            )
            found.add((module, primitive))
    assert found == set(RAW_WRITERS), set(RAW_WRITERS) - found  # the list holds no stale excuse


# -- the canary test: every command, every byte ------------------------------------------------------------------


def cli(*args: str, env: dict | None = None) -> tuple[int, bytes, bytes]:
    """`flinkdoctor ARGS` in this process (the session's Spark), as main() runs it: (exit code, stdout, stderr)."""
    from click.testing import CliRunner

    from flinkdoctor.cli import main

    with CliRunner().isolation(env=env) as streams:
        try:
            main(list(args))
            code = 0
        except SystemExit as done:
            code = int(done.code or 0)
        return code, streams[0].getvalue(), streams[1].getvalue()


class Receiver:
    """A local webhook receiver: every POST body it gets."""

    def __init__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        bodies = self.bodies = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def readable(path: Path) -> list[tuple[str, str]]:
    """(name, text) of what a written file holds: Parquet decoded, archives opened, anything else as bytes."""
    import tarfile

    import pyarrow.parquet as pq

    data = path.read_bytes()
    found = [(str(path), data.decode("utf-8", "replace"))]
    if path.suffix == ".parquet":
        found.append((f"{path} (decoded)", json.dumps(pq.read_table(path).to_pylist(), default=str)))
    if path.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(path) as archive:
            for member in archive.getmembers():
                if member.isfile():
                    found.append(
                        (f"{path}!{member.name}", archive.extractfile(member).read().decode("utf-8", "replace"))
                    )
    return found


@pytest.fixture(scope="module")
def canary_run(spark, tmp_path_factory):
    """Every command run over the planted bundle and REST answers; every byte each one wrote, by where."""
    from canaries import Canaries, plant_bundle, plant_recording
    from rest_replay import ReplayServer, load

    import flinkdoctor.pipeline
    from flinkdoctor.runtime import spark as spark_log

    base = tmp_path_factory.mktemp("canary")
    canary = Canaries()
    run_folder = plant_bundle(base / "jobs" / "job-a", canary)
    bundle = run_folder.parent
    planted_line = next(
        line
        for line in (run_folder / "log" / "flink-root-taskexecutor-0-vm.log").read_text("utf-8").splitlines()
        if "jdbc:postgresql" in line
    )
    recording = plant_recording(load(DATA / "rest" / "1.20.3" / "recording.json"), canary)
    logs, out = base / "logs", base / "out"
    logs.mkdir(), out.mkdir()
    env = {"FLINKDOCTOR_LOG_DIR": str(logs)}
    streams: dict[str, bytes] = {}
    codes: dict[str, int] = {}

    def run(name: str, *args: str) -> None:
        codes[name], streams[f"{name} stdout"], streams[f"{name} stderr"] = cli(*args, env=env)

    started = time.perf_counter()
    b = str(bundle)
    run("diagnose json", "diagnose", b, "--format", "json", "--html", str(out / "r.html"), "--keep-work-dir",
        "--work-dir", str(out / "work"))  # fmt: skip
    run("diagnose text", "diagnose", b)
    run("diagnose markdown", "diagnose", b, "--format", "markdown")
    run("fleet run", "fleet", "run", str(base / "jobs"), "--out", str(out / "lake"), "--format", "json")
    for fmt in ("text", "json", "html"):
        run(f"fleet report {fmt}", "fleet", "report", str(out / "lake"), "--format", fmt)
    for fmt in ("text", "json"):  # every table of the lake, as a user's SQL reads it
        for table in ("bundles", "events", "findings", "diagnoses"):
            run(f"fleet query {table} {fmt}", "fleet", "query", str(out / "lake"), "--sql", f"select * from {table}",
                "--format", fmt)  # fmt: skip
    run("suggest", "rules", "suggest", b, "--template", "1", "-o", str(out))
    run("suggest line", "rules", "suggest", "--line", planted_line)
    receiver = Receiver()
    try:
        with ReplayServer(recording) as server:
            run("collect", "collect", "--rest", server.url, "-o", str(out / "collected.tar.gz"))
            run("watch", "watch", "--rest", server.url, "--interval", "0.5", "--max-incidents", "1",
                "--out-dir", str(out / "incidents"), "--webhook", receiver.url)  # fmt: skip
    finally:
        receiver.close()
    streams.update({f"webhook body {i}": body for i, body in enumerate(receiver.bodies)})
    crash = "cannot read line: jdbc:postgresql://svc:{}@db/x password={}"
    secret = canary("crash", "password=")
    with pytest.MonkeyPatch.context() as patch:  # an internal error whose message quotes an input line

        def fails(*args, **kwargs):
            raise RuntimeError(crash.format(secret, secret))

        patch.setattr(flinkdoctor.pipeline, "diagnose", fails)
        patch.setitem(spark_log._LOG, "keep", False)  # the session's own log is kept (masked) for this run only
        run("crash", "diagnose", b)
        kept = spark_log.spark_log()
        if kept is not None:  # the session's JVM log, masked for the crash report
            streams["spark log"] = kept.read_bytes()
    seconds = round(time.perf_counter() - started, 1)
    texts = [(name, data.decode("utf-8", "replace")) for name, data in streams.items()]
    for path in sorted(p for folder in (out, logs) for p in folder.rglob("*") if p.is_file()):
        texts += readable(path)
    return {"canary": canary, "texts": texts, "codes": codes, "webhooks": len(receiver.bodies), "seconds": seconds}


def test_no_canary_in_any_byte_of_any_command(canary_run, record_property):
    record_property("canary_seconds", canary_run["seconds"])
    record_property("canary_secrets", len(canary_run["canary"].secrets))
    record_property("canary_outputs", len(canary_run["texts"]))
    record_property("canary_commands", len(canary_run["codes"]))
    record_property("canary_chars", sum(len(text) for _, text in canary_run["texts"]))
    leaks = [(name, place) for name, text in canary_run["texts"] for place in canary_run["canary"].leaks(text)]
    assert not leaks, leaks
    assert len(canary_run["canary"].secrets) > 90 and len(canary_run["texts"]) > 40


def test_every_command_ran(canary_run):
    codes, streams = dict(canary_run["codes"]), dict(canary_run["texts"])
    failed = {name: (code, streams[f"{name} stderr"][-3000:]) for name, code in codes.items() if code != 0}
    assert failed.pop("crash")[0] == 4 and not failed, failed
    assert canary_run["webhooks"] == 1


def test_each_planted_place_reached_an_output_masked(canary_run):
    """The secrets were masked, not dropped: where a planted line shows, its secret shows as ******."""
    canary = canary_run["canary"]
    everything = "\n".join(text for _, text in canary_run["texts"])
    missing = [p for p, before in canary.context.items() if before and f"{before}******" not in everything]
    assert not missing, missing


def test_every_sensitive_setting_is_audited_masked_from_both_files(canary_run):
    """The 1.x flat and the 2.x nested file were both read: each key Flink masks is in the audit, its value and
    every earlier value masked."""
    from canaries import FLINK_KEYS

    report = json.loads(dict(canary_run["texts"])["diagnose json stdout"])
    settings = {s["key"]: s for s in report["config_audit"]["settings"]}
    for key in FLINK_KEYS.values():
        setting = settings[key]
        assert setting["value"] == "******", setting
        places = [setting["source"], *setting["overridden"]]
        assert any("flink-conf.yaml" in p for p in places) and any("config.yaml = ******" in p for p in places), setting
        assert all(p.endswith("= ******") for p in setting["overridden"]), setting


# -- a sensitive key's value is masked whole, whatever its shape --------------------------------------------------


def test_a_sensitive_keys_value_is_masked_whole_in_any_shape():
    """A value under a sensitive key was masked only when it was one string or number: a list of tokens, a
    mapping of credentials or raw bytes under it left whole (as a REST answer or a parsed configuration may hold
    them). Now each string, number and bytes in it is masked, its shape kept; unset, off and empty stay shown."""
    import collections
    import dataclasses
    import decimal
    import types

    from flinkdoctor.safety.masking import MASK, scrub

    @dataclasses.dataclass
    class Login:
        user: str
        secret: str

    answer = {
        "token": ["Tk-Canary-1", "Tk-Canary-2"],
        "credentials": {"user": "svc", "secret": "Sc-Canary-3", "port": 5432},
        "passwords": ("Pw-Canary-4",),
        "api-key": b"Ak-Canary-5",
        "tokens": collections.deque(["Tk-Canary-6"], maxlen=3),
        "token-set": {"Tk-Canary-13"},
        "password-ratio": 1.5,
        "secret-amount": decimal.Decimal("4713.5"),
        "secrets": types.MappingProxyType({"a": "Sc-Canary-14"}),
        "credential": Login("svc-user", "Pw-Canary-15"),
        "password": None,
        "secret-set": False,
        "token-empty": "",
        "name": "job",
    }
    done = scrub(answer)
    assert "Canary" not in repr(done) and "svc" not in repr(done)
    assert done["token"] == [MASK, MASK] and done["passwords"] == (MASK,) and done["api-key"] == MASK.encode()
    assert done["credentials"] == {"user": MASK, "secret": MASK, "port": MASK}
    assert done["tokens"].maxlen == 3 and list(done["tokens"]) == [MASK]
    assert (done["password"], done["secret-set"], done["token-empty"], done["name"]) == (None, False, "", "job")
    assert (done["token-set"], done["password-ratio"], done["secret-amount"]) == ({MASK}, MASK, MASK)
    assert done["secrets"] == {"a": MASK} and done["credential"] == Login(MASK, MASK)
    record = scrub({"key": "s3.secret-key", "value": ["Sk-Canary-7"], "default": {"a": "Sk-Canary-8"}})
    assert record == {"key": "s3.secret-key", "value": [MASK], "default": {"a": MASK}}


def test_a_counter_keeps_its_counts_and_an_ordered_dict_its_items_when_masked():
    """A Counter that needed masking came back counting its (key, count) pairs as new keys; the first fix of it
    (dict.update) gave an OrderedDict back that iterated as empty (review14a)."""
    import collections
    import json

    from flinkdoctor.safety.masking import scrub

    seen = collections.Counter({"connect to jdbc:mysql://svc:Pw-Canary-9@db/x": 2, "plain": 3})
    done = scrub(seen)
    assert type(done) is collections.Counter and "Pw-Canary-9" not in repr(done)
    assert done == collections.Counter({"connect to jdbc:mysql://svc:******@db/x": 2, "plain": 3})
    ordered = scrub(collections.OrderedDict([("b", "x"), ("a", "password=Pw-Canary-10")]))
    assert type(ordered) is collections.OrderedDict and list(ordered.items()) == [("b", "x"), ("a", "password=******")]
    assert json.dumps(ordered) == '{"b": "x", "a": "password=******"}'


def test_a_records_field_of_a_sensitive_name_is_masked_whole():
    """A record (a dataclass) whose field name is sensitive is masked by that name, as a mapping's key is; a
    record with no such name has each value masked as itself (scrub's quicker way for a report's records)."""
    import dataclasses

    from flinkdoctor.safety.masking import MASK, scrub

    @dataclasses.dataclass
    class Login:
        user: str
        password: str
        tokens: list

    @dataclasses.dataclass
    class Plain:
        text: str
        count: int

    assert scrub(Login("svc", "Pw-Canary-10", ["Tk-Canary-11"])) == Login("svc", MASK, [MASK])
    plain = Plain("jdbc:mysql://svc:Pw-Canary-12@db/x", 3)
    assert scrub(plain) == Plain("jdbc:mysql://svc:******@db/x", 3)
    clean = Plain("text", 3)
    assert scrub(clean) is clean


def test_named_tuples_later_fields_and_user_sequences_are_masked_as_their_kind():
    """Three shapes scrub passed over: a named tuple's field names did not decide about its values (a mapping's
    keys and a record's names do), a record's init=False fields were never looked at (replace cannot set them), and
    a UserList is neither a list nor a Mapping, a UserString not a str."""
    import collections
    import dataclasses

    from flinkdoctor.safety.masking import MASK, scrub

    Login = collections.namedtuple("Login", "user password")
    Setting = collections.namedtuple("Setting", "key value")
    assert scrub(Login("svc", "Pw-Canary-16")) == Login("svc", MASK)
    assert scrub(Setting("s3.secret-key", "Sk-Canary-17")) == Setting("s3.secret-key", MASK)
    clean = Login("svc", None)
    assert scrub(clean) is clean

    @dataclasses.dataclass(frozen=True)
    class Connection:
        url: str
        password: str = dataclasses.field(init=False, default="")
        said: str = dataclasses.field(init=False)

        def __post_init__(self) -> None:
            object.__setattr__(self, "password", "Pw-Canary-18")

    connection = Connection("db:5432")
    object.__setattr__(connection, "said", "connect with password=Pw-Canary-19")
    done = scrub(connection)
    assert (done.url, done.password, done.said) == ("db:5432", MASK, "connect with password=******")
    assert "Canary" not in repr(scrub({"token": connection})) and connection.password == "Pw-Canary-18"
    unset = Connection("jdbc:mysql://svc:Pw-Canary-20@db/x")  # `said` has no value yet: nothing to mask there
    assert scrub(unset).url == "jdbc:mysql://svc:******@db/x" and not hasattr(scrub(unset), "said")

    @dataclasses.dataclass
    class Line:  # no sensitive name: scrub's quicker way for plain records
        text: str
        said: str = dataclasses.field(init=False, default="")

    line = Line("plain")
    line.said = "connect with password=Pw-Canary-23"
    assert scrub(line).said == "connect with password=******" and scrub(Line("plain")) == Line("plain")

    line = Line("password=Pw-Canary-24")  # an init field changed: replace makes `said` anew, its value kept
    line.said = "a note"
    assert (scrub(line).text, scrub(line).said) == ("password=******", "a note")

    @dataclasses.dataclass
    class Notes:
        url: str
        notes: list = dataclasses.field(init=False, default_factory=list)

    noted = Notes("jdbc:mysql://svc:Pw-Canary-25@db/x")
    noted.notes.append("a clean note")
    assert scrub(noted).notes == ["a clean note"] and "Canary" not in repr(scrub(noted))
    assert scrub({"password": Login("svc", "x")}) == {"password": Login(MASK, MASK)}  # under a key: all of it

    class Said(collections.UserList):
        def __init__(self, source: str, lines: list) -> None:
            super().__init__(lines)
            self.source = source

    said_by = scrub(Said("tm-1", ["password=Pw-Canary-26"]))
    assert (type(said_by), said_by.source, list(said_by)) == (Said, "tm-1", ["password=******"])

    said = collections.UserList(["password=Pw-Canary-21", "plain"])
    assert scrub(said) == collections.UserList(["password=******", "plain"]) and type(scrub(said)) is type(said)
    assert scrub({"tokens": collections.UserList(["Tk-Canary-22"])})["tokens"] == collections.UserList([MASK])

    class Line(collections.UserString):
        def __init__(self, source: str, text: str) -> None:
            super().__init__(text)
            self.source = source

    line = scrub(Line("tm-2", "password=Pw-Canary-27"))
    assert (type(line), line.source, line.data) == (Line, "tm-2", "password=******")
    plain = Line("tm-3", "no secret here")
    assert scrub(plain) is plain
    assert scrub({"token": collections.UserString("Tk-Canary-28")})["token"] == collections.UserString(MASK)
    assert scrub({"token": collections.UserString("")})["token"] == collections.UserString("")  # unset: shown
    assert scrub({collections.UserString("password"): "Pw-Canary-29"}) == {collections.UserString("password"): MASK}
    setting = {"key": collections.UserString("s3.secret-key"), "value": "Sk-Canary-30"}
    assert scrub(setting)["value"] == MASK
