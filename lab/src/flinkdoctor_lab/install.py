"""Install a real Flink distribution from PyPI and compile the lab jobs against it.

PyPI's `apache-flink-libraries` sdist carries the jars (deps/lib, deps/opt, deps/plugins,
deps/bin/bash-java-utils.jar) and the `apache-flink` wheel carries the scripts and default config
(pyflink/bin, pyflink/conf). Put side by side they form an ordinary FLINK_HOME, so the lab needs
no Maven, no Hadoop and no mirror of archive.apache.org.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

# The Flink versions the lab is recorded on (tests/data/lab/<version>/); `run` defaults to the first.
FLINK_VERSIONS = ("1.20.3", "2.1.1")
JOBS_DIR = Path(__file__).parent / "jobs"


def cache_root() -> Path:
    """Where Flink homes live: $FLINKDOCTOR_CACHE or ~/.cache/flinkdoctor (shared by all runs)."""
    base = os.environ.get("FLINKDOCTOR_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "flinkdoctor"


def flink_home(version: str) -> Path:
    return cache_root() / "flink" / version


def ensure_flink(version: str, log=print) -> Path:
    """Return FLINK_HOME for `version`, downloading and assembling it on first use."""
    home = flink_home(version)
    if (home / ".complete").exists():
        return home
    home.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"flink-{version}-", dir=home.parent) as tmp_name:
        tmp = Path(tmp_name)
        log(f"downloading apache-flink-libraries=={version} and apache-flink=={version} from PyPI")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--quiet",
                "--disable-pip-version-check",
                "-d",
                str(tmp / "dl"),
                f"apache-flink-libraries=={version}",
                f"apache-flink=={version}",
            ],
            check=True,
        )
        staging = tmp / "home"
        _assemble(tmp / "dl", staging)
        if home.exists():
            shutil.rmtree(home)
        staging.rename(home)
    (home / ".complete").write_text(version + "\n")
    log(f"Flink {version} assembled in {home}")
    return home


def _assemble(dl: Path, home: Path) -> None:
    """Unpack jars from the sdist and scripts/config from the wheel into one FLINK_HOME."""
    _unpack_jars(next(dl.glob("apache*flink*libraries*.tar.gz")), home)
    _unpack_scripts(next(dl.glob("apache_flink-*.whl")), home)
    for script in (home / "bin").iterdir():
        if script.suffix in ("", ".sh"):
            script.chmod(0o755)
    for sh in (home / "plugins").rglob("*.sh"):
        sh.chmod(0o755)
    (home / "log").mkdir(exist_ok=True)
    if not (home / "bin" / "bash-java-utils.jar").exists() or not list((home / "lib").glob("flink-dist*.jar")):
        raise RuntimeError(f"incomplete Flink distribution in {home}")


def _unpack_jars(sdist: Path, home: Path) -> None:
    """deps/{lib,opt,plugins,bin} of the apache-flink-libraries sdist -> home/{lib,opt,plugins,bin}."""
    with tarfile.open(sdist) as tf:
        for m in tf.getmembers():
            parts = Path(m.name).parts
            if len(parts) < 3 or parts[1] != "deps" or parts[2] not in ("lib", "opt", "plugins", "bin"):
                continue
            if not (m.isfile() or m.isdir()):
                continue
            target = home.joinpath(*parts[2:])
            src_file = tf.extractfile(m)
            if src_file is None:  # a directory
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with src_file as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)


def _unpack_scripts(wheel: Path, home: Path) -> None:
    """pyflink/{bin,conf} of the apache-flink wheel -> home/{bin,conf}."""
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            parts = Path(name).parts
            if len(parts) < 3 or parts[0] != "pyflink" or parts[1] not in ("bin", "conf") or name.endswith("/"):
                continue
            target = home.joinpath(*parts[1:])
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(name) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)


def ensure_jobs_jar(version: str, log=print) -> Path:
    """Compile the lab's Java jobs against this Flink's lib/ (once per source change)."""
    home = ensure_flink(version, log)
    sources = sorted(JOBS_DIR.glob("*.java"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:12]
    jar = home.parent.parent / "jobs" / version / f"flinkdoctor-lab-jobs-{digest}.jar"
    if jar.exists():
        return jar
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lab-jobs-") as tmp:
        classes = Path(tmp) / "classes"
        log(f"compiling lab jobs for Flink {version}")
        subprocess.run(
            [
                "javac",
                "--release",
                "11",
                "-nowarn",
                "-cp",
                str(home / "lib") + "/*",
                "-d",
                str(classes),
                *map(str, sources),
            ],
            check=True,
        )
        tmp_jar = Path(tmp) / "jobs.jar"
        subprocess.run(["jar", "cf", str(tmp_jar), "-C", str(classes), "."], check=True)
        shutil.move(tmp_jar, jar)
    return jar
