"""Run reports: `python -m tcgleague.report RUN_DIR` (data -> figures -> report.html)."""

from .data import RunData, load_run
from .html import REPORT_FILE, write_report

__all__ = ["REPORT_FILE", "RunData", "load_run", "write_report"]
