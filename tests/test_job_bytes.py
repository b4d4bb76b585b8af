"""The job id a measure takes from elsewhere in its event (measure.JOB_IN_EVENT), read off the bytes after `job `
where they decide it (measure._jobs_by_bytes), is the one Python's `re` finds: on events of real JobManager and
TaskManager lines (seeds, incidents, lab recordings), and on variants of them with a letter beyond ASCII, a word
character or an upper-case digit next to the id or before `job`, where the bytes alone cannot say."""

from __future__ import annotations

import random
import re
from functools import cache
from pathlib import Path

from tests.conftest import lab_logs_of

DATA = Path(__file__).parent / "data"
NEIGHBOURS = ["\xe9", "\u0436", "\u5b57", "\u2003", "_", "x", "A", "(", "\n", "/chk-12"]


@cache
def events() -> list[str]:
    """Real lines, three to an event, and for each event that holds `job ` a variant with a neighbour put just
    before `job` or just after the 32 characters that follow it."""
    found: list[str] = []
    for folder in ("seeds", "incidents"):
        for path in sorted((DATA / folder).rglob("*.log")):
            found += path.read_bytes().decode("utf-8", "replace").splitlines()
    for recording in ("checkpoint-timeout", "restart-exhausted"):
        for raw in lab_logs_of(recording).values():
            found += raw.decode("utf-8", "replace").splitlines()
    texts = ["\n".join(found[i : i + 3]) for i in range(0, len(found), 3)]
    rng = random.Random(11)
    variants = []
    for text in texts:
        at = text.find("job ")
        if at < 0:
            continue
        place = rng.choice([at, at + 36])
        variants.append(text[:place] + rng.choice(NEIGHBOURS) + text[place:])
        variants.append(text[: at + 4] + text[at + 4 : at + 36].upper() + text[at + 36 :])
    return texts + variants + ["", "job ", "job " + "a" * 31]


def test_the_job_read_off_the_bytes_is_pythons():
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.scan.measure import JOB_IN_EVENT, _jobs, _jobs_by_bytes

    python = re.compile(JOB_IN_EVENT)
    want = []
    for text in events():
        found = python.search(text)
        want.append((found.group(1) or found.group(2)) if found else None)
    values = pa.array(events())
    rows = np.arange(len(values))
    assert _jobs(values, rows).to_pylist() == want
    start, undecided = _jobs_by_bytes(values, rows)
    decided = np.count_nonzero(start >= 0)
    assert decided >= 50 and len(undecided) < decided  # the bytes decide most rows that hold a job
    # only the rows asked for are read, and a sliced array is read at its own offsets
    half = np.arange(0, len(values) - 1, 2)
    shown = _jobs(values.slice(1), half).to_pylist()
    assert shown == [want[1 + i] if i % 2 == 0 else None for i in range(len(values) - 1)]
