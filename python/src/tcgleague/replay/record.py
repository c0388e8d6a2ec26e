"""The replay viewer's file format, whatever the game: a document of recorded games (`FORMAT`,
`VERSION`, `replay_document`) whose every distinct text is stored once per game (`Strings`).
A game records its own games into it: Emberfront's games/emberfront/replay.py (the board as
the decider saw it, its legal actions in words); poker and Liar's Dice through replay/table.py
in their own words (the decider's hand and the bets, its die and the bids);
match.Runner.recorder is the game's recorder.

    {"format": "tcgleague-replays", "version": 1, <what was played: title, seed, ...>,
     "games": [{"game": scheduled index, "players": [seat 0's name, seat 1's], "winner": seat
                or null (a draw), "strings": [text, ...], "steps": [{"s": seat, "b": [board
                line ids], "l": [legal action ids], "a": index into l played, "p": [[index
                into l, prob], ...] (a policy), "v": value (a policy)}, ...], ...}]}

Floats are rounded to DIGITS places."""

from __future__ import annotations

from dataclasses import dataclass, field

FORMAT, VERSION = "tcgleague-replays", 1
DIGITS = 3  # probabilities and values are rounded to this many decimals


@dataclass
class Strings:
    """A game's distinct texts (board lines, actions in words), each stored once."""

    texts: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)

    def ids(self, texts) -> list[int]:
        out = []
        for text in texts:
            if text not in self.index:
                self.index[text] = len(self.texts)
                self.texts.append(text)
            out.append(self.index[text])
        return out


def replay_document(games: list[dict], **about) -> dict:
    """The file's content: the format's name and version, what was played (`about`: title,
    seed, turn_cap, ...), the games."""
    return {"format": FORMAT, "version": VERSION, **about, "games": games}
