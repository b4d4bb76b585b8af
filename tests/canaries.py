"""Canaries: a distinct secret planted in every place one can hide in a Flink bundle or a REST answer.

The lines around each secret are real: the fault lab's heap-oom recording on Flink 1.20.3
(tests/data/lab/1.20.3/heap-oom.tar.gz) gives the headers and the shapes, and the planted value is the only thing
that differs from what Flink printed:
- "Loading configuration property: KEY, VALUE" and "Loading dynamic configuration property: KEY, VALUE"
  (GlobalConfiguration, as 1.20.3 prints them; it masks sensitive keys itself, older Flink and forks do not);
- the start-up dump of ClusterEntrypoint: "JVM Options:" then one "    -Dname=value" line each, and
  "Program Arguments:" then "    -D" and "    key=value" on the next line;
- the preamble line "dynamic_configs: -D key=value -D ..." of the start script (RESOURCE_PARAMS extraction logs);
- WARN lines of org.apache.flink.runtime.taskmanager.Task whose message carries a URL with user-info, a JDBC URL
  with a password parameter, a JAAS line, Authorization headers, an AWS access key id; a PEM key block after one;
- the JobManager's .out file holding an environment dump (`env` prints NAME=value lines);
- configuration files: 1.x flat flink-conf.yaml and 2.x nested config.yaml, every key Flink treats as sensitive;
- REST answers: /jobmanager/config ({key, value} pairs), /jobmanager/environment (JVM options), a job's
  user-config, and the logs, as Flink 1.20.3 serves them (tests/data/rest/1.20.3/recording.json).
`Canaries.context[place]` is the text just before the secret: where an output shows "<context>******", the line
reached it and was masked there (rather than dropped).
"""

from __future__ import annotations

import copy
import tarfile
import zlib
from pathlib import Path

import yaml

from conftest import DATA

LAB = DATA / "lab" / "1.20.3" / "heap-oom.tar.gz"
# Flink's own sensitive words (masking.FLINK_SENSITIVE, from GlobalConfiguration) in keys that hold them
FLINK_KEYS = {
    "password": "security.ssl.keystore-password",
    "secret": "s3.secret-key",
    "fs.azure.account.key": "fs.azure.account.key.acct.blob.core.windows.net",
    "apikey": "metrics.reporter.dghttp.apikey",
    "api-key": "metrics.reporter.dghttp.api-key",
    "auth-params": "pulsar.client.auth-params",
    "service-key": "gs.service-key",
    "token": "s3.session.token",
    "basic-auth": "metrics.reporter.prom.basic-auth",
    "jaas.config": "properties.sasl.jaas.config",
    "http-headers": "metrics.reporter.otel.exporter.http-headers",
}
WARN_MESSAGES = {  # place -> message with {} where the secret goes
    "url-user-info": "fetching https://deploy:{}@git.example.com/repo.git",
    "jdbc-url": "opening jdbc:mysql://db.internal:3306/orders?user=app&password={}",
    "jdbc-user-info": "opening jdbc:postgresql://admin:{}@db.internal:5432/orders",
    "jaas": 'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" '
    'password="{}";',
    "authorization-bearer": "request header Authorization: Bearer {}",
    "authorization-basic": "request header Authorization: Basic {}",
}


class Canaries:
    """Distinct secrets by the place they hide in, and the text before each."""

    def __init__(self):
        self.secrets: dict[str, str] = {}
        self.context: dict[str, str] = {}

    def __call__(self, place: str, context: str = "") -> str:
        return self.plant(place, f"Cnry{len(self.secrets):02d}q{zlib.crc32(place.encode()) % 10**6:06d}Zx", context)

    def plant(self, place: str, secret: str, context: str = "") -> str:
        assert place not in self.secrets, place
        self.secrets[place], self.context[place] = secret, context
        return secret

    def leaks(self, text: str) -> list[str]:
        """The places whose secret (or its tail: a secret cut in two) is in `text`."""
        return [place for place, secret in self.secrets.items() if secret in text or secret[-9:] in text]


def _nested(flat: dict[str, str]) -> str:
    """2.x config.yaml: the dotted keys as nested mappings."""
    tree: dict = {}
    for key, value in flat.items():
        *parents, leaf = key.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return yaml.safe_dump(tree, sort_keys=False)


def jobmanager_lines(lines: list[str], canary: Canaries, tag: str = "") -> list[str]:
    """Lines to append to a JobManager log (`lines`: its own, for the headers), each with a secret."""
    logged = [line for line in lines if line[:4].isdigit()]  # lines with a header, not the start script's preamble
    config = next(line for line in logged if "Loading configuration property: " in line).split("Loading")[0]
    entry = next(line for line in logged if "org.apache.flink.runtime.entrypoint" in line).split(" - ")[0] + " - "
    planted = []
    for word, key in FLINK_KEYS.items():
        text = f"Loading configuration property: {key}, "
        planted.append(f"{config}{text}{canary(f'{tag}config-line {word}', text)}\n")
    text = "Loading dynamic configuration property: security.ssl.rest.truststore-password, "
    planted.append(f"{config}{text}{canary(tag + 'dynamic-line', text)}\n")
    option, argument = "-Djavax.net.ssl.keyStorePassword=", "security.ssl.internal.key-password="
    planted += [
        f"{entry} JVM Options:\n",
        f"{entry}    {option}{canary(tag + 'jvm-option', option)}\n",
        f"{entry} Program Arguments:\n",
        f"{entry}    -D\n",
        f"{entry}    {argument}{canary(tag + 'program-argument', argument)}\n",
    ]
    return planted


def taskmanager_lines(warn: str, canary: Canaries, tag: str = "") -> list[str]:
    """WARN lines (`warn`: a real WARN line's header, up to ' - ') each with a secret, then a PEM block."""
    planted = []
    for place, message in WARN_MESSAGES.items():
        before = message.split("{}")[0]
        # a quoted value is masked with its quotes, and a JAAS line's login module too: its last word stays
        before = before.rstrip('"').rsplit(" ", 1)[-1] if before.endswith('"') else before
        planted.append(f"{warn} - {message.format(canary(tag + place, before))}\n")
    aws = canary.plant(tag + "aws-access-key", f"AKIA{zlib.crc32(tag.encode()) % 10**8:08d}CNRYZXQQ", "")
    planted.append(f"{warn} - s3a client for {aws} refused\n")
    pem = canary(tag + "pem-block", "-----BEGIN PRIVATE KEY-----")
    planted.append(f"{warn} - key material\n-----BEGIN PRIVATE KEY-----\nMII{pem}\n-----END PRIVATE KEY-----\n")
    return planted


def environment_lines(canary: Canaries, tag: str = "") -> str:
    """An environment dump as `env` prints it."""
    return "".join(
        f"{name}={canary(tag + 'env ' + name, name + '=')}\n"
        for name in ("AWS_SECRET_ACCESS_KEY", "KAFKA_SASL_PASSWORD")
    )


def plant_bundle(root: Path, canary: Canaries) -> Path:
    """The lab's heap-oom bundle with a canary in every place; returns the bundle folder."""
    root.mkdir(parents=True)
    with tarfile.open(LAB) as archive:
        archive.extractall(root, filter="data")
    run = next(root.iterdir())
    flat = {key: canary(f"flat {word}") for word, key in FLINK_KEYS.items()}  # shown as settings: no context
    (run / "conf" / "flink-conf.yaml").write_text("".join(f"{k}: {v}\n" for k, v in flat.items()), encoding="utf-8")
    nested = {key: canary(f"nested {word}") for word, key in FLINK_KEYS.items()}
    with open(run / "conf" / "config.yaml", "a", encoding="utf-8") as config:
        config.write(_nested(nested))
    jm = run / "log" / "flink-root-standalonesession-0-vm.log"
    lines = jm.read_text(encoding="utf-8").splitlines(keepends=True)
    planted = jobmanager_lines(lines, canary)
    index = next(i for i, line in enumerate(lines) if line.startswith("dynamic_configs: "))
    lines[index] = lines[index].rstrip("\n") + f" -D s3.access-key={canary('dynamic-configs', 's3.access-key=')}\n"
    jm.write_text("".join(lines + planted), encoding="utf-8")
    tm = run / "log" / "flink-root-taskexecutor-0-vm.log"
    text = tm.read_text(encoding="utf-8")
    warn = next(line for line in text.splitlines() if " WARN  " in line).split(" - ")[0]
    tm.write_text(text + "".join(taskmanager_lines(warn, canary)), encoding="utf-8")
    with open(run / "log" / "flink-root-standalonesession-0-vm.out", "a", encoding="utf-8") as out:
        out.write(environment_lines(canary))
    return run


def lab_log(name: str) -> list[str]:
    """The lines of one log of the lab recording."""
    with tarfile.open(LAB) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("/log/" + name))
        return archive.extractfile(member).read().decode("utf-8").splitlines(keepends=True)  # type: ignore[union-attr]


def plant_recording(recording: dict, canary: Canaries) -> dict:
    """A recorded REST session (tests/data/rest/<version>/recording.json) with canaries in what it serves, the
    planted lines with the lab recording's headers; every job restarting, so that `watch` sees an incident at its
    first poll."""
    jobmanager = lab_log("flink-root-standalonesession-0-vm.log")
    warn = next(line for line in lab_log("flink-root-taskexecutor-0-vm.log") if " WARN  " in line).split(" - ")[0]
    rec = copy.deepcopy(recording)
    responses = rec["responses"]
    for job in responses["/jobs/overview"]["body"]["jobs"]:
        job["state"] = "RESTARTING"
    for word, key in FLINK_KEYS.items():
        responses["/jobmanager/config"]["body"].append({"key": key, "value": canary(f"rest config {word}")})
    option = "-Djavax.net.ssl.trustStorePassword="
    responses["/jobmanager/environment"]["body"]["jvm"]["options"].append(option + canary("rest jvm", option))
    config = next(path for path in responses if path.startswith("/jobs/") and path.count("/") == 3 and "config" in path)
    responses[config]["body"]["execution-config"].setdefault("user-config", {})["sink.password"] = canary("rest user")
    for path, entry in sorted(responses.items()):
        if entry["type"] != "text":
            continue
        tag = f"rest {path.rsplit('/', 1)[-1]} "
        if "standalonesession" in path and path.endswith(".log"):
            entry["body"] += "".join(jobmanager_lines(jobmanager, canary, tag))
        elif path.endswith(".log"):
            entry["body"] += "".join(taskmanager_lines(warn, canary, tag))
        else:
            entry["body"] += environment_lines(canary, tag)
    return rec
