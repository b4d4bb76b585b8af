"""The fault lab is a package of its own (lab/, `flinkdoctor_lab`): the product neither ships nor imports it,
the catalogue is checked before any cluster starts, and the lab's CLI fails with one line, not a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import flinkdoctor

pytest.importorskip("flinkdoctor_lab", reason="the fault lab (lab/) is not installed")

from flinkdoctor_lab import LabError  # noqa: E402
from flinkdoctor_lab.cli import main  # noqa: E402
from flinkdoctor_lab.scenarios.catalogue import CATALOGUE, load_catalogue  # noqa: E402


def test_product_package_holds_no_lab():
    product = Path(flinkdoctor.__file__).parent
    assert not (product / "lab").exists()
    assert not list(product.rglob("*.java"))


def test_product_does_not_import_the_lab():
    code = (
        "import sys, flinkdoctor, flinkdoctor.cli; "
        "print(sorted(m for m in sys.modules if m.startswith(('flinkdoctor_lab', 'flinkdoctor.lab'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_lab_ships_its_jobs_and_catalogue():
    import flinkdoctor_lab

    package = Path(flinkdoctor_lab.__file__).parent
    assert {p.name for p in (package / "jobs").glob("*.java")} >= {
        "LabJob.java",
        "CodeJob.java",
        "StateJob.java",
    }
    assert CATALOGUE.parent.parent == package


def test_catalogue_scenario_config(tmp_path):
    """Base config, a scenario's own keys on top of it, the run folder substituted, the setup step run."""
    scenario = load_catalogue()["rocksdb-local-dir-unusable"]
    config = scenario.cluster_config(tmp_path)
    assert config["execution.checkpointing.dir"] == f"file://{tmp_path}/tmp/checkpoints"
    assert config["state.backend.type"] == "rocksdb"  # the scenario's own value wins over base_config
    assert config["state.backend.rocksdb.localdir"] == f"{tmp_path}/tmp/disk1/flink-rocksdb"
    assert config["restart-strategy.fixed-delay.attempts"] == 1
    scenario.setup(tmp_path)
    assert (tmp_path / "tmp" / "disk1").is_file()
    assert scenario.job_class == "flinkdoctor.lab.StateJob"


BROKEN = """
base_config: {restart-strategy.type: fixed-delay}
scenarios:
  - name: typo-step
    summary: s
    job_args: --rate 1
    inject: until_faild
    expect: [x]
  - name: bad-params
    summary: s
    job_args: --rate 1
    inject: {freeze: {role: taskmanager}}
    expect: [x]
  - name: bad-regex
    summary: s
    job_args: --rate 1
    inject: healthy
    expect: [{taskexecutor: 'Heartbeat of (TaskManager'}]
  - name: extra-field
    summary: s
    job_args: --rate 1
    inject: healthy
    expect: [x]
    zookeper: true
"""


def test_broken_catalogue_lists_every_problem(tmp_path):
    path = tmp_path / "catalogue.yaml"
    path.write_text(BROKEN)
    with pytest.raises(LabError) as e:
        load_catalogue(path)
    message = str(e.value)
    assert "typo-step: inject: unknown step 'until_faild'" in message
    assert "bad-params: inject: freeze(run, role: 'str', seconds: 'float')" in message
    assert "missing a required argument: 'seconds'" in message
    assert "bad-regex: expect: 'Heartbeat of (TaskManager' does not compile" in message
    assert "extra-field: unknown field `zookeper`" in message


def test_unknown_top_level_key_is_an_error(tmp_path):
    path = tmp_path / "catalogue.yaml"
    path.write_text(BROKEN.replace("base_config:", "base_confg:"))
    with pytest.raises(LabError, match="unknown top-level key.*base_confg"):
        load_catalogue(path)


def test_duplicate_key_is_an_error(tmp_path):
    path = tmp_path / "catalogue.yaml"
    path.write_text(BROKEN.replace("    summary: s\n", "    summary: s\n    summary: t\n", 1))
    with pytest.raises(LabError, match="duplicate key 'summary'"):
        load_catalogue(path)


@pytest.mark.parametrize(
    "argv, code, words",
    [
        (["run", "no-such-scenario"], 2, "unknown scenario no-such-scenario"),
        (["run"], 2, "name a scenario or use --all"),
        (["no-such-command"], 2, "No such command"),
    ],
)
def test_cli_errors_are_one_line(capsys, argv, code, words):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == code
    assert err.startswith("flinkdoctor-lab: error: ") and words in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_cli_list_names_every_scenario(capsys):
    with pytest.raises(SystemExit) as e:
        main(["list"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert all(name[:20] in out for name in load_catalogue())
