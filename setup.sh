#!/usr/bin/env bash
# Set up flinkdoctor in .venv (PySpark and every other dependency), then diagnose the demo bundle.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v java >/dev/null 2>&1; then
  echo "setup.sh: Java 17 (or 11+) is needed by Spark and was not found on PATH" >&2
  exit 1
fi
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
# the fault lab: its own package, after the product it depends on (else pip would look for flinkdoctor on PyPI)
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ./lab
echo "flinkdoctor installed in .venv; diagnosing demo/host-stall-incident.tar.gz" >&2
export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-127.0.0.1}
.venv/bin/flinkdoctor diagnose demo/host-stall-incident.tar.gz
