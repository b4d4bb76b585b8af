"""Count how often each signature literal occurs in real logs, for the prefilter's choice of rare literals.

    python bench/literal_counts.py > src/flinkdoctor/knowledge/literal_counts.json

Reads the recorded lab runs (tests/data/lab): the prefilter scans raw bytes for one literal per signature, the
one seen least often here, so that common words (`.jar`, ` to `) cost no match callbacks. A literal missing
from the table (a new rule's) counts as rare.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from flinkdoctor.knowledge.rulebook import load_rules
from flinkdoctor.scan.prefilter import build_prefilter

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    literals = sorted(set(build_prefilter(load_rules([])).literals))
    counts = dict.fromkeys(literals, 0)
    for bundle in sorted((ROOT / "tests" / "data" / "lab").glob("*/*.tar.gz")):
        with tarfile.open(bundle) as archive:
            for member in archive.getmembers():
                if member.isfile() and member.name.endswith(".log"):
                    text = archive.extractfile(member).read().decode("utf-8", "replace")
                    for literal in literals:
                        counts[literal] += text.count(literal)
    print(json.dumps(counts, indent=0, sort_keys=True, ensure_ascii=False))


if __name__ == "__main__":
    main()
