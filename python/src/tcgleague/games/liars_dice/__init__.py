"""Liar's Dice (OpenSpiel's `liars_dice`: one six-sided die each), whose exact exploitability
OpenSpiel can compute: its constants and observation row (`rules`) and many games at once in
numpy (`env`). Not yet a registered game: the contract's other parts (rows, match, judge,
words, game) come next (docs/new_game.md)."""
