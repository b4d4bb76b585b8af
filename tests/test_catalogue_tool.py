"""The catalogue's regeneration tool (tools/catalogue): templates and regexes, the class-file reader on real Flink
class files, the Java source reader and the script reader on real source lines, categories, determinism.

Pure Python (no Spark). The class-file tests need the JDK's javap (Java 17 is what the project runs on)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tools.catalogue import build, categorize, classfiles, javasource, scripts
from tools.catalogue import template as tpl
from tools.catalogue.candidate import Candidate

DATA = Path(__file__).parent / "data" / "catalogue"
needs_javap = pytest.mark.skipif(shutil.which("javap") is None, reason="the JDK's javap is not on PATH")


def hyperscan_compiles(patterns: list[str]) -> bool:
    hyperscan = pytest.importorskip("hyperscan")
    db = hyperscan.Database()
    db.compile(
        expressions=[p.encode() for p in patterns],
        ids=list(range(len(patterns))),
        elements=len(patterns),
        flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(patterns),
    )
    return True


# -- templates -----------------------------------------------------------------------------------------------------


def test_format_slf4j_and_recipe_placeholders_become_holes():
    # formats from flink-dist 1.20.3 NetworkBufferPool and ZooKeeper's ClientCnxn (see tests below)
    assert tpl.from_format("required %d, but only %d available. %s.") == (
        "required ", None, ", but only ", None, " available. ", None, ".",
    )  # fmt: skip
    assert tpl.from_format("100%% of %1$s%n") == ("100% of ", None, "\n")
    assert tpl.from_slf4j("Checkpoint {} of job {} expired") == ("Checkpoint ", None, " of job ", None, " expired")
    assert tpl.from_slf4j(r"literal \{} brace") == ("literal {} brace",)
    assert tpl.from_recipe("Failed to start checkpoint ID counter: \x01") == (
        "Failed to start checkpoint ID counter: ",
        None,
    )


def test_regex_matches_values_and_what_users_paste_instead():
    template = tpl.trimmed(tpl.from_format("Expiring %d record(s) for %s:%d ms has passed since batch creation"))
    regex = re.compile(tpl.to_regex(template))
    # the Kafka producer's line with values, and as users redact it
    for line in (
        "Expiring 12 record(s) for orders-3:120001 ms has passed since batch creation",
        "Expiring xx record(s) for ***:*** ms has passed since batch creation",
        "Expiring N record(s) for <topic>:... ms has passed since batch creation",
        "Expiring  record(s) for : ms has passed since batch creation",
    ):
        assert regex.search(line), line
    assert not regex.search("Expiring 12 record(s) for orders-3\n:120001 ms has passed since batch creation")
    assert hyperscan_compiles([tpl.to_regex(template)])


def test_regex_escapes_constants_and_loosens_only_runs_of_whitespace():
    template = ("Could not allocate [1.5 MB] (x+y)?  of  {buffers}\ttotal",)
    regex = tpl.to_regex(template)
    assert re.fullmatch(regex, "Could not allocate [1.5 MB] (x+y)? of {buffers}   total")
    assert not re.fullmatch(regex, "Could not allocate [1.5 MB] (x+y)?of{buffers}total")
    assert not re.search(regex, "Could not allocate [1x5 MB] (x+y)? of {buffers} total")  # '.' is not any char
    assert hyperscan_compiles([regex])


def test_literals_are_the_constant_runs_the_regex_requires_longest_first():
    template = tpl.from_slf4j("Checkpoint {} of job {} expired before completing.")
    lits = tpl.literals(template)
    assert lits == (" expired before completing.", "Checkpoint ", " of job ")
    regex = re.compile(tpl.to_regex(tpl.trimmed(template)))
    match = regex.search("2024 INFO Checkpoint 17 of job 8a1f expired before completing.")
    assert match and all(lit in match.group() for lit in lits)


def test_only_specific_messages_are_kept_and_multiline_keeps_the_telling_line():
    assert not tpl.specific(tpl.trimmed(tpl.from_slf4j("{} {}")))
    assert not tpl.specific(tpl.trimmed(("delegate",)))  # a checkNotNull argument name
    assert not tpl.specific(tpl.trimmed(tpl.from_format("Error: %s")))
    assert tpl.specific(tpl.trimmed(("Network buffer pool has already been destroyed.",)))
    lines = tpl.line_of(
        (
            "Raw output:\n",
            None,
            "\nCould not get JVM parameters properly.",
        )
    )
    assert lines == ("Could not get JVM parameters properly.",)


def test_class_regex_accepts_the_shaded_prefixes_only():
    regex = re.compile(tpl.class_regex("org.apache.zookeeper.KeeperException$SessionExpiredException",
                                       ["org.apache.flink.shaded.zookeeper3."]))  # fmt: skip
    assert regex.search("Caused by: org.apache.zookeeper.KeeperException$SessionExpiredException: KeeperErrorCode")
    assert regex.search(
        "org.apache.flink.shaded.zookeeper3.org.apache.zookeeper.KeeperException$SessionExpiredException"
    )
    assert not regex.search("org.apache.zookeeper.KeeperException$SessionExpiredExceptionX")


# -- class files (real ones, tests/data/catalogue/SOURCE.md) ----------------------------------------------------------


@pytest.fixture(scope="module")
def class_candidates() -> list[Candidate]:
    read = classfiles.ClassRead()
    files = sorted(str(p) for p in DATA.glob("flink-*/*.class"))
    classfiles.read_classes(classfiles.javap_lines(Path("."), files), "flink-dist.jar!", read)
    return classfiles.candidates(read, classfiles.Hierarchy(read.supers))


@needs_javap
def test_java8_string_format_into_an_exception(class_candidates):
    found = {c.text: c for c in class_candidates}
    # NetworkBufferPool.requestMemorySegments: throw new IOException(String.format("Insufficient number ...", ...))
    insufficient = found["Insufficient number of network buffers: required %d, but only %d available. %s."]
    assert (insufficient.cls, insufficient.level) == ("java.io.IOException", "throw")
    assert insufficient.template[:2] == ("Insufficient number of network buffers: required ", None)
    assert insufficient.where == "flink-dist.jar!org.apache.flink.runtime.io.network.buffer.NetworkBufferPool"
    # new IllegalStateException("Network buffer pool has already been destroyed.")
    assert found["Network buffer pool has already been destroyed."].cls == "java.lang.IllegalStateException"


@needs_javap
def test_java11_concat_recipe_logger_and_preconditions(class_candidates):
    found = {c.text: c for c in class_candidates if "CheckpointFailure" in c.origin}
    # throw new FlinkRuntimeException("Unknown checkpoint failure reason : " + reason.name()) -> an indy recipe
    unknown = found["Unknown checkpoint failure reason : {}"]
    assert unknown.cls == "org.apache.flink.util.FlinkRuntimeException"
    assert unknown.template == ("Unknown checkpoint failure reason : ", None)
    # LOG.warn("Failed to trigger or complete checkpoint {} for job {}. ({} consecutive ...)", new Object[]{...})
    assert (
        found["Failed to trigger or complete checkpoint {} for job {}. ({} consecutive failed attempts so far)"].level
        == "warn"
    )
    # Preconditions.checkArgument(cond, "The tolerable checkpoint failure number is illegal, ...")
    assert (
        found["The tolerable checkpoint failure number is illegal, it must be greater than or equal to 0 ."].cls
        == "java.lang.IllegalArgumentException"
    )
    # LOG.info(...) is not a failure path
    assert "Failed to trigger checkpoint for job {} since {}." not in found
    # the messages of the CheckpointFailureReason enum
    assert found["Checkpoint expired before completing."].level is None
    assert "Checkpoint was declined (tasks not ready)" in found


@needs_javap
def test_static_messages_enriching_an_out_of_memory_error_with_the_keys_they_name(class_candidates):
    # TaskManagerExceptionUtils: TM_DIRECT_OOM_ERROR_MESSAGE = String.format("Direct buffer memory. ...'%s'...",
    # TaskManagerOptions.TASK_OFF_HEAP_MEMORY.key(), ...) in <clinit>, handed to tryEnrichOutOfMemoryError
    found = [c for c in class_candidates if c.origin == "org.apache.flink.util.TaskManagerExceptionUtils"]
    direct = next(c for c in found if c.text.startswith("Direct buffer memory. The direct out-of-memory error"))
    assert direct.cls == "java.lang.OutOfMemoryError" and direct.level == "throw"
    # the keys, read from TaskManagerOptions' static initializer (ConfigOptions.key("..."))
    assert direct.keys == ("taskmanager.memory.framework.off-heap.size", "taskmanager.memory.task.off-heap.size")
    metaspace = next(c for c in found if c.text.startswith("Metaspace. The metaspace out-of-memory error"))
    assert metaspace.keys == ("taskmanager.memory.jvm-metaspace.size",)


@needs_javap
def test_javap_escapes_decode_back_to_the_string():
    assert classfiles.decode(r"say \"hi\"\tthen \\ and \u0001") == 'say "hi"\tthen \\ and \x01'


def test_throwable_by_superclasses_read_else_by_name():
    hierarchy = classfiles.Hierarchy(
        {"a.Fails": "a.Base", "a.Base": "java.lang.RuntimeException", "a.Plain": "java.lang.Object"}
    )
    assert hierarchy.throwable("a.Fails")
    assert not hierarchy.throwable("a.Plain")
    assert hierarchy.throwable("org.other.SomeError")  # not read: the name tells
    assert not hierarchy.throwable("java.lang.StringBuilder")


# -- other versions of the neighbours: a JDK 11 runtime, kafka-clients 2.3.1 inside a PyPI package's jar ---------------


@needs_javap
def test_another_jdks_class_is_read_by_path_not_resolved_to_the_running_jdk():
    # javap resolves java.nio.Bits by name to the running JDK 17's class; the tool hands JDK 11's by path
    # (tools/catalogue/jdkimage.py), and gets JDK 11's wording of the direct-memory OutOfMemoryError
    def texts(names: list[str]) -> dict[str, Candidate]:
        read = classfiles.ClassRead()
        classfiles.read_classes(classfiles.javap_lines(Path("."), names), "java.base!", read)
        return {c.text: c for c in classfiles.candidates(read, classfiles.Hierarchy(read.supers))}

    jdk11 = texts([str(DATA / "jdk-11.0.13" / "Bits.class")])
    assert jdk11["Direct buffer memory"].cls == "java.lang.OutOfMemoryError"
    assert jdk11["Direct buffer memory"].where == "java.base!java.nio.Bits"
    assert "Direct buffer memory" not in texts(["java.nio.Bits"])  # JDK 17: "Cannot reserve ... direct buffer memory"


def test_a_jdk_homes_version_is_its_release_files(tmp_path):
    from tools.catalogue import jdkimage

    (tmp_path / "release").write_text('IMPLEMENTOR="Eclipse Adoptium"\nJAVA_VERSION="11.0.13"\n')
    assert jdkimage.release_version(tmp_path) == "11.0.13"


@needs_javap
def test_the_bundled_kafka_client_is_read_under_the_version_its_jar_states(tmp_path):
    import zipfile

    jar = tmp_path / "atoti-kafka.jar"  # the two files as they sit in atoti-kafka 0.5.0's jar (SOURCE.md)
    with zipfile.ZipFile(jar, "w") as zf:
        zf.write(
            DATA / "kafka-clients-2.3.1" / "Sender.class", "org/apache/kafka/clients/producer/internals/Sender.class"
        )
        zf.write(DATA / "kafka-clients-2.3.1" / "kafka-version.properties", "kafka/kafka-version.properties")
    spec = next(s for s in build.sources()["bundled_jars"] if s["component"] == "kafka-clients")
    read = build.read_bundled_jar(spec, jar)
    assert read.label == "2.3.1"
    found = {c.text: c for c in read.messages["kafka-clients"]}
    expiring = found["Expiring{} record(s) for{}:{} ms has passed since batch creation"]
    assert (expiring.cls, expiring.level) == ("org.apache.kafka.common.errors.TimeoutException", "throw")
    assert expiring.where == "atoti-kafka-0.5.0!atoti-kafka.jar!org.apache.kafka.clients.producer.internals.Sender"
    regex = re.compile(tpl.to_regex(tpl.trimmed(tpl.line_of(expiring.template))))
    assert regex.search("org.apache.kafka.common.errors.TimeoutException: Expiring 12 record(s) for orders-3:"
                        "120004 ms has passed since batch creation")  # fmt: skip


@needs_javap
def test_socket_timeouts_thrown_by_the_jdks_native_code_are_read_from_libnet():
    from tools.catalogue import native

    libnet = build.java_home() / "lib" / "libnet.so"
    found = {c.text: c for c in native.read_hotspot(libnet, "jdk", build.sources()["jdk_natives"], "java.net")}
    connect = found["connect timed out"]  # JDK 8/11's PlainSocketImpl; JDK 17's Java code says "Connect timed out"
    assert (connect.cls, connect.level, connect.where) == ("java.net.SocketTimeoutException", "throw", "jdk!libnet.so")
    assert re.search(tpl.to_regex(connect.template), "Caused by: java.net.SocketTimeoutException: connect timed out")
    assert "Read timed out" in found


def test_third_party_code_relocated_into_flinks_packages_is_not_read_as_flinks():
    # flink-swift-fs-hadoop-1.10.3.jar relocates Hadoop under org.apache.flink.fs.openstackhadoop.shaded.
    hadoop = "org.apache.flink.fs.openstackhadoop.shaded.org.apache.hadoop.fs.swift.http.SwiftRestClient"
    own = "org.apache.flink.fs.openstackhadoop.SwiftFileSystemFactory"
    text = "any message (the filter looks only at the class it is written in)"
    read = build.Read(
        "1.10.3",
        {"flink": [Candidate("message", text, (text,), None, "throw", o, f"x!{o}") for o in (hadoop, own)]},
        {"flink": {hadoop + "Exception": "x", own + "Exception": "x"}},
    )
    kept = build.without_relocated(read, build.sources()["flink"]["relocated"])
    assert [c.origin for c in kept.messages["flink"]] == [own]
    assert list(kept.exceptions["flink"]) == [own + "Exception"]


# -- Java source, real lines ---------------------------------------------------------------------------------------

# ZooKeeper, zookeeper-server/src/main/java/org/apache/zookeeper/ClientCnxn.java (apache/zookeeper@53a78e36f996,
# lines 1234-1241), in a class shell; KeeperException's constructor from the same repository.
ZOOKEEPER = b"""package org.apache.zookeeper;
public class ClientCnxn {
    void run() {
                    if (expiration <= 0) {
                        String warnInfo = String.format(
                            "Client session timed out, have not heard from server in %dms for session id 0x%s",
                            clientCnxnSocket.getIdleRecv(),
                            Long.toHexString(sessionId));
                        LOG.warn(warnInfo);
                        changeZkState(States.CLOSED);
                        throw new SessionTimeoutException(warnInfo);
                    }
                    LOG.info("Client will use " + mechanism + " as SASL mechanism.");
    }
    private static class SessionTimeoutException extends IOException {
        SessionTimeoutException(String msg) { super(msg); }
    }
}
"""


def test_java_source_follows_a_local_format_into_logger_and_throw():
    walked = javasource.Walker(ZOOKEEPER).walk(javasource.Parser(javasource.JAVA).parse(ZOOKEEPER).root_node)
    found = [(m[0].parts, m[2], m[3]) for m in walked.messages]
    text = "Client session timed out, have not heard from server in %dms for session id 0x%s"
    assert (tpl.from_format(text), None, "warn") in found  # String.format read as such, the logger gets holes
    assert (tpl.from_format(text), "SessionTimeoutException", "throw") in found
    assert walked.messages[0][0].text == text
    assert not any("SASL mechanism" in str(parts) for parts, _, _ in found)  # info
    assert walked.classes["org.apache.zookeeper.ClientCnxn$SessionTimeoutException"] == "IOException"
    formatted = javasource.styled(javasource.Value((text,), True, text), "slf4j")
    assert formatted.parts == (text,)  # a logger does not read %d
    assert javasource.styled(javasource.Value((text,), True, text), "format").parts[1] is None


def test_java_literals_decode_escapes_and_text_blocks():
    assert javasource.decode_literal(r'"a\tb \"q\" \u0041"') == 'a\tb "q" A'
    assert javasource.decode_literal('"""\n    line one\n      two\n    """') == "line one\n  two\n"


# -- scripts, real lines ---------------------------------------------------------------------------------------------

# Flink 1.13.6 bin/config.sh, lines 35-40 and 533-537 (apache-flink 1.13.6 wheel, pyflink/bin/config.sh)
CONFIG_SH = """\
    if [[ "$FLINK_DIST" == "" ]]; then
        # write error message to stderr since stdout is stored as the classpath
        (>&2 echo "[ERROR] Flink distribution jar not found in $FLINK_LIB_DIR.")

        # exit function with empty classpath to force process failure
        exit 1
    fi
  if [[ $? -ne 0 ]]; then
    echo "[ERROR] Could not get JVM parameters and dynamic configurations properly."
    echo "[ERROR] Raw output from BashJavaUtils:"
    echo "$java_utils_output"
    exit 1
  fi
    echo "$FLINK_CLASSPATH""$FLINK_DIST"
"""


def test_script_error_lines_with_their_exit(tmp_path):
    path = tmp_path / "config.sh"
    path.write_text(CONFIG_SH)
    found = {c.text: c for c in scripts.read_script(path, "apache-flink-1.13.6!")}
    dist = found["[ERROR] Flink distribution jar not found in $FLINK_LIB_DIR."]
    assert dist.level == "exit" and dist.template == ("[ERROR] Flink distribution jar not found in ", None, ".")
    assert found["[ERROR] Could not get JVM parameters and dynamic configurations properly."].level == "exit"
    assert "$FLINK_CLASSPATH" not in "".join(found)  # the classpath echo is output, not an error


# -- categories, keys, the whole build -----------------------------------------------------------------------------


def test_category_rules_load_and_the_first_that_holds_answers():
    rules = categorize.load_rules()
    assert (
        categorize.categorize(rules, "message", "Checkpoint expired before completing.", None, "x", "flink", None)[0]
        == "checkpoint-timeout"
    )
    name = "org.apache.flink.util.StateMigrationException"
    cat, reason = categorize.categorize(rules, "exception", name, name, name, "flink", None)
    assert cat == "state-restore-incompatible" and reason.startswith("class ")
    assert categorize.categorize(
        rules, "message", "Stream closed unexpectedly here", None, "a.B", "flink", "throw"
    ) == ("other", "no rule: generic")


def test_rules_file_problems_are_reported(tmp_path):
    bad = tmp_path / "categories.yaml"
    bad.write_text("rules:\n  - wording: x\n    category: not-a-category\n    reason: r\n")
    with pytest.raises(ValueError, match="bad category"):
        categorize.load_rules(bad)


def test_keys_and_fix_from_the_message_itself():
    template = tpl.from_format(
        "Insufficient number of network buffers: required %d. Please increase 'taskmanager.memory.network.fraction'."
    )
    fix, keys = build.fix_and_keys(template, {"taskmanager.memory.network.fraction"}, ())
    assert keys == ("taskmanager.memory.network.fraction",)
    assert fix == "Please increase 'taskmanager.memory.network.fraction'."


def _reads() -> list[build.Read]:
    msg = tpl.from_slf4j("Checkpoint {} of job {} expired before completing.")
    a = Candidate("message", "Checkpoint {} of job {} expired before completing.", msg, None, "warn",
                  "org.apache.flink.runtime.checkpoint.CheckpointCoordinator", "flink-dist-1.13.6.jar!x")  # fmt: skip
    b = Candidate("message", a.text, msg, None, "warn", a.origin, "flink-dist-2.1.1.jar!x")
    short = Candidate("message", "{} failed", tpl.from_slf4j("{} failed"), None, "warn", a.origin, "x")
    exc = {"flink": {"org.apache.flink.util.StateMigrationException": "flink-dist-2.1.1.jar!y"}}
    return [build.Read("1.13.6", {"flink": [a, short]}), build.Read("2.1.1", {"flink": [b]}, exc)]


def test_build_merges_versions_and_is_byte_identical(tmp_path):
    rules = categorize.load_rules()
    out, meta = build.build(_reads(), rules, {})
    build.write(out, meta, tmp_path / "one")
    out2, meta2 = build.build(list(reversed(_reads())), rules, {})
    build.write(out2, meta2, tmp_path / "two")
    assert (tmp_path / "one" / "flink.json").read_bytes() == (tmp_path / "two" / "flink.json").read_bytes()
    data = json.loads((tmp_path / "one" / "flink.json").read_text())
    message = next(e for e in data["entries"] if e["kind"] == "message")
    assert message["versions"] == "1.13.6, 2.1.1" and message["where"] == "flink-dist-2.1.1.jar!x"
    assert message["category"] == "checkpoint-timeout"
    assert data["sources"][0] == {"version": "1.13.6", "messages_read": 2, "dropped": 1}
    from flinkdoctor.knowledge.catalogue import load_folder

    catalogue = load_folder(tmp_path / "one", use_cache=False)  # what the tool writes, the loader accepts
    assert catalogue.by_class["org.apache.flink.util.StateMigrationException"].category == "state-restore-incompatible"
