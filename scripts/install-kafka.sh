#!/usr/bin/env bash
# Fetches Apache Kafka's broker (its jars and their runtime dependencies) from Maven Central with Maven,
# once, into a cache: jmsbridge/kafka_server.py starts a single-node KRaft broker from them for the demo,
# the tests and the benchmarks.
#
# The version is pinned here and nowhere else; the jars land in $KAFKA_DIR/<version>/lib and
# $KAFKA_DIR/current points at it. The kafka_2.13 POM brings no logging backend: log4j's SLF4J 2 binding
# goes with it (the older log4j-slf4j-impl pulls slf4j 1.7, and StorageTool then dies with
# ClassNotFoundException: org.slf4j.spi.LoggingEventBuilder). Cold: about 10 s and 43 MB.
set -euo pipefail

KAFKA_VERSION="4.1.1"
LOG4J_VERSION="2.25.3"
SLF4J_VERSION="2.0.17"

DEST="${KAFKA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/jmsbridge/kafka}"
STAMP="kafka-${KAFKA_VERSION}"
OUT="$DEST/$STAMP"
if [ -f "$OUT/lib/kafka_2.13-${KAFKA_VERSION}.jar" ] && [ -f "$OUT/complete" ]; then
    ln -sfn "$STAMP" "$DEST/current"
    exit 0
fi
command -v mvn >/dev/null || { echo "install-kafka: needs Maven (mvn) on PATH" >&2; exit 1; }
command -v java >/dev/null || { echo "install-kafka: needs Java 17 or newer on PATH" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>jmsbridge.test</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>${KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId>
      <version>${LOG4J_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>${SLF4J_VERSION}</version>
    </dependency>
  </dependencies>
</project>
EOF
rm -rf "$OUT"
mkdir -p "$OUT"
if ! mvn -q -B -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$OUT/lib" >"$work/mvn.log" 2>&1; then
    cat "$work/mvn.log" >&2
    exit 1
fi
touch "$OUT/complete"
ln -sfn "$STAMP" "$DEST/current"
echo "install-kafka: Apache Kafka ${KAFKA_VERSION} in $OUT ($(ls "$OUT/lib" | wc -l) jars)"
