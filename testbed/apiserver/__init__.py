"""A real Kubernetes API server for the tests and the benchmarks: the admin's client, the chart's
identities on it, the SparkApplication CRD, and the `helm` and `kubectl` binaries."""
