"""Reusable test suites and fixtures, shipped with searchsvc for its tests and benchmarks (and for
anyone adding a searcher, backend or store, or testing what the analysis finds): contract suites
that every registered searcher, backend and store must pass, planted studies (``planted``: trials
proposed by the real searcher, trained on a curve with a known answer), a fresh PostgreSQL
database, a real ``searchsvc serve``, and ``sequential``: a searcher driven in-process against a
plain function, with no Ray (the searcher tests and the quality benchmark).

The suites import pytest; nothing else in searchsvc imports this package.
"""
