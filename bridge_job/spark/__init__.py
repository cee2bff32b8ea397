"""Spark plumbing shared by the flows: offset ranges as Spark checkpoints them, the range-planning
stream reader, and reading progress reports.
"""
