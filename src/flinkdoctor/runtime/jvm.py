"""Starting Spark's JVM faster for a local run: a class archive, and the JIT's quick tier; and its heap the same
size whatever the input: the serial collector.

Most of a fresh local session's time is the JVM loading and verifying Spark's classes. Java 17 can write the
classes a run loaded to an archive when it exits (-XX:ArchiveClassesAtExit) and map that archive in later runs
(-XX:SharedArchiveFile): the seed bundle's cold run drops from 14 s to about 7 s. The first local run on a machine
writes it: its exit waits for the JVM to write the archive under a temporary name, and renames it once the JVM
exited cleanly. A part-written archive would crash the JVM that maps it, so only a renamed file whose size is the
one in its name is used. The archive is keyed by the Java binary, Spark's jars and the driver memory (a
different JVM rejects an archive, but a mismatch is cheaper to avoid); it lives in the user's state folder
(userstate.py). FLINKDOCTOR_JVM_ARCHIVE=0 turns it off, and so do JVM options the user sets; a JVM that refuses
the options is started again without them (spark.py).

Every session runs with only the JIT's quick tier (-XX:TieredStopAtLevel=1): the optimising compiler's threads
compete with the Python tasks for the two cores, and the JVM's own work no longer pays them back at any size.
Measured on two cores: seed bundle 12.0 s against 14.0 s (no archive); 1 GiB 25-27 s against 28-30 s (session
8). At 8 GiB the full JIT was once ahead (111 s against 122 s, when the JVM matched the unexplained errors'
regexes and read every event for the findings); since the driver reads the findings' events itself, the quick
tier is ahead there too: production 8 GiB 41.2 and 42.5 s against 47.1 and 49.2 s, lab 8 GiB 69.3 and 70.2 s
against 73.3 and 73.4 s (fifteenth session, bench/RESULTS.md; gap15 saw C2 take 2.3 s of the JVM's 5.5 s of CPU
in the scan of 4 GiB).

Every session collects with the serial collector (SERIAL_GC), unless the environment's JVM options choose a
collector (the JVM refuses two). The JVM holds little between jobs (100-300 MB live
after a collection at 1 GiB and at 8 GiB), but its reads of the task files allocate fast: each Parquet page of
the events' texts and messages decoded is a 1.0-1.2 MB array, a humongous object in G1's 2 MB regions, and G1
answered the pauses of those bursts by growing its heap (to 1.4 GB at 1 GiB, 2 GB at 8 GiB: the JVM's peak grew
with the input; 4 MB regions only halved that). The serial collector grows its heap only when what survives a
full collection needs it: it stayed at its initial size (about 380 MB on a 24 GB machine) at both sizes, its
single-threaded pauses short over so little live data (2.4 s in all at 8 GiB).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import sys
import time
from pathlib import Path

from .userstate import private, state_dir

QUICK_TIER = "-XX:TieredStopAtLevel=1"
SERIAL_GC = "-XX:+UseSerialGC"
EXIT_WAIT_S = 120  # the longest the first run waits for its JVM to write the archive
STALE_S = 3600  # a temporary archive this old was left by a run that was killed


def java_options(driver_memory: str) -> str:
    """The driver JVM's options for a session flinkdoctor starts itself."""
    options = ([] if _collector_chosen() else [SERIAL_GC]) + [QUICK_TIER]
    wanted = os.environ.get("FLINKDOCTOR_JVM_ARCHIVE", "1") != "0" and _quotable(state_dir())
    if wanted and (key := _key(driver_memory)) is not None:
        found = _archive(key)
        if found is not None:
            options.append(f"-XX:SharedArchiveFile={found}")
        elif (writing := _start_writing(key)) is not None:
            options.append(f"-XX:ArchiveClassesAtExit={writing}")
    return " ".join(options)


def _collector_chosen() -> bool:
    """Whether the environment's JVM options choose a collector: the JVM refuses to start with two."""
    return any(
        re.search(r"-XX:\+Use\w*GC\b", os.environ.get(name, ""))
        for name in ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS")
    )


def _quotable(folder: Path) -> bool:
    """Spark splits the JVM's options at spaces and reads quotes: a folder with either gets no archive."""
    return not any(c.isspace() or c in "'\"\\" for c in str(folder))


def _key(driver_memory: str) -> str | None:
    """A digest of what an archive depends on: the Java binary, Spark's jars, the heap size; None: no Java found."""
    home = os.environ.get("JAVA_HOME")
    java = shutil.which("java", path=str(Path(home) / "bin")) if home else shutil.which("java")
    if java is None:
        return None
    from pyspark.find_spark_home import _find_spark_home

    java_path = Path(java).resolve()
    jars = sorted((Path(_find_spark_home()) / "jars").glob("*.jar"))
    digest = hashlib.sha256(f"{java_path}\0{java_path.stat().st_size}\0{driver_memory}\0".encode())
    for jar in jars:
        digest.update(f"{jar.name}\0{jar.stat().st_size}\0".encode())
    return digest.hexdigest()[:24]


def _archive(key: str) -> Path | None:
    """The whole archive for `key`: its size is the one written in its name when it was renamed, and only this
    user can have written it (the JVM maps it as its own code)."""
    for path in state_dir().glob(f"jvm-{key}-*.jsa"):
        try:
            info = path.stat()
            if private(info) and info.st_size == int(path.stem.rsplit("-", 1)[1]):
                return path
        except (OSError, ValueError):
            continue
    return None


def _start_writing(key: str) -> Path | None:
    """A temporary name for this run's JVM to write the archive to; at exit, wait for the JVM and rename it."""
    folder = state_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    for left in folder.glob("_jvm-*.jsa.tmp"):  # a run killed while its JVM wrote (ours, by name)
        try:
            if time.time() - left.stat().st_mtime > STALE_S:
                left.unlink()
        except OSError:
            continue
    writing = folder / f"_jvm-{key}-{os.getpid()}.jsa.tmp"
    atexit.register(_finish, key, writing)
    return writing


def _finish(key: str, writing: Path) -> None:
    """Stop Spark, let the JVM exit (its stdin closed) and write the archive; keep it if the JVM exited well."""
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    try:
        if SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.stop()  # and its accumulator server, before the JVM goes away
        if process is not None and process.stdin is not None:  # the JVM exits at the end of its input
            if sys.stderr.isatty():
                print("flinkdoctor: writing Spark's class archive for faster starts (once)...", file=sys.stderr)
            process.stdin.close()
            process.wait(timeout=EXIT_WAIT_S)
        if process is not None and process.returncode == 0 and writing.is_file():
            size = writing.stat().st_size
            os.replace(writing, writing.with_name(f"jvm-{key}-{size}.jsa"))
            for old in state_dir().glob("jvm-*.jsa"):  # archives of another Java or Spark: ours, by name
                if not old.name.startswith(f"jvm-{key}-"):
                    old.unlink(missing_ok=True)
    except Exception:  # noqa: BLE001 - an archive not written is only a slower next start
        pass
    finally:
        writing.unlink(missing_ok=True)
