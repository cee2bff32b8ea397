#!/usr/bin/env bash
# Installs everything the job, the operator and the tests need on a fresh Debian machine (as root):
# ActiveMQ Classic and nats-server from Debian, a virtual environment of the project's own (.venv, made
# with the python3 that runs this script) holding the project with its Python dependencies from PyPI,
# helm and kubectl, Apache Kafka's jars from Maven Central into ~/.cache, and for the tests (not with
# --no-control-plane, as the demo runs it) ActiveMQ Artemis, IBM MQ's JMS clients and Apicurio Registry from
# Maven Central and a Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager) built from the Go module
# proxy, into ~/.cache.
# Each step is skipped when what it installs is there already, so running it again costs a few seconds;
# the control plane's first build takes 6-10 minutes.
#
# A virtual environment because Debian's own Python refuses pip installs (PEP 668), and so that pip
# never sees, nor complains about, packages that are not ours. Afterwards: `. .venv/bin/activate`.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv

need_apt=()
[ -f /usr/share/activemq/bin/activemq.jar ] || need_apt+=(activemq)
command -v nats-server >/dev/null || need_apt+=(nats-server)  # jmsbridge.local.NatsServer runs it
command -v mvn >/dev/null || need_apt+=(maven)  # scripts/install-kafka.sh fetches Kafka's jars with it
# Kafka's broker and ActiveMQ; keytool makes the JMS brokers' TLS trust stores (jmsbridge.certificates)
{ command -v java && command -v keytool; } >/dev/null || need_apt+=(openjdk-17-jre-headless)
command -v openssl >/dev/null || need_apt+=(openssl)  # jmsbridge.certificates: the local servers' TLS
# Debian ships venv's pip bootstrap (ensurepip) apart from python3: `python3 -m venv` fails without it.
if [ ! -x "$VENV/bin/python" ] && ! python3 -c 'import ensurepip' 2>/dev/null; then
    need_apt+=(python3-venv)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# The Debian packages start nothing by themselves in a container, but stop a system broker if one runs
# (nats-server's service would hold port 4222; the local brokers take free ports of their own anyway).
for service in activemq nats-server; do
    if command -v systemctl >/dev/null && systemctl is-active --quiet "$service" 2>/dev/null; then
        systemctl stop "$service" || true
    fi
done

# A venv whose interpreter is gone (another python3 removed or moved) is made again.
if ! "$VENV/bin/python" -c '' 2>/dev/null; then
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    echo "setup: made $VENV with $("$VENV/bin/python" --version) ($(command -v python3))"
fi

# pip only when something is missing or out of date (scripts/installed.py, run in the venv, says what).
if "$VENV/bin/python" scripts/installed.py; then
    echo "setup: this checkout is installed in $VENV (editable, with its test extra)"
else
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --root-user-action=ignore -e ".[test]"
fi
# Spark's JVM starts in half the CPU with its classes mapped from an archive (jmsbridge/class_archive.py):
# made once, in about 25 s, into ~/.cache. Only a speed-up: without it Spark starts as before (and
# tests/test_class_archive.py says why it is missing).
if ! "$VENV/bin/python" -m jmsbridge.class_archive >/dev/null; then
    echo "setup: no class-data archive for Spark's JVM (see above); local runs start Spark without it" >&2
fi
PYTHON="$VENV/bin/python" scripts/install-helm.sh
scripts/install-kafka.sh
# The test brokers' JVM maps an archive of Kafka's classes the same way (jmsbridge/kafka_server.py): made
# once, in about 15 s; without it a broker starts as before. librdkafka's notes go to a log, shown on failure.
kafka_log="$(mktemp)"
if ! "$VENV/bin/python" -m jmsbridge.kafka_server >/dev/null 2>"$kafka_log"; then
    tail -n 30 "$kafka_log" >&2
    echo "setup: no class-data archive for Kafka's JVM (see above); brokers start without it" >&2
fi
rm -f "$kafka_log"
if [ "${1:-}" != "--no-control-plane" ]; then
    scripts/install-artemis.sh
    scripts/install-apicurio.sh
    scripts/install-ibm-mq-client.sh
    scripts/install-control-plane.sh
fi
