"""The bridge job: JMS -> journal -> Spark -> Kafka (and NATS), Kafka -> JMS, and NATS -> JMS."""

# The release version, written here only: the package metadata (pyproject.toml) and the default job image
# (`config.DEFAULT_JOB_IMAGE`) read it; Chart.yaml and the examples must say the same (tests/test_version.py).
__version__ = "0.1.0"
