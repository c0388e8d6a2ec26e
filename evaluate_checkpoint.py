"""Thin entry: `python evaluate_checkpoint.py ...` is `python -m tcgleague.evaluate_checkpoint ...`."""
import sys

from tcgleague.evaluate_checkpoint import main

if __name__ == "__main__":
    sys.exit(main())
