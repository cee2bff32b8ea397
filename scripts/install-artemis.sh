#!/usr/bin/env bash
# Fetches ActiveMQ Artemis from Maven Central with Maven, once, into a cache: the broker's own
# distribution (jmsbridge/artemis_server.py creates and runs a broker instance from it for the tests) and
# its two JMS clients, `artemis-jms-client-all` (javax.jms) and `artemis-jakarta-client-all`
# (jakarta.jms), each in a directory of its own: a bridge's jms.classpath names one of them.
#
# The version is pinned here and nowhere else; everything lands in $ARTEMIS_DIR/<version> and
# $ARTEMIS_DIR/current points at it. Cold: about 10 s and 85 MB.
set -euo pipefail

ARTEMIS_VERSION="2.40.0"

DEST="${ARTEMIS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/jmsbridge/artemis}"
STAMP="artemis-${ARTEMIS_VERSION}"
OUT="$DEST/$STAMP"
if [ -f "$OUT/complete" ]; then
    ln -sfn "$STAMP" "$DEST/current"
    exit 0
fi
command -v mvn >/dev/null || { echo "install-artemis: needs Maven (mvn) on PATH" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fetch() {  # artifact coordinates, directory
    if ! mvn -q -B dependency:copy -Dartifact="$1" -DoutputDirectory="$2" >"$work/mvn.log" 2>&1; then
        cat "$work/mvn.log" >&2
        exit 1
    fi
}
rm -rf "$OUT"
mkdir -p "$OUT/home" "$OUT/clients/javax" "$OUT/clients/jakarta"
fetch "org.apache.activemq:apache-artemis:${ARTEMIS_VERSION}:tar.gz:bin" "$work"
tar xzf "$work/apache-artemis-${ARTEMIS_VERSION}-bin.tar.gz" -C "$OUT/home" --strip-components=1
fetch "org.apache.activemq:artemis-jms-client-all:${ARTEMIS_VERSION}" "$OUT/clients/javax"
fetch "org.apache.activemq:artemis-jakarta-client-all:${ARTEMIS_VERSION}" "$OUT/clients/jakarta"
touch "$OUT/complete"
ln -sfn "$STAMP" "$DEST/current"
echo "install-artemis: ActiveMQ Artemis ${ARTEMIS_VERSION} in $OUT"
