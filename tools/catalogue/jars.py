"""Class-file sources: a Flink distribution (lib/, opt/, plugins/, nested jars), Hadoop's client jar, the JDK.

Which classes are read, and to which component a class belongs, is decided here by package. Flink's shaded
copies of ZooKeeper and Curator are read too (they are the versions Flink actually runs, often older than the
source read from the repositories) and given to the `zookeeper` / `curator` components under their unshaded
names: a log shows either, and the class entries' regexes accept both.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import classfiles as cf
from .candidate import Candidate

# Flink's shaded copies: prefix as in the class name -> component
SHADED = {
    "org.apache.flink.shaded.zookeeper3.": "zookeeper",
    "org.apache.flink.shaded.curator4.": "curator",
    "org.apache.flink.shaded.curator5.": "curator",
}
SHADED_PACKAGES = {"zookeeper": ("org.apache.zookeeper.",), "curator": ("org.apache.curator.",)}
FLINK_KEEP = re.compile(
    r"^(?:org/apache/flink/(?!shaded/|kubernetes/shaded/|table/shaded/|python/shaded/|fnexecution/v1/|"
    r"api/python/shaded/|table/api/bridge/scala/)|akka/remote/|org/apache/pekko/remote/|"
    r"org/apache/flink/shaded/zookeeper3/org/apache/zookeeper/|org/apache/flink/shaded/curator[45]/org/apache/curator/)"
)
HADOOP_KEEP = re.compile(r"^org/apache/hadoop/(?!shaded/|thirdparty/)")
JDK_KEEP = re.compile(
    r"^(?:java/(?:io|net|nio|nio/channels|nio/file|util/concurrent|util/zip|lang)/[A-Z][^/]*|"
    r"sun/nio/ch/[A-Z][^/]*|sun/nio/fs/[A-Z][^/]*|sun/net/www/protocol/http/[A-Z][^/]*|"
    r"sun/security/ssl/[A-Z][^/]*|javax/net/ssl/[A-Z][^/]*)$"
)


def flink_component(name: str) -> tuple[str, str]:
    """(component, unshaded class name) of a class read from a Flink jar."""
    for prefix, component in SHADED.items():
        if name.startswith(prefix):
            return component, name[len(prefix) :]
    return "flink", name


@dataclass
class JarRead:
    """Candidates per component, exception classes per component (name -> where), config keys, classes read."""

    messages: dict[str, list[Candidate]]
    exceptions: dict[str, dict[str, str]]
    config_keys: set[str]
    classes_read: int


def _jars(home: Path) -> list[Path]:
    found = []
    for folder in ("lib", "opt"):
        found += sorted((home / folder).glob("*.jar"))
    found += sorted((home / "plugins").glob("*/*.jar"))
    return [j for j in found if not j.name.startswith("log4j")]


def read_jars(jars: list[tuple[Path, str]], keep, split, javap: str = "javap") -> JarRead:
    """Read the classes `keep` accepts in `jars` ((jar, where-prefix) pairs); `split` gives (component, name)."""
    read = cf.ClassRead()
    for jar, where in jars:
        names = cf.jar_classes(jar, keep)
        cf.read_classes(cf.javap_lines(jar, names, javap), where, read)
    hierarchy = cf.Hierarchy(read.supers)
    messages: dict[str, list[Candidate]] = {}
    for cand in cf.candidates(read, hierarchy):
        component, origin = split(cand.origin)
        cls = split(cand.cls)[1] if cand.cls else None
        messages.setdefault(component, []).append(
            Candidate(cand.kind, cand.text, cand.template, cls, cand.level, origin, cand.where, cand.keys)
        )
    exceptions: dict[str, dict[str, str]] = {}
    for name, where in read.classes.items():
        if hierarchy.throwable(name) and not name.startswith("java.lang.Object"):
            component, plain = split(name)
            exceptions.setdefault(component, {})[plain] = where
    return JarRead(messages, exceptions, read.config_keys, read.count)


def read_flink(home: Path, javap: str = "javap") -> JarRead:
    """Every jar of a Flink home (lib/, opt/, plugins/*/, and the jars nested in them)."""
    with tempfile.TemporaryDirectory(prefix="catalogue-nested-") as tmp:
        jars: list[tuple[Path, str]] = []
        for jar in _jars(home):
            jars.append((jar, f"{jar.name}!"))
            jars += [(nested, f"{jar.name}!{nested.name}!") for nested in cf.nested_jars(jar, Path(tmp))]
        keep = FLINK_KEEP.match
        return read_jars(jars, lambda n: bool(keep(n)), flink_component, javap)


def read_hadoop(jar: Path, javap: str = "javap") -> JarRead:
    return read_jars([(jar, f"{jar.name}!")], lambda n: bool(HADOOP_KEEP.match(n)), lambda n: ("hadoop", n), javap)


def jdk_classes(java_home: Path) -> list[str]:
    """Classes of java.base the catalogue reads (its exceptions and the messages of I/O, network, NIO)."""
    listing = subprocess.run(
        [str(java_home / "bin" / "jimage"), "list", str(java_home / "lib" / "modules")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module, names = "", []
    for line in listing.splitlines():
        if line.startswith("Module: "):
            module = line.split(": ", 1)[1].strip()
        elif module == "java.base" and line.strip().endswith(".class"):
            path = line.strip()[:-6]
            if JDK_KEEP.match(path) and "module-info" not in path:
                names.append(path.replace("/", "."))
    return sorted(names)


def read_jdk(java_home: Path, javap: str = "javap") -> JarRead:
    read = cf.ClassRead()
    names = jdk_classes(java_home)
    with tempfile.TemporaryDirectory(prefix="catalogue-jdk-") as tmp:
        # javap reads JDK classes from the running JDK itself; an empty class path keeps anything else out
        cf.read_classes(cf.javap_lines(Path(tmp), names, javap), "java.base!", read)
    hierarchy = cf.Hierarchy(read.supers)
    messages = [c for c in cf.candidates(read, hierarchy) if c.level != "stderr"]
    exceptions = {n: w for n, w in read.classes.items() if hierarchy.throwable(n)}
    return JarRead({"jdk": messages}, {"jdk": exceptions}, set(), read.count)
