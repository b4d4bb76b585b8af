#!/usr/bin/env bash
# Set up flinkdoctor in .venv (PySpark and every other dependency), then diagnose the demo bundle.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v java >/dev/null 2>&1; then
  echo "setup.sh: Java 17 (or 11+) is needed by Spark and was not found on PATH" >&2
  exit 1
fi
# headless Chromium from Debian's packages, for the browser test of the HTML report (Playwright drives it; its own
# browser downloads are not used). Without apt or root the test is skipped locally, and says why.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || { sudo -n true 2>/dev/null && SUDO="sudo -n"; }
  if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || [ -n "$SUDO" ]; }; then
    echo "setup.sh: installing chromium (Debian package) for the HTML report's browser test" >&2
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null >/dev/null
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium </dev/null >/dev/null
  else
    echo "setup.sh: chromium not installed (needs apt-get and root); the HTML report's browser test will be skipped" >&2
  fi
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
