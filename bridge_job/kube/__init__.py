"""The Kubernetes adapter of the job: the API over plain HTTP, the active/standby Lease, and the health
ConfigMap the operator reads.
"""
