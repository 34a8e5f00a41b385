"""Renders a study's trials and findings to trials.csv, report.md, report.json, report.html
and plot files, from records and their analysis: it never reads a store
(:mod:`searchsvc.reporting` does) and never runs anything."""

from searchsvc.report.writer import FORMATS, ReportFiles, write_files

__all__ = ["FORMATS", "ReportFiles", "write_files"]
