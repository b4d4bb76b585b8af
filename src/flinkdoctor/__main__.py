"""`python -m flinkdoctor`, and the script spark-submit runs by path (so the import is absolute)."""

from flinkdoctor.cli import main

if __name__ == "__main__":
    main()
