"""Helpers shared by several test suites (processes under test, waiting with deadlines)."""
