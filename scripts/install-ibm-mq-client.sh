#!/usr/bin/env bash
# Fetches IBM MQ's JMS clients from Maven Central with Maven, once, into a cache, for the tests:
# com.ibm.mq.allclient (javax.jms) and com.ibm.mq.jakarta.client (jakarta.jms), each with its runtime
# dependencies in a directory of its own (a bridge's jms.classpath names one). No queue manager can run
# here: the tests show that the adapter builds and configures IBM MQ's connection factories and that a
# connection with no queue manager listening fails with a clear line (tests/jms/test_ibm_mq.py).
#
# The version is pinned here and nowhere else; the jars land in $IBM_MQ_DIR/<version>/{javax,jakarta}
# and $IBM_MQ_DIR/current points at it. Cold: about 15 s and 35 MB.
set -euo pipefail

MQ_VERSION="9.4.4.0"

DEST="${IBM_MQ_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/jmsbridge/ibm-mq}"
STAMP="ibm-mq-${MQ_VERSION}"
OUT="$DEST/$STAMP"
if [ -f "$OUT/complete" ]; then
    ln -sfn "$STAMP" "$DEST/current"
    exit 0
fi
command -v mvn >/dev/null || { echo "install-ibm-mq-client: needs Maven (mvn) on PATH" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rm -rf "$OUT"
for api in javax jakarta; do
    artifact=com.ibm.mq.allclient
    [ "$api" = jakarta ] && artifact=com.ibm.mq.jakarta.client
    cat >"$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>jmsbridge.test</groupId><artifactId>ibm-mq-${api}</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>com.ibm.mq</groupId><artifactId>${artifact}</artifactId><version>${MQ_VERSION}</version></dependency>
  </dependencies>
</project>
POM
    if ! mvn -q -B -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$OUT/$api" >"$work/mvn.log" 2>&1; then
        cat "$work/mvn.log" >&2
        exit 1
    fi
done
touch "$OUT/complete"
ln -sfn "$STAMP" "$DEST/current"
echo "install-ibm-mq-client: IBM MQ ${MQ_VERSION} clients in $OUT"
