"""Game replays: the viewer's file format (`record`; each game records its own games into it,
match.Runner.recorder), the self-contained browser viewer (`viewer`), and the command line
`python -m tcgleague.replay` (`__main__`)."""

from .record import replay_document
from .viewer import combined_replays, viewer_html, write_replays

__all__ = ["combined_replays", "replay_document", "viewer_html", "write_replays"]
