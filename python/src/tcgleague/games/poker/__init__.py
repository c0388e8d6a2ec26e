"""Leduc and Kuhn poker, whose exact exploitability OpenSpiel can compute: their constants and
observation row (`rules`), many games at once in numpy (`env`) behind the row contract (`rows`),
the same states in OpenSpiel's words (`openspiel`), the bots and table (`match`), and a person's
session, the hand in words and the replay viewer's records (`play`, `words`, `replay`)."""
