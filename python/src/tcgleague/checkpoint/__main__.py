"""`python -m tcgleague.checkpoint convert OLD.pt [NEW.pt]` (see convert.py)."""

import sys

from .convert import main

if __name__ == "__main__":
    sys.exit(main())
