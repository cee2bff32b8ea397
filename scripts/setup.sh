#!/usr/bin/env bash
# Installs everything the job, the operator and the tests need on a fresh Debian machine (as root):
# ActiveMQ Classic from Debian, the project with its Python dependencies from PyPI, helm. Each step is
# skipped when what it installs is there already, so running it again costs a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
[ -f /usr/share/activemq/bin/activemq.jar ] || need_apt+=(activemq)
command -v openssl >/dev/null || need_apt+=(openssl)  # tests/operator/test_kafka_tls.py makes its certificates
if [ ${#need_apt[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# The Debian package starts nothing by itself in a container, but stop a system broker if one runs.
if command -v systemctl >/dev/null && systemctl is-active --quiet activemq 2>/dev/null; then
    systemctl stop activemq || true
fi

# pip only when something is missing or out of date (scripts/installed.py says what).
if python3 scripts/installed.py; then
    echo "setup: this checkout is installed (editable, with its test extra)"
else
    python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e ".[test]"
fi
scripts/install-helm.sh
