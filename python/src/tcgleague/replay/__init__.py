"""Game replays: recording (`record`: every decision of chosen games of a match, through the
game runner), the self-contained browser viewer (`viewer`), and the command line
`python -m tcgleague.replay` (`__main__`)."""

from .record import ReplayRecorder, record_match, replay_document
from .viewer import combined_replays, viewer_html, write_replays

__all__ = ["ReplayRecorder", "combined_replays", "record_match", "replay_document", "viewer_html", "write_replays"]
