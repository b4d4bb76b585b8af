"""Option values checked before any work starts: a bad one is a usage error (exit 2), never a Spark traceback."""

from __future__ import annotations

import re
import zoneinfo

from .errors import UsageError

FLINK_VERSION = re.compile(r"^\d+\.\d+(?:\.\d+)?(?:[-.][A-Za-z0-9.]+)?$")  # 1.20, 1.20.3, 2.1.0-SNAPSHOT


def check_timezone(name: str | None) -> str:
    """An IANA zone name (Asia/Shanghai), UTC, or a fixed offset such as +08:00 (Spark reads all three)."""
    name = name or "UTC"
    if re.fullmatch(r"[+-](?:0\d|1[0-4]):[0-5]\d", name):
        return name
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as err:
        raise UsageError(
            f"--timezone: unknown time zone {name!r} (use an IANA name such as Europe/Berlin, "
            "UTC, or an offset such as +08:00)"
        ) from err
    return name


def check_year(year: int | None) -> int | None:
    if year is not None and not 1970 <= year <= 2100:
        raise UsageError(f"--year: {year} is not a plausible year for log times (1970-2100)")
    return year


def check_flink_version(version: str | None) -> str | None:
    if version is not None and not FLINK_VERSION.match(version):
        raise UsageError(f"--flink-version: {version!r} is not a Flink version (such as 1.20.3 or 2.1)")
    return version
