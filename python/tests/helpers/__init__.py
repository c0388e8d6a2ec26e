"""Helpers of the tests, not tests: imported as `helpers.<module>` (the tests directory is on
sys.path), and dist_failing_rank.py, a training script test_dist.py launches under torchrun."""
