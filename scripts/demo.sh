#!/usr/bin/env bash
# Sets everything up, then runs the bridge on local brokers (ActiveMQ, noida-db) and local Spark,
# sends a handful of JMS messages and prints what arrived in each Kafka topic.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec python3 -m jmsbridge demo "$@"
