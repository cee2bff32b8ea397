"""The harness that the tests and the benchmarks share: the real brokers and how to drive them, the real
Kubernetes API server and the chart's identities on it, the documents (bridges, routes, Leases) they are
given, and the scenarios (a failover under load) both run.

It lives beside `tests/` rather than in it so that `bench/` stands on the project's code, not on its tests
(an import-linter contract in pyproject.toml keeps `bench` off `tests`). Never shipped: the wheel holds
`bridge_job` and `jmsbridge` only (`[tool.setuptools.packages.find]`).
"""
