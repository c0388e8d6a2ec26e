"""The games, one package each behind the contract of game.py (`Game`): Emberfront, the card game
of our C engine (`emberfront/`), and Leduc and Kuhn poker, whose exact exploitability OpenSpiel
computes (`poker/`). Nothing outside this folder imports it but game.py, which registers them."""
