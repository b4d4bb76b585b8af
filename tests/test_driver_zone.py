"""The driver's times are UTC whatever the machine's zone: Spark's collect reads a timestamp in the process's zone."""

from __future__ import annotations

import os
import time
from datetime import datetime

import pytest

pytestmark = pytest.mark.unit


@pytest.fixture
def new_york(monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_session_reads_collected_times_as_utc_on_a_machine_in_another_zone(new_york, monkeypatch):
    from pyspark.sql import SparkSession
    from pyspark.sql.types import TimestampType

    from flinkdoctor.runtime.spark import spark_session

    epoch = TimestampType().fromInternal(0)
    assert epoch == datetime(1969, 12, 31, 19, 0)  # (what collect gave in New York before the session)
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", lambda self: "session")  # no JVM, no server
    assert spark_session(remote="sc://localhost:15002") == "session"
    assert os.environ["TZ"] == "UTC"
    assert TimestampType().fromInternal(1556041159000000) == datetime(2019, 4, 23, 17, 39, 19)
