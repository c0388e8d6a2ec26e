"""`python play.py CKPT`: play a checkpoint in the terminal (see `python play.py --help`)."""

import sys

from tcgleague.play import main

if __name__ == "__main__":
    sys.exit(main())
