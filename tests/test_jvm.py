"""Spark's JVM started with a class archive: the first local run writes it at exit, later runs map it, and only
a whole archive is ever mapped (a part-written one would crash the JVM)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import DATA
from flinkdoctor.runtime import jvm

SEED = DATA / "seeds" / "000"


def test_options_and_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("FLINKDOCTOR_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("FLINKDOCTOR_JVM_ARCHIVE", "0")
    # every session: a heap that does not grow with the input, the JIT's quick tier only
    serial = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
    assert jvm.java_options("3g") == serial
    monkeypatch.setenv("FLINKDOCTOR_JVM_ARCHIVE", "1")
    monkeypatch.setattr(jvm, "_start_writing", lambda key: tmp_path / "writing")
    assert jvm.java_options("3g") == f"{serial} -XX:ArchiveClassesAtExit={tmp_path / 'writing'}"
    key = jvm._key("3g")
    folder = tmp_path / "flinkdoctor"
    folder.mkdir()
    (folder / f"jvm-{key}-99.jsa").write_bytes(b"x" * 50)  # cut short: its name says 99 bytes
    assert jvm.java_options("3g").startswith(f"{serial} -XX:ArchiveClassesAtExit=")
    (folder / f"jvm-{key}-50.jsa").write_bytes(b"x" * 50)
    assert jvm.java_options("3g") == f"{serial} -XX:SharedArchiveFile={folder / f'jvm-{key}-50.jsa'}"
    assert jvm._key("3g") != jvm._key("8g")  # another heap size, another archive
    os.chmod(folder / f"jvm-{key}-50.jsa", 0o666)  # others could have written it: never mapped
    assert jvm.java_options("3g").startswith(f"{serial} -XX:ArchiveClassesAtExit=")


def test_no_archive_in_a_folder_spark_would_split(tmp_path, monkeypatch):
    monkeypatch.setenv("FLINKDOCTOR_STATE_DIR", str(tmp_path / "my state"))
    monkeypatch.setenv("FLINKDOCTOR_JVM_ARCHIVE", "1")
    assert jvm.java_options("3g") == "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


@pytest.mark.spark  # starts Spark in a subprocess
def test_a_jvm_that_refuses_the_options_is_started_without_them(tmp_path):
    """Options the JVM does not know make it exit at once: the session is started again without them."""
    code = (
        "import flinkdoctor.runtime.jvm as jvm\n"
        "jvm.java_options = lambda memory: '-XX:+NoSuchOptionInAnyJvm'\n"
        "from flinkdoctor.runtime.spark import spark_session\n"
        "print(spark_session().range(3).count())\n"
    )
    env = {**os.environ, "FLINKDOCTOR_STATE_DIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "3", run.stderr[-2000:]


@pytest.mark.spark  # starts Spark in a subprocess
def test_the_first_run_writes_the_archive_and_the_next_maps_it(tmp_path):
    env = {**os.environ, "FLINKDOCTOR_STATE_DIR": str(tmp_path), "FLINKDOCTOR_JVM_ARCHIVE": "1"}
    answers = []
    for n in range(2):
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "flinkdoctor",
                "diagnose",
                str(SEED),
                "--format",
                "json",
                "--work-dir",
                str(tmp_path / f"work{n}"),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode in (0, 1) and "Traceback" not in run.stderr, run.stderr[-2000:]
        answers.append([root["rule"] for root in json.loads(run.stdout)["root_causes"]])
        (archive,) = (tmp_path / "flinkdoctor").glob("jvm-*.jsa")
        assert archive.stat().st_size == int(archive.stem.rsplit("-", 1)[1]) > 10_000_000
        assert not list((tmp_path / "flinkdoctor").glob("_jvm-*"))  # nothing half-written left
    assert answers[0] == answers[1] == ["checkpoint-storage-slow-write"]


def test_no_collector_of_ours_where_the_environment_chooses_one(tmp_path, monkeypatch):
    """The JVM refuses to start with two collectors: one chosen in JAVA_TOOL_OPTIONS (or its kin) is left alone."""
    monkeypatch.setenv("FLINKDOCTOR_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("FLINKDOCTOR_JVM_ARCHIVE", "0")
    for name in ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS"):
        monkeypatch.setenv(name, "-Xss4m")
        assert jvm.java_options("3g") == "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
        monkeypatch.setenv(name, "-Xss4m -XX:+UseG1GC")
        assert jvm.java_options("3g") == "-XX:TieredStopAtLevel=1"
        monkeypatch.delenv(name)


def test_the_users_own_driver_options_are_not_replaced(tmp_path, monkeypatch):
    """Options of ours would replace the user's own from spark-defaults.conf or spark-submit's arguments."""
    from flinkdoctor.runtime import spark

    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    assert not spark._users_java_options()  # no spark-defaults.conf
    (tmp_path / "spark-defaults.conf").write_text("# spark.driver.extraJavaOptions -XX:+UseZGC\nspark.master local\n")
    assert not spark._users_java_options()
    (tmp_path / "spark-defaults.conf").write_text("spark.master local\nspark.driver.extraJavaOptions  -XX:+UseZGC\n")
    assert spark._users_java_options()
    (tmp_path / "spark-defaults.conf").unlink()
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-java-options -Xss4m pyspark-shell")
    assert spark._users_java_options()
