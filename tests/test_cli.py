"""The command line as a user runs it: JSON contract on stdout only, exit codes, rule commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources

import jsonschema
import pytest

from conftest import DATA

EXE = [sys.executable, "-m", "flinkdoctor"]


def run(*args, **kwargs):
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.run([*EXE, *args], capture_output=True, text=True, env=env, timeout=600, **kwargs)


@pytest.fixture(scope="module")
def json_run():
    return run("diagnose", str(DATA / "seeds" / "003"), "--format", "json", "--fail-on", "host-stall")


@pytest.mark.spark  # starts Spark in a subprocess
def test_json_on_stdout_is_the_contract(json_run):
    assert json_run.returncode == 1, json_run.stderr[-2000:]  # --fail-on matched
    report = json.loads(json_run.stdout)  # nothing but JSON on stdout
    schema = json.loads(resources.files("flinkdoctor").joinpath("schemas/report.schema.json").read_text())
    jsonschema.validate(report, schema)
    assert report["root_causes"][0]["category"] == "host-stall"


def test_report_contract_holds_for_every_seed(diagnose_bundle):
    schema = json.loads(resources.files("flinkdoctor").joinpath("schemas/report.schema.json").read_text())
    for seed in sorted((DATA / "seeds").iterdir()):
        jsonschema.validate(diagnose_bundle(seed), schema)


def test_missing_input_exits_3():
    result = run("diagnose", "/nonexistent/bundle")
    assert result.returncode == 3 and "no such file" in result.stderr


def test_usage_error_exits_2():
    assert run("diagnose").returncode == 2


def test_no_server_running_is_a_check_that_said_no(tmp_path):
    """Exit 1 is only ever a check the user asked for that said no (errors.py): here, no server runs."""
    env = {**os.environ, "FLINKDOCTOR_STATE_DIR": str(tmp_path)}
    result = subprocess.run([*EXE, "server", "status"], capture_output=True, text=True, env=env, timeout=600)
    assert (result.returncode, result.stdout, result.stderr) == (1, "not running\n", "")


def test_html_file_in_a_missing_folder_is_a_usage_error_before_spark(tmp_path):
    result = run("diagnose", str(DATA / "seeds" / "004"), "--html", str(tmp_path / "nowhere" / "report.html"))
    assert result.returncode == 2 and "--html" in result.stderr and "Spark" not in result.stderr


def test_an_unreadable_token_file_is_a_usage_error(tmp_path):
    token = tmp_path / "token"
    token.write_bytes(b"\xff\xfe not utf-8 \xc3")
    result = run("collect", "--rest", "http://127.0.0.1:9", "--token-file", str(token))
    assert result.returncode == 2 and "--token-file" in result.stderr


def test_bad_user_rule_fails_before_spark_with_location(tmp_path):
    (tmp_path / "mine.yaml").write_text("id: mine\ntitle: x\n")
    result = run("diagnose", str(DATA / "seeds" / "004"), "--rules", str(tmp_path))
    assert result.returncode == 2
    assert "mine.yaml:1:" in result.stderr
    assert "SparkContext" not in result.stderr and "Spark" not in result.stderr


def test_rules_list_json():
    result = run("rules", "list", "--format", "json")
    rows = json.loads(result.stdout)
    assert {"id", "category", "role", "cases"} <= set(rows[0])
    assert any(r["id"] == "kernel-soft-lockup" and r["cases"] >= 2 for r in rows)


def test_rules_show_prints_fix_and_references():
    result = run("rules", "show", "hdfs-close-interrupted")
    assert result.returncode == 0
    assert "hdfs debug recoverLease" in result.stdout and "references:" in result.stdout


def test_user_rules_folder_adds_a_signature(spark, tmp_path):
    """A user's own rule, no Python: it matches the seed's GC-free ZooKeeper line and shows as a finding."""
    (tmp_path / "zk-recovering-checkpoints.yaml").write_text("""\
id: zk-recovering-checkpoints
title: Checkpoints recovered from ZooKeeper
category: other
role: context
match:
  - message: 'Recovering checkpoints from ZooKeeper'
explanation: The job restarted and reads its completed checkpoints back from ZooKeeper.
references: [local]
cases:
  - source: seeds/003
    match: |
      [INFO ] 2019-04-23 17:39:19,756(437903668) --> [jobmanager-future-thread-20] org.apache.flink.runtime.checkpoint.ZooKeeperCompletedCheckpointStore.recover(ZooKeeperCompletedCheckpointStore.java:150): Recovering checkpoints from ZooKeeper.  
  - source: seeds/003
    no_match: |
      [INFO ] 2019-04-23 17:39:19,857(437903769) --> [main-EventThread] org.apache.flink.shaded.curator.org.apache.curator.framework.state.ConnectionStateManager.postState(ConnectionStateManager.java:228): State change: SUSPENDED  
""")
    from flinkdoctor.knowledge.rulebook import load_rules

    rules = load_rules([tmp_path])
    from flinkdoctor.pipeline import diagnose

    report = diagnose([DATA / "seeds" / "003"], spark=spark, rules=rules, work_dir=tmp_path / "work").to_dict()
    assert any(f["rule"] == "zk-recovering-checkpoints" for f in report["findings"])
    assert report["root_causes"][0]["rule"] == "kernel-soft-lockup"
    result = run("rules", "test", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert "2 passed, 0 failed" in result.stdout


POOL_PROBE = """
import os, sys
from flinkdoctor.cli import ARROW_POOL, _system_arrow_pool
_system_arrow_pool()
import pyarrow
print(pyarrow.default_memory_pool().backend_name, os.environ.get(ARROW_POOL))
"""


@pytest.mark.unit
@pytest.mark.parametrize(("given", "printed"), [(None, "system None"), ("mimalloc", "mimalloc mimalloc")])
def test_the_drivers_arrow_pool_is_the_systems_unless_the_user_chose_one(given, printed):
    """The driver's Arrow allocator is the C library's (freed pages go back), and the variable is unset again so
    that the Spark workers it starts keep Arrow's own; a user's own choice stays, in the driver and the workers."""
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    env |= {"ARROW_DEFAULT_MEMORY_POOL": given} if given else {}
    done = subprocess.run([sys.executable, "-c", POOL_PROBE], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.split() == printed.split()


def _commands(command, path=()):
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


def _exit_code(args) -> int:
    """main's exit code: what it exits with, 0 when it returns (as the process then does)."""
    from flinkdoctor.cli import main

    try:
        main(args)
    except SystemExit as done:
        return 0 if done.code is None else int(done.code)
    return 0


def test_every_commands_help_and_the_version_are_clicks_own_text(capsys):
    """flinkdoctor writes `--help` and `--version` itself (outbound, for their exit codes on a failing stdout):
    the text is still click's, exit 0, and a usage error still points at the help."""
    from importlib.metadata import version

    import click

    from flinkdoctor.cli import cli

    prog = click.utils._detect_program_name()  # (in process: pytest's; `python -m flinkdoctor` in a shell)
    for path, command in _commands(cli):
        code = _exit_code([*path, "--help"])
        context = click.Context(cli, info_name=prog)
        node = cli
        for name in path:
            node = node.commands[name]
            context = click.Context(node, info_name=name, parent=context)
        assert (code, capsys.readouterr().out) == (0, command.get_help(context) + "\n"), path
    printed = f"{prog}, version {version('flinkdoctor')}\n"
    assert (_exit_code(["--version"]), capsys.readouterr().out) == (0, printed)
    assert _exit_code(["diagnose", "--format", "nope", "x"]) == 2
    assert f"Try '{prog} diagnose --help' for help." in capsys.readouterr().err


def test_a_failed_rules_test_case_is_a_check_that_said_no(monkeypatch, capsys):
    from types import SimpleNamespace

    import flinkdoctor.cases
    import flinkdoctor.runtime.spark

    failed = SimpleNamespace(passed=False, name="case 1", source="x.yaml", expect_match=True, text="a line")
    for results, code in (([failed], 1), ([SimpleNamespace(passed=True)], 0)):
        monkeypatch.setattr(flinkdoctor.runtime.spark, "spark_session", lambda: None)
        monkeypatch.setattr(flinkdoctor.cases, "run_cases", lambda spark, chosen, results=results: results)
        assert _exit_code(["rules", "test"]) == code and f"{code} failed" in capsys.readouterr().out
