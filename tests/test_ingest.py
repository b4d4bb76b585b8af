"""Ingest: YARN aggregated logs, archives, unsafe archives, hostile files; every line accounted for."""

from __future__ import annotations

import gzip
import io
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DATA, line_at
from flinkdoctor.errors import InputError
from flinkdoctor.sources.ingest import ingest

SEED3 = DATA / "seeds" / "003"


def true_lines(data: bytes) -> int:
    """A line is what ends in \\n; a last line without one counts too."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def yarn_block(container: str, host: str, logtype: str, content: bytes, hadoop3: bool) -> bytes:
    """`yarn logs -applicationId` framing around a container's file (Hadoop 3 / Hadoop 2 spellings)."""
    if hadoop3:
        head = (
            f"Container: {container} on {host}_45454\nLogAggregationType: AGGREGATED\n"
            f"{'=' * 68}\nLogType:{logtype}\nLogLastModifiedTime:Tue Apr 23 17:40:00 +0800 2019\n"
            f"LogLength:{len(content)}\nLogContents:\n"
        ).encode()
        return head + content + f"\nEnd of LogType:{logtype}\n{'*' * 88}\n\n".encode()
    head = (
        f"Container: {container} on {host}_45454\n{'=' * 68}\nLogType:{logtype}\n"
        f"Log Upload Time:Tue Apr 23 17:40:00 +0800 2019\nLogLength:{len(content)}\nLog Contents:\n"
    ).encode()
    return head + content + b"\n"


@pytest.mark.parametrize("hadoop3", [True, False], ids=["hadoop3", "hadoop2"])
def test_yarn_aggregated_log_is_split_per_container(diagnose_bundle, tmp_path, hadoop3):
    jm = (SEED3 / "jobmanager.log").read_bytes()
    tm = (SEED3 / "taskmanager.log").read_bytes()
    data = yarn_block(
        "container_1550743644028_2661_03_000001", "hadoop-080-037", "jobmanager.log", jm, hadoop3
    ) + yarn_block("container_1550743644028_2661_03_000008", "hadoop-081-159", "taskmanager.log", tm, hadoop3)
    path = tmp_path / "application_1550743644028_2661.log"
    path.write_bytes(data)
    report = diagnose_bundle(path)
    sources = report["input"]["sources"]
    logs = {s["container"]: s for s in sources if s["kind"].startswith("flink-")}
    assert logs["container_1550743644028_2661_03_000001"]["kind"] == "flink-jobmanager"
    assert logs["container_1550743644028_2661_03_000001"]["host"] == "hadoop-080-037"
    assert logs["container_1550743644028_2661_03_000008"]["kind"] == "flink-taskmanager"
    assert report["input"]["lines"] == true_lines(data)
    assert report["input"]["lines"] == report["input"]["lines_in_events"] + report["input"]["lines_unparsed"]
    top = report["root_causes"][0]
    assert top["category"] == "zookeeper-connectivity"  # no kernel log in this bundle
    for step in top["evidence"] + top["chain"]:  # file:line point into the aggregated file itself
        assert step["file"] == path.name
        assert line_at(path, step["line"]).rstrip() == step["text"]


def _archive(kind: str, target: Path, files: dict[str, bytes]) -> Path:
    if kind == "zip":
        with zipfile.ZipFile(target, "w") as archive:
            for name, data in files.items():
                archive.writestr(name, data)
    else:
        with tarfile.open(target, "w:gz") as archive:
            for name, data in files.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return target


@pytest.mark.parametrize("suffix", [".tar.gz", ".tgz", ".zip"])
def test_archives_give_the_same_diagnosis_as_the_folder(diagnose_bundle, tmp_path, suffix):
    files = {f"incident/{p.name}": p.read_bytes() for p in sorted(SEED3.iterdir())}
    archive = _archive("zip" if suffix == ".zip" else "tar", tmp_path / f"bundle{suffix}", files)
    report = diagnose_bundle(archive)
    folder = diagnose_bundle(SEED3)
    assert report["input"]["lines"] == folder["input"]["lines"]
    assert report["root_causes"][0]["rule"] == folder["root_causes"][0]["rule"] == "kernel-soft-lockup"
    assert report["root_causes"][0]["evidence"][0]["file"] == "incident/messages"


def test_gzip_single_file(diagnose_bundle, tmp_path):
    target = tmp_path / "taskmanager.log.gz"
    target.write_bytes(gzip.compress((DATA / "seeds" / "004" / "taskmanager.log").read_bytes()))
    report = diagnose_bundle(target)
    assert report["root_causes"][0]["category"] == "zookeeper-connectivity"
    assert report["input"]["lines"] == true_lines((DATA / "seeds" / "004" / "taskmanager.log").read_bytes())


@pytest.mark.parametrize("member", ["../escape.log", "/abs/escape.log", "a/../../escape.log"])
@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_path_traversal_archive_is_refused(tmp_path, member, kind):
    archive = _archive(kind, tmp_path / ("evil.zip" if kind == "zip" else "evil.tar.gz"), {member: b"x\n"})
    with pytest.raises(InputError, match="outside the bundle|refusing"):
        ingest([archive], tmp_path / "work")
    assert not (tmp_path / "escape.log").exists()


def test_link_out_of_the_bundle_is_refused(tmp_path):
    target = tmp_path / "links.tar.gz"
    with tarfile.open(target, "w:gz") as archive:
        info = tarfile.TarInfo("logs/passwd")
        info.type, info.linkname = tarfile.SYMTYPE, "../../../etc/passwd"
        archive.addfile(info)
    with pytest.raises(InputError):
        ingest([target], tmp_path / "work")


def test_archive_size_limit(tmp_path):
    archive = _archive("tar", tmp_path / "big.tar.gz", {"big.log": b"x" * 10_000})
    with pytest.raises(InputError, match="over the limit"):
        ingest([archive], tmp_path / "work", max_unpacked=1000)


def test_hostile_files_are_all_accounted_for(diagnose_bundle, tmp_path):
    bundle = tmp_path / "hostile"
    bundle.mkdir()
    seed = (DATA / "seeds" / "004" / "taskmanager.log").read_bytes()
    files = {
        "binary.bin": bytes(range(256)) * 64 + b"\n\x00\x01\n" * 10,
        "gbk.log": "2020-10-16 17:05:05,939 WARN 中文日志 - 会话超时\n".encode("gbk") * 3 + seed[:400],
        "crlf.log": seed.replace(b"\n", b"\r\n"),
        "long-line.log": seed.split(b"\n")[0] + b" " + b"y" * 1_000_000 + b"\n" + seed,
        "no-final-newline.log": seed.rstrip(b"\n"),
        "empty.log": b"",
    }
    for name, data in files.items():
        (bundle / name).write_bytes(data)
    report = diagnose_bundle(bundle)
    counts = report["input"]
    by_path = {s["path"]: s for s in counts["sources"]}
    for name, data in files.items():
        assert by_path[name]["lines"] == true_lines(data), name
    assert by_path["binary.bin"]["unparsed"] == true_lines(files["binary.bin"])
    assert counts["lines"] == sum(true_lines(d) for d in files.values())
    assert counts["lines"] == counts["lines_in_events"] + counts["lines_unparsed"]
    # the CRLF copy is read like the original: same ZooKeeper diagnosis, no stray \r in evidence
    crlf = [ev for root in report["root_causes"] for ev in root["evidence"] if ev["file"] == "crlf.log"]
    assert report["root_causes"][0]["category"] == "zookeeper-connectivity"
    assert all(not ev["text"].endswith("\r") for ev in crlf)


def test_file_names_carry_no_meaning(diagnose_bundle, tmp_path):
    bundle = tmp_path / "renamed"
    bundle.mkdir()
    for source, name in (
        ("messages", "a.log"),
        ("jobmanager.log", "b.txt"),
        ("taskmanager.log", "messages"),
        ("jstack-taskmanager.txt", "c"),
    ):
        shutil.copy(SEED3 / source, bundle / name)
    report = diagnose_bundle(bundle)
    kinds = {s["path"]: s["kind"] for s in report["input"]["sources"]}
    assert kinds["a.log"] == "kernel" and kinds["b.txt"] == "flink-jobmanager"
    assert kinds["messages"] == "flink-taskmanager"
    assert report["root_causes"][0]["rule"] == "kernel-soft-lockup"


def test_missing_path_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        ingest([tmp_path / "nope"], tmp_path / "work")


def test_a_reused_work_dir_stages_the_new_input(tmp_path):
    """A second run with the same --work-dir must read its own files, not the links and members the first left."""
    work = tmp_path / "work"
    first, second = tmp_path / "first", tmp_path / "second"
    for bundle, lines in ((first, 3), (second, 5)):
        bundle.mkdir()
        src = DATA / "seeds" / "003" / "taskmanager.log"
        (bundle / "taskmanager.log").write_text("".join(src.read_text().splitlines(True)[:lines]))
    ingest([first], work)
    manifest = ingest([second], work)
    staged = [Path(s.staged) for s in manifest.text_sources]
    assert [len(p.read_text().splitlines()) for p in staged] == [5]
    assert staged == [(second / "taskmanager.log").absolute()]  # read in place: the first run's files are not
    assert not any((work / "sources").iterdir())  # its staged copies gone, none made for plain text


def _shown_back(name: str) -> str:
    """The name `staging.shown` showed (its inverse): \\\\ a backslash, \\xNN a byte that is not UTF-8,
    \\uNNNN another lone surrogate."""
    import re

    escapes = {
        "\\": lambda hex_: "\\",
        "x": lambda hex_: chr(0xDC00 + int(hex_, 16)),
        "u": lambda hex_: chr(int(hex_, 16)),
    }
    return re.sub(
        r"\\(\\|x([0-9a-f]{2})|u([0-9a-f]{4}))",
        lambda m: escapes[m.group(1)[0]](m.group(2) or m.group(3) or ""),
        name,
    )


@given(st.text(alphabet=["a", "é", "日", "/", "\\", "x", "u", "e", "9", "\udce9", "\udcff", "\ud800"], max_size=12))
@settings(max_examples=400, deadline=None)
def test_a_name_is_shown_one_way_and_read_back(name):
    """Evidence file:line names one file: `shown` is one-to-one (its inverse gives the name back), so a name that
    holds the text `\\xe9` is never shown as the one whose byte is 0xE9, nor a lone surrogate as a `?` another
    name holds; and what it shows is valid UTF-8 text."""
    from flinkdoctor.sources.staging import shown

    text = shown(name)
    text.encode("utf-8")
    assert _shown_back(text) == name


def test_names_are_shown_as_before_but_for_what_made_two_inputs_one():
    from flinkdoctor.sources.staging import shown

    assert shown("taskmanager-日志.log") == "taskmanager-日志.log" and shown("plain.log") == "plain.log"
    assert shown("taskmanager-\udce9.log") == "taskmanager-\\xe9.log" != shown("taskmanager-\\xe9.log")
    assert shown("a\ud800") != shown("a?") and shown("C:\\logs\\x.log") == "C:\\\\logs\\\\x.log"


def test_several_inputs_of_one_name_are_each_shown_by_their_own_path(tmp_path, monkeypatch):
    """`diagnose host-1/taskmanager.log host-2/taskmanager.log`: each source named by as many of its folders as
    tell the inputs apart, never both `taskmanager.log` (evidence at taskmanager.log:12 would name either);
    inputs of distinct names keep their own name; an input given twice is read once; a folder whose name is not
    UTF-8 is shown the same way in its sources and in what was skipped in it."""
    import os

    log = (DATA / "seeds" / "004" / "taskmanager.log").read_bytes()
    for host in ("host-1", "host-2"):
        (tmp_path / host).mkdir()
        (tmp_path / host / "taskmanager.log").write_bytes(log)
    (tmp_path / "host-2" / "jobmanager.log").write_bytes(log)
    odd = os.path.join(os.fsencode(tmp_path), "host-\xe9".encode("latin-1"))
    os.mkdir(odd)
    with open(os.path.join(odd, b"taskmanager.log"), "wb") as handle:
        handle.write(log)
    os.symlink(b"nowhere", os.path.join(odd, b"gone.log"))
    inputs = [tmp_path / "host-1" / "taskmanager.log", tmp_path / "host-2" / "taskmanager.log"]
    inputs += [tmp_path / "host-2" / "jobmanager.log", inputs[0], Path(os.fsdecode(odd))]
    monkeypatch.chdir(tmp_path)
    inputs.append(Path("./host-1/taskmanager.log"))  # the first again, as a relative path
    manifest = ingest(inputs, tmp_path / "work")
    assert [s.path for s in manifest.sources] == [
        "host-1/taskmanager.log",
        "host-2/taskmanager.log",
        "jobmanager.log",
        "host-\\xe9/taskmanager.log",
    ]
    assert [item["path"] for item in manifest.skipped] == ["host-\\xe9/gone.log"]


def test_a_folder_input_named_as_another_inputs_folder_is_named_apart():
    """`diagnose p/host-1 q/host-1/taskmanager.log r/x/taskmanager.log`: the folder's own taskmanager.log would
    be shown `host-1/taskmanager.log`, as the second input is, unless the folder is named by its parent too."""
    from flinkdoctor.sources.ingest import input_names

    names = input_names([Path("/t/p/host-1"), Path("/t/q/host-1/taskmanager.log"), Path("/t/r/x/taskmanager.log")])
    assert names == ["p/host-1", "host-1/taskmanager.log", "x/taskmanager.log"]
