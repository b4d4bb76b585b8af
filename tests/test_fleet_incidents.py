"""The incident detector on lake rows (no Spark): the score as README (Fleet) says it is computed, on numbers worked
out by hand; one shared cause per incident; no chaining; generic findings never make an incident; a symptom
joins the cause that explains it; a background of independent failures gives no incident."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from math import comb

import pytest

from flinkdoctor.fleet.incidents import detect
from flinkdoctor.fleet.score import chance, expected, least_chance, threshold, upper_tail
from flinkdoctor.fleet.sightings import from_lake
from flinkdoctor.knowledge.rulebook import load_rules

T0 = datetime(2026, 11, 18, 3, 0)


@pytest.fixture(scope="module")
def rules():
    return load_rules()


def test_upper_tail_of_the_hypergeometric_by_hand():
    # 2 drawn from 10 of which 2 are marked: both marked in 1 of the C(10,2) = 45 draws
    assert upper_tail(2, 2, 2, 10) == pytest.approx(1 / 45)
    # 3 drawn from 10 of which 4 marked: at least one unless all 3 come from the 6 unmarked, C(6,3)/C(10,3) = 20/120
    assert upper_tail(1, 3, 4, 10) == pytest.approx(1 - 20 / 120)
    assert upper_tail(0, 3, 4, 10) == 1.0 and upper_tail(4, 3, 4, 10) == 0.0
    # far in the tail the value stays exact, not 0: C(50,50) / C(1000,50)
    assert upper_tail(50, 50, 50, 1000) == pytest.approx(1 / comb(1000, 50), rel=1e-9)


def test_chance_is_given_the_first_job_and_expected_is_the_fleet_rate():
    # 3 of the 3 jobs on a host in the window have the cause, 3 of 10 in the fleet: the first is given, so it is
    # the chance that both other jobs on the host are the 2 other jobs with it among the 9 others: 1 / C(9,2)
    assert chance(3, 3, 3, 10) == pytest.approx(1 / 36)
    assert expected(3, 3, 10) == pytest.approx(0.9)
    # 4 of 10 jobs on the host, 4 in a fleet of 100: C(3,3) C(96,6) / C(99,9)
    assert chance(4, 10, 4, 100) == pytest.approx(comb(96, 6) / comb(99, 9))
    assert expected(10, 4, 100) == pytest.approx(0.4)
    # a window with no other job, or a cause of one job, can never be surprising
    assert least_chance(1, 50, 100) == 1.0 and least_chance(10, 1, 100) == 1.0
    assert least_chance(3, 3, 10) == chance(3, 3, 3, 10)


def test_threshold_counts_only_the_tests_that_could_reach_it():
    assert threshold([1e-9] * 3 + [0.5] * 10) == pytest.approx(0.01 / 3)
    # M = 1 and 2 are too few (3 tests reach 0.01 and 0.005); at M = 3 only the 1e-9 test reaches 0.0033
    assert threshold([0.004, 0.004, 1e-9]) == pytest.approx(0.01 / 3)
    assert threshold([]) == 0.01


def bundle(bid, host, start, hours=1.0, verdict="known-cause", **keys):
    return {
        "bundle_id": bid,
        "status": "ok",
        "verdict": verdict,
        "hosts": [host],
        "storage": keys.get("storage", []),
        "zookeeper": keys.get("zookeeper", []),
        "kafka": [],
        "log_start": start,
        "log_end": start + timedelta(hours=hours),
    }


def root(bid, rule, category, chain=()):
    return {"bundle_id": bid, "rule": rule, "category": category, "derived": False, "first_seen": None, "host": None}


def finding(bid, rule, category, role, time, host, **keys):
    return {"bundle_id": bid, "rule": rule, "category": category, "role": role, "time": time, "host": host} | {
        "storage": keys.get("storage"),
        "zookeeper": keys.get("zookeeper"),
        "kafka": None,
    }


def fleet_of(size=100, hosts=10):
    """`size` jobs on `hosts` hosts, all running during the same hour: each host has size/hosts jobs at once."""
    return [bundle(f"j{i:03d}", f"h{i % hosts}", T0) for i in range(size)]


def test_a_planted_host_incident_is_found_with_its_jobs_and_score(rules):
    bundles = fleet_of()
    planted = [b["bundle_id"] for b in bundles if b["hosts"] == ["h0"]][:4]
    diagnoses = [root(b, "kernel-soft-lockup", "host-stall") for b in planted]
    findings = [
        finding(b, "kernel-soft-lockup", "host-stall", "cause", T0 + timedelta(minutes=20, seconds=i), "h0")
        for i, b in enumerate(planted)
    ]
    found = detect(from_lake(bundles, diagnoses, findings, rules))
    assert len(found) == 1
    incident = found[0]
    assert (incident.kind, incident.key, incident.level, incident.cause) == ("host", "h0", "rule", "kernel-soft-lockup")
    assert incident.bundles == sorted(planted) and incident.joined == []
    # 4 of the 10 jobs on h0; 4 of the fleet's 100 have the cause (README, Fleet: how the score is computed)
    assert (incident.observed, incident.exposed, incident.with_cause, incident.fleet) == (4, 10, 4, 100)
    assert incident.expected == pytest.approx(0.4)
    assert incident.chance == pytest.approx(comb(96, 6) / comb(99, 9))


def test_the_same_cause_on_two_hosts_or_an_hour_apart_is_no_incident(rules):
    bundles = fleet_of() + [bundle("late", "h0", T0 + timedelta(hours=2))]
    pairs = [("j000", "h0", 0), ("j001", "h1", 0), ("j010", "h0", 0), ("late", "h0", 150)]
    findings = [
        finding(b, "kernel-soft-lockup", "host-stall", "cause", T0 + timedelta(minutes=m), h) for b, h, m in pairs
    ]
    diagnoses = [root(b, "kernel-soft-lockup", "host-stall") for b, _, _ in pairs]
    # j000 and j010 on h0 at once: 2 of 10 jobs, but 4 of 101 have the cause; far from the threshold
    assert detect(from_lake(bundles, diagnoses, findings, rules)) == []


def test_a_window_never_chains_past_its_length(rules):
    """A lockup every 10 minutes on one host, each in a job of its own there (a fleet of 20,000 that has no other
    lockup): each sighting close to the last, but no 15-minute window holds more than two."""
    at = [T0 + timedelta(minutes=10 * i) for i in range(6)]
    chained = [f"c{i:02d}" for i in range(6)]
    bundles = [bundle(b, "h0", t - timedelta(minutes=1), hours=0.05) for b, t in zip(chained, at, strict=True)]
    bundles += [bundle(f"j{i:05d}", f"x{i % 500}", T0, hours=2) for i in range(20000)]
    diagnoses = [root(b, "kernel-soft-lockup", "host-stall") for b in chained]
    pairs = zip(chained, at, strict=True)
    findings = [finding(b, "kernel-soft-lockup", "host-stall", "cause", t, "h0") for b, t in pairs]
    found = detect(from_lake(bundles, diagnoses, findings, rules))
    assert found, "two lockups in one window, the only ones of a large fleet, are an incident"
    for incident in found:
        assert incident.end - incident.start <= timedelta(minutes=15) and len(incident.bundles) == 2
    assert len({b for incident in found for b in incident.bundles}) == sum(len(i.bundles) for i in found)


def test_generic_findings_never_make_an_incident(rules):
    bundles = fleet_of(60, 3)
    on_h0 = [b["bundle_id"] for b in bundles if b["hosts"] == ["h0"]]
    at = T0 + timedelta(minutes=5)
    findings = [
        finding(b, rule, category, role, at, "h0")
        for b in on_h0
        for rule, category, role in [
            ("task-failed", "other", "symptom"),
            ("job-restarting", "other", "symptom"),
            ("checkpoint-declined", "checkpoint-declined", "cause"),
            ("uncaught-exception", "other", "context"),
        ]
    ]
    diagnoses = [root(b, "checkpoint-declined", "checkpoint-declined") for b in on_h0]
    diagnoses += [
        {"bundle_id": b, "rule": "exception-chain", "category": "other", "derived": True, "first_seen": at.isoformat()}
        | {"host": "h0"}
        for b in on_h0
    ]
    fleet = from_lake(bundles, diagnoses, findings, rules)
    assert fleet.sightings == [] and detect(fleet) == []


def test_a_symptom_joins_the_cause_that_explains_it(rules):
    """Four jobs on one quorum log the ZooKeeper session timeout; three more, at the same minutes, only that
    their job was suspended (unexplained in their own diagnosis): one incident of seven jobs, three joined. The
    score counts the four: a symptom joins an incident, it never makes one."""
    quorum = "zk1:2181,zk2:2181,zk3:2181"
    bundles = [bundle(f"j{i:03d}", f"h{i}", T0, zookeeper=[quorum if i < 12 else "other:2181"]) for i in range(200)]
    at = T0 + timedelta(minutes=30)
    timeout, suspended = ["j000", "j001", "j002", "j003"], ["j004", "j005", "j006"]
    diagnoses = [root(b, "zookeeper-client-session-timeout", "zookeeper-connectivity") for b in timeout]
    findings = [
        finding(b, "zookeeper-client-session-timeout", "zookeeper-connectivity", "cause", at, b, zookeeper=quorum)
        for b in timeout
    ] + [finding(b, "job-suspended", "ha-leadership-loss", "symptom", at, b, zookeeper=quorum) for b in suspended]
    found = detect(from_lake(bundles, diagnoses, findings, rules))
    assert [(i.kind, i.key, i.cause) for i in found] == [("zookeeper", quorum, "zookeeper-client-session-timeout")]
    assert found[0].bundles == timeout + suspended and found[0].joined == suspended
    assert (found[0].observed, found[0].exposed, found[0].with_cause, found[0].fleet) == (4, 12, 4, 200)
    assert found[0].rules == ["job-suspended", "zookeeper-client-session-timeout"]
    # a symptom alone makes nothing; nor one its own diagnosis explains (in the chain of its root cause)
    alone = [f for f in findings if f["rule"] == "job-suspended"]
    assert detect(from_lake(bundles, [], alone, rules)) == []
    own = [root(b, "jobmanager-lost-leadership", "ha-leadership-loss") for b in suspended]
    own = [row | {"chain": ["job-suspended"]} for row in own]
    assert detect(from_lake(bundles, own, alone, rules)) == []


BACKGROUND_CAUSES = [
    ("kernel-soft-lockup", "host-stall"),
    ("jvm-heap-oom", "jvm-heap-oom"),
    ("zookeeper-client-session-timeout", "zookeeper-connectivity"),
    ("taskmanager-heartbeat-timeout", "taskmanager-lost"),
    ("user-code-exception", "user-code-error"),
    ("checkpoint-expired", "checkpoint-timeout"),
    ("no-space-left-on-device", "disk-exhausted"),
    ("classpath-conflict", "dependency-conflict"),
    ("slots-not-available", "resources-unavailable"),
    ("jvm-direct-oom", "jvm-direct-oom"),
    ("network-host-unreachable", "network-failure"),
    ("checkpoint-stream-close-failed", "checkpoint-storage-error"),
]


def test_a_background_of_independent_failures_gives_no_incident(rules):
    """5,000 jobs over a day on 100 hosts and 10 quorums, 15 % failing with one of 12 causes at random times:
    same-cause pairs and triples on one host or quorum within 15 minutes happen, but never beyond chance."""
    rng = random.Random(7)
    causes = BACKGROUND_CAUSES
    bundles, diagnoses, findings = [], [], []
    for i in range(5000):
        start = T0 + timedelta(seconds=rng.randrange(86400))
        host, quorum = f"h{rng.randrange(100)}", f"zk{rng.randrange(10)}"
        bundles.append(bundle(f"j{i:04d}", host, start, hours=0.5, zookeeper=[quorum]))
        if rng.random() < 0.15:
            rule, category = rng.choice(causes)
            diagnoses.append(root(f"j{i:04d}", rule, category))
            at = start + timedelta(seconds=rng.randrange(1800))
            zk = quorum if category == "zookeeper-connectivity" else None
            findings.append(finding(f"j{i:04d}", rule, category, "cause", at, host, zookeeper=zk))
    assert detect(from_lake(bundles, diagnoses, findings, rules)) == []


def test_one_category_of_several_rules_is_one_incident(rules):
    """Three jobs on a host log a soft lockup and three a hung task, at one moment: by rule neither three is beyond
    chance, by category (host-stall) the six are."""
    bundles = fleet_of(200, 20)
    on_h0 = [b["bundle_id"] for b in bundles if b["hosts"] == ["h0"]][:6]
    at = T0 + timedelta(minutes=10)
    kinds = [("kernel-soft-lockup", "host-stall")] * 3 + [("kernel-hung-task", "host-stall")] * 3
    diagnoses = [root(b, rule, category) for b, (rule, category) in zip(on_h0, kinds, strict=True)]
    findings = [finding(b, rule, category, "cause", at, "h0") for b, (rule, category) in zip(on_h0, kinds, strict=True)]
    found = detect(from_lake(bundles, diagnoses, findings, rules))
    assert [(i.level, i.cause, i.bundles) for i in found] == [("category", "host-stall", sorted(on_h0))]
    assert found[0].rules == ["kernel-hung-task", "kernel-soft-lockup"]
    assert (found[0].observed, found[0].exposed, found[0].with_cause, found[0].fleet) == (6, 10, 6, 200)


def test_a_cause_that_is_the_jobs_own_is_never_shared_by_its_host(rules):
    """The lab's own runs: four heap OOMs, the fleet's only ones, on one host within minutes (the lab ran them one
    after the other). A host cannot give jobs a heap OOM; it can stall them: the same pattern of lockups is an
    incident."""
    bundles = [bundle(f"j{i:03d}", "h0", T0 + timedelta(minutes=2 * i), hours=1 / 60) for i in range(66)]
    jobs = [b["bundle_id"] for b in bundles][:4]
    at = [T0 + timedelta(minutes=2 * i, seconds=30) for i in range(4)]
    for rule, category, shared in (("jvm-heap-oom", "jvm-heap-oom", False), ("kernel-soft-lockup", "host-stall", True)):
        diagnoses = [root(b, rule, category) for b in jobs]
        findings = [finding(b, rule, category, "cause", t, "h0") for b, t in zip(jobs, at, strict=True)]
        found = detect(from_lake(bundles, diagnoses, findings, rules))
        assert [i.bundles for i in found] == ([sorted(jobs)] if shared else []), rule


def test_planted_incidents_of_2_to_50_jobs_in_a_busy_fleet_are_found_with_their_jobs(rules):
    """A fleet shaped like a platform's: 4,800 jobs of half an hour over 6 hours, 24 per host, 240 per quorum,
    480 per storage, 10 % failing with one of 12 causes at random (each cause in about 40 jobs). Planted on top:
    one cause in 3 to 50 new jobs on one resource within three minutes. Each is found with exactly its jobs, and
    nothing else is. The weakest is a cause the background never shows. Two jobs are never enough in a fleet this
    busy: even the fleet's only two jobs with a cause fall on one host in one window by chance about once in 1,600
    (3 other jobs there of 4,800), far above the threshold its thousand windows make; two alone in a quiet fleet
    are (test_a_window_never_chains_past_its_length). bench/RESULTS.md (Fleet incidents) measures the floor."""
    rng = random.Random(11)
    hosts, quorums, storages = (
        [f"h{i:03d}" for i in range(200)],
        [f"zk{i:02d}" for i in range(20)],
        [f"nn{i}" for i in range(10)],
    )
    bundles, diagnoses, findings = [], [], []

    def job(bid, host, quorum, storage, start, cause=None, at=None):
        bundles.append(bundle(bid, host, start, hours=0.5, zookeeper=[quorum], storage=[storage]))
        if cause:
            rule, category = cause
            diagnoses.append(root(bid, rule, category))
            keys = {"zookeeper": quorum} if category == "zookeeper-connectivity" else {}
            keys |= {"storage": storage} if category == "checkpoint-storage-error" else {}
            findings.append(finding(bid, rule, category, "cause", at, host, **keys))

    for i in range(4800):
        start = T0 + timedelta(seconds=rng.randrange(6 * 3600))
        failing = rng.random() < 0.1
        cause = rng.choice(BACKGROUND_CAUSES) if failing else None
        at = start + timedelta(seconds=rng.randrange(1800))
        job(f"j{i:04d}", rng.choice(hosts), rng.choice(quorums), rng.choice(storages), start, cause, at)
    plants = [
        ("host", "h007", ("kernel-hung-task", "host-stall"), 3),
        ("host", "h013", ("kernel-soft-lockup", "host-stall"), 5),
        ("host", "h101", ("kernel-soft-lockup", "host-stall"), 12),
        ("storage", "nn3", ("checkpoint-stream-close-failed", "checkpoint-storage-error"), 8),
        ("storage", "nn5", ("checkpoint-stream-close-failed", "checkpoint-storage-error"), 50),
        ("zookeeper", "zk04", ("zookeeper-client-session-timeout", "zookeeper-connectivity"), 8),
        ("zookeeper", "zk11", ("zookeeper-client-session-timeout", "zookeeper-connectivity"), 25),
    ]
    planted = {}
    for number, (kind, key, cause, strength) in enumerate(plants):
        at = T0 + timedelta(minutes=20 + 45 * number)
        names = [f"p{number}-{n:02d}" for n in range(strength)]
        for n, name in enumerate(names):
            host = key if kind == "host" else rng.choice(hosts)
            quorum = key if kind == "zookeeper" else rng.choice(quorums)
            storage = key if kind == "storage" else rng.choice(storages)
            hit = at + timedelta(seconds=rng.randrange(180))
            job(name, host, quorum, storage, hit - timedelta(seconds=60 + n), cause, hit)
        planted[(kind, key)] = (cause[0], sorted(names))
    found = detect(from_lake(bundles, diagnoses, findings, rules))
    assert {(i.kind, i.key): (i.cause, i.bundles) for i in found} == planted
    assert all(i.level == "rule" and i.observed == len(i.bundles) and i.chance < 1e-4 for i in found)
