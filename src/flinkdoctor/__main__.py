"""`python -m flinkdoctor`, and the script spark-submit runs by path (so the imports are absolute):
`spark-submit [--master ...] __main__.py diagnose ...`, or with `--py-files flinkdoctor.zip ... __main__.py fleet
ROOT... --out LAKE` (README, Fleet).

spark-submit puts the --py-files archives first on the driver's path too; they are for the executors. The driver
reads its rules and layouts as files, so it uses the flinkdoctor installed where it runs."""

import os
import sys


def _installed_first() -> None:
    shipped = [p for p in sys.path if p.endswith((".zip", ".whl")) and os.path.basename(p).startswith("flinkdoctor")]
    sys.path[:] = [p for p in sys.path if p not in shipped] + shipped


if __name__ == "__main__":
    _installed_first()
    from flinkdoctor.cli import main

    main()
