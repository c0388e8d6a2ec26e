"""Benchmarks: `python -m tcgleague.bench <name> [--json PATH]`. Each prints a table and can
write machine-readable figures; comparisons are measured side by side in one run."""
