"""The peer trainers of `bench peer`, each run as its own process (`python -m
tcgleague.games.emberfront.peers.<module> train|evaluate ...`): `shared` (how a peer runs, what it writes,
how it is judged), `versus_bot` (the single-agent env they train on), `sb3_peer` (MaskablePPO),
`pufferl_policy` (PuffeRL's policy; its training entry is tools/pufferl_peer.py)."""
