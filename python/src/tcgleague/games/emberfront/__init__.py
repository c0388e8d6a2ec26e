"""Emberfront, the trading card game of the C engine (`engine/`): its PufferLib env (`env`), the
observation and action layout (`layout`), the scripted bots (`bots`), the policy family that reads
its rows (`policy`, `sampler`, `features`, `attention`), its matches (`match`), the turn-ahead
search (`lookahead`), and a person's session and the board in words (`play`, `words`)."""
