#!/usr/bin/env bash
# Sets everything up, then runs the bridge on local brokers (ActiveMQ, Apache Kafka, nats-server) and local
# Spark, sends a handful of JMS messages and prints what arrived in each Kafka topic, then the answers to a
# JMS request (from a Kafka service) and to a NATS request (from a JMS service) (from the project's .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-control-plane  # the demo needs no Kubernetes
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/python -m jmsbridge demo "$@"
