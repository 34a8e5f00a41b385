"""Renders a study's trials and findings to trials.csv, report.md, report.json, report.html and
plot files. Reads the store; never runs anything."""

from searchsvc.report.writer import FORMATS, write_report

__all__ = ["FORMATS", "write_report"]
