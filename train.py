"""Thin entry: `python train.py ...` is `python -m tcgleague.train ...`."""
import sys

from tcgleague.train import main

if __name__ == "__main__":
    sys.exit(main())
