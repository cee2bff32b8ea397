"""The driver on top of everything: starts the flows' queries and the ingest, follows the lease, config
changes and failures, turns any failure into one stop line, and exports telemetry.
"""
