"""The file to give spark-submit: `spark-submit [--master ...] --py-files flinkdoctor.zip submit.py ROOT... --out
LAKE` runs `flinkdoctor fleet ROOT... --out LAKE` as the application's driver (README, Fleet)."""

import sys

if __name__ == "__main__":
    from flinkdoctor.cli import main

    main(["fleet", *sys.argv[1:]])
