"""The committed failure catalogue (src/flinkdoctor/knowledge/catalogue): it loads and validates, every regex works
in Python re and Hyperscan and finds its own message, literals hold, the coverage table in docs/catalogue.md is
the data's, and a broken file is a clear error. Pure Python (no Spark)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flinkdoctor.errors import RuleError
from flinkdoctor.knowledge.catalogue import catalogue_dir, load_catalogue, load_folder
from flinkdoctor.knowledge.vocabulary import CATEGORIES
from tools.catalogue import coverage

ROOT = Path(__file__).resolve().parents[1]
# a placeholder of a format (java.util.Formatter), of SLF4J, or of a concatenation / shell expansion as the text
# shows it; each stands where the code puts a value
PLACEHOLDER = re.compile(r"%(?:\d+\$)?[-#+ 0,(]*\d*(?:\.\d+)?[a-zA-Z]|\{\}|\$\{[^}]*\}|\$\w+|\$\([^)]*\)")


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


def test_catalogue_loads_with_every_component(catalogue):
    components = {e.component for e in catalogue.entries}
    schema = json.loads((ROOT / "src/flinkdoctor/schemas/catalogue.schema.json").read_text(encoding="utf-8"))
    assert components == set(schema["$defs"]["component"]["enum"])
    assert len(catalogue.by_id) == len(catalogue.entries)
    assert all(e.category in CATEGORIES for e in catalogue.entries)
    assert load_catalogue() is catalogue  # once per process


@pytest.fixture(scope="module")
def compiled(catalogue):
    return [(entry, re.compile(entry.regex)) for entry in catalogue.entries]


def test_the_messages_the_issue_names_are_catalogued_with_their_category(compiled):
    # issue 22 names these as printed verbatim by code that no rule knew; each must be found by the catalogue
    lines = {
        # Kafka producer, as users paste it
        "Expiring 7 record(s) for topic-0:120000 ms has passed since batch creation": "kafka-client-timeout",
        # HotSpot's fatal error text
        "# There is insufficient memory for the Java Runtime Environment to continue.": "jvm-direct-oom",
        "java.lang.OutOfMemoryError: Metaspace": "jvm-metaspace-oom",
        "Caused by: java.lang.OutOfMemoryError: Java heap space": "jvm-heap-oom",
        "java.io.IOException: No space left on device": "disk-exhausted",
    }
    for line, category in lines.items():
        hits = [e for e, pattern in compiled if e.kind == "message" and pattern.search(line)]
        assert hits, line
        assert category in {e.category for e in hits}, (line, [(e.id, e.category) for e in hits])


def test_what_older_versions_print_is_catalogued_from_those_versions(compiled):
    # each line is the code's own message with values put in, as the JVM prints an exception ("<class>: <message>");
    # the entry that finds it must have been read from the version named (docs/catalogue.md, "What is read")
    lines = {
        # JDK 8/11 libnet.so: JNU_ThrowByName(env, "java/net/SocketTimeoutException", "connect timed out")
        "Caused by: java.net.SocketTimeoutException: connect timed out": ("network-failure", "11.0.13"),
        # JDK 11 java.nio.Bits.reserveMemory: throw new OutOfMemoryError("Direct buffer memory")
        "java.lang.OutOfMemoryError: Direct buffer memory": ("jvm-direct-oom", "11.0.13"),
        # Flink 1.9 legacy scheduler: new NoResourceAvailableException(...) from its two constants around the task
        "Caused by: org.apache.flink.runtime.jobmanager.scheduler.NoResourceAvailableException: No resource available"
        " to schedule unit Source: kafka (1/4). You can decrease the operator parallelism or increase the number of"
        " slots per TaskManager in the configuration.": ("resources-unavailable", "1.9.3"),
        # Flink 1.9 SimpleSlot: new FlinkException("TaskManager was lost/killed: " + taskManagerLocation)
        "java.lang.Exception: TaskManager was lost/killed: container_e01_1588_0001_01_000002 @ worker-3"
        " (dataPort=39121)": ("taskmanager-lost", "1.9.3"),
        # kafka-clients 2.3.1 KafkaConsumer.commitSync: "Timeout of " + timeout + "ms expired before successfully
        # committing offsets " + offsets
        "org.apache.kafka.common.errors.TimeoutException: Timeout of 60000ms expired before successfully committing"
        " offsets {orders-0=OffsetAndMetadata{offset=42, leaderEpoch=null, metadata=''}}": (
            "kafka-client-timeout",
            "2.3.1",
        ),
    }
    for line, (category, version) in lines.items():
        hits = [e for e, pattern in compiled if e.kind == "message" and pattern.search(line)]
        assert any(e.category == category and version in e.versions.split(", ") for e in hits), (
            line,
            [(e.id, e.category, e.versions) for e in hits],
        )


def test_every_regex_compiles_and_finds_its_own_message(compiled):
    missed = []
    for entry, pattern in compiled:
        if entry.kind == "exception":
            assert pattern.search(f"Caused by: {entry.text}: boom"), entry.id
            continue
        rendered = PLACEHOLDER.sub("xx", entry.text)
        match = pattern.search(rendered)
        if match is None:
            missed.append(entry.id)
            continue
        assert all(lit in match.group() for lit in entry.literals), entry.id
    # a text whose placeholders are not the sink's (a literal '%' or '{}' in a concatenation) may render
    # differently; they are few
    assert len(missed) <= len(compiled) // 200, missed[:20]


# what a generated regex is made of: exact characters and escapes, the loose parts of tools/catalogue/template.py,
# a word boundary, and the optional group of shaded prefixes of a class name
REGEX_TOKEN = re.compile(
    r"\[\^\\n\]\*\?|\\s\+|\[\^\\x00-\\x7f\]\+|\\b|\\x[0-9a-f]{2}|\\.|\(\?:|\)\?|\||[^\\.^$*+?{}\[\]|()]"
)


def test_regexes_are_hyperscan_compatible(catalogue):
    hyperscan = pytest.importorskip("hyperscan")
    entries = catalogue.entries
    # every regex is built only of tokens Hyperscan takes (no backreference, lookaround, atomic group) ...
    odd = [e.id for e in entries if "".join(REGEX_TOKEN.findall(e.regex)) != e.regex]
    assert not odd, odd[:10]
    # ... and Hyperscan compiles them: each kind of token (the shaded-prefix groups, non-ASCII runs) and a spread
    # sample of the rest (compiling all 28 000 takes the engine its own time, not this test's)
    sample = [e for i, e in enumerate(entries) if i % 10 == 0 or "(?:" in e.regex or "x00-" in e.regex]
    db = hyperscan.Database()
    db.compile(
        expressions=[e.regex.encode() for e in sample],
        ids=list(range(len(sample))),
        elements=len(sample),
        flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(sample),
    )


def test_literals_are_long_enough_and_longest_first(catalogue):
    for entry in catalogue.entries:
        assert entry.literals, entry.id
        assert all(len(lit) >= 4 for lit in entry.literals), entry.id
        assert [len(x) for x in entry.literals] == sorted((len(x) for x in entry.literals), reverse=True), entry.id


def test_exception_classes_also_match_under_flinks_shaded_prefixes(catalogue):
    zk = catalogue.by_class["org.apache.zookeeper.KeeperException$SessionExpiredException"]
    assert re.search(
        zk.regex, "org.apache.flink.shaded.zookeeper3.org.apache.zookeeper.KeeperException$SessionExpiredException"
    )
    # up to Flink 1.10 (flink-dist_2.11-1.10.3.jar: org/apache/flink/shaded/zookeeper/org/apache/zookeeper/...)
    shaded_by_flink_1_10 = (
        "org.apache.flink.shaded.zookeeper.org.apache.zookeeper.KeeperException$SessionExpiredException"
    )
    assert re.match(zk.regex, shaded_by_flink_1_10)
    assert zk.category == "zookeeper-connectivity"


def test_coverage_table_in_the_docs_is_the_datas():
    doc = (ROOT / "docs" / "catalogue.md").read_text(encoding="utf-8")
    expected = coverage.section(coverage.read_folder(catalogue_dir()))
    assert coverage.current_section(doc) == expected, "regenerate: python -m tools.catalogue (or see docs/catalogue.md)"


def test_a_broken_catalogue_file_is_a_rule_error_naming_it(tmp_path):
    good = json.loads((catalogue_dir() / "flink-scripts.json").read_text(encoding="utf-8"))
    broken = dict(good, entries=[dict(good["entries"][0], category="not-a-category")] + good["entries"][1:])
    (tmp_path / "flink-scripts.json").write_text(json.dumps(broken))
    with pytest.raises(RuleError, match=r"flink-scripts\.json: entries/0/category"):
        load_folder(tmp_path, use_cache=False)
    (tmp_path / "flink-scripts.json").write_text("{not json")
    with pytest.raises(RuleError, match=r"flink-scripts\.json: not JSON"):
        load_folder(tmp_path, use_cache=False)
    wrong_id = dict(good, entries=[dict(good["entries"][0], text=good["entries"][0]["text"] + " changed")])
    (tmp_path / "flink-scripts.json").write_text(json.dumps(wrong_id))
    with pytest.raises(RuleError, match="is not"):
        load_folder(tmp_path, use_cache=False)
