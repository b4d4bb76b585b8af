"""The file to give spark-submit: `spark-submit [--master ...] --py-files flinkdoctor.zip submit.py ROOT... --out
LAKE` runs `flinkdoctor fleet ROOT... --out LAKE` as the application's driver (README, Fleet).

spark-submit puts the --py-files archives first on the driver's path too; they are for the executors. The
driver reads its rules and layouts as files, so it uses the flinkdoctor installed where it runs."""

import os
import sys


def _installed_first() -> None:
    shipped = [p for p in sys.path if p.endswith((".zip", ".whl")) and os.path.basename(p).startswith("flinkdoctor")]
    sys.path[:] = [p for p in sys.path if p not in shipped] + shipped


if __name__ == "__main__":
    _installed_first()
    from flinkdoctor.cli import main

    main(["fleet", *sys.argv[1:]])
