#!/usr/bin/env bash
# Fetches Apicurio Registry (the Confluent-compatible schema registry the schema-registry formats are tested
# against) from Maven Central with Maven, once, into a cache: jmsbridge/registry_server.py runs it on
# loopback with in-memory storage.
#
# The version is pinned here and nowhere else; the application lands in $APICURIO_DIR/<version>/app and
# $APICURIO_DIR/current points at it. It needs Java 21 or newer (class file version 65): on these machines
# the Temurin JDK beside Debian's Java 17, which registry_server.py finds. Cold: about 12 s and 160 MB.
set -euo pipefail

APICURIO_VERSION="3.3.3"

DEST="${APICURIO_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/jmsbridge/apicurio}"
STAMP="apicurio-${APICURIO_VERSION}"
OUT="$DEST/$STAMP"
if [ -f "$OUT/complete" ]; then
    ln -sfn "$STAMP" "$DEST/current"
    exit 0
fi
command -v mvn >/dev/null || { echo "install-apicurio: needs Maven (mvn) on PATH" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if ! mvn -q -B dependency:copy -Dartifact="io.apicurio:apicurio-registry-app:${APICURIO_VERSION}:tar.gz:all" \
    -DoutputDirectory="$work" >"$work/mvn.log" 2>&1; then
    cat "$work/mvn.log" >&2
    exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT/app"
tar xzf "$work/apicurio-registry-app-${APICURIO_VERSION}-all.tar.gz" -C "$OUT/app"
touch "$OUT/complete"
ln -sfn "$STAMP" "$DEST/current"
echo "install-apicurio: Apicurio Registry ${APICURIO_VERSION} in $OUT"
