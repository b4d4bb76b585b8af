"""The scan stage's start: its output type built without Spark's SQL parser, and the parser warmed beside the
stage on the events table's schema (events._output_type, _warm_parser)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_the_output_type_is_the_parsed_schema(spark):
    from pyspark.sql.types import _parse_datatype_string

    from flinkdoctor.scan.events import _output_type
    from flinkdoctor.scan.scanner import OUTPUT_SCHEMA

    assert _output_type() == _parse_datatype_string(OUTPUT_SCHEMA)


def test_the_parser_is_warmed_on_the_events_tables_schema(spark):
    from pyspark.sql.types import _parse_datatype_string

    from flinkdoctor.scan.events import _warm_parser
    from flinkdoctor.scan.scanner import STORED_SCHEMA

    warmed = _warm_parser()
    assert warmed is not None and warmed.result(timeout=60) == _parse_datatype_string(STORED_SCHEMA)
