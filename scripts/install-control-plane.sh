#!/usr/bin/env bash
# Builds a real Kubernetes control plane for the tests (etcd, kube-apiserver, kube-controller-manager) from
# the Go module proxy into a cache, once: jmsbridge/control_plane.py starts them on loopback.
#
# The versions are pinned here and nowhere else; the binaries land in $CONTROL_PLANE_DIR/<stamp>/ and
# $CONTROL_PLANE_DIR/current points at the newest build, which is what the tests run.
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod requires its staging modules (k8s.io/api,
# k8s.io/apiserver, ...) at v0.0.0 and replaces them with directories its module zip lacks. A wrapper
# module that requires it and replaces each of those with the same release's published module builds
# (kubernetes/kubernetes#79384). Cold: about 6 minutes on 2 cores (361 s measured), 735 MB of modules and
# 2.3 GB of Go's build cache; a second run finds the stamp and returns at once.
set -euo pipefail

KUBERNETES_VERSION="1.34.3"
ETCD_VERSION="3.6.4"

DEST="${CONTROL_PLANE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/jmsbridge/control-plane}"
STAMP="kubernetes-v${KUBERNETES_VERSION}-etcd-v${ETCD_VERSION}"
OUT="$DEST/$STAMP"
BINARIES=(etcd kube-apiserver kube-controller-manager)

have_all() { for b in "${BINARIES[@]}"; do [ -x "$OUT/$b" ] || return 1; done; }
if have_all; then
    ln -sfn "$STAMP" "$DEST/current"
    exit 0
fi
started=$SECONDS
mkdir -p "$OUT"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
PATH="$PATH:/usr/local/go/bin"  # where Go's own archive installs it, if not on PATH already
command -v go >/dev/null || { echo "install-control-plane: needs Go (go 1.24 or newer) on PATH" >&2; exit 1; }
# A step's chatter only when it fails.
quiet() { "$@" >"$work/step.log" 2>&1 || { cat "$work/step.log" >&2; return 1; }; }

export CGO_ENABLED=0 GOFLAGS=-mod=mod

# etcd: the server module's main package is the etcd binary.
if [ ! -x "$OUT/etcd" ]; then
    mkdir "$work/etcd"
    (cd "$work/etcd" && quiet go mod init jmsbridge.test/etcd &&
        quiet go get "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}" &&
        go build -trimpath -o "$OUT/etcd" go.etcd.io/etcd/server/v3)
    echo "install-control-plane: built etcd v${ETCD_VERSION} ($((SECONDS - started)) s)"
fi

mkdir "$work/kubernetes"
cd "$work/kubernetes"
quiet go mod init jmsbridge.test/control-plane
gomod="$(go mod download -json "k8s.io/kubernetes@v${KUBERNETES_VERSION}" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')"
{
    echo "require k8s.io/kubernetes v${KUBERNETES_VERSION}"
    # Every staging module, pinned to the published module of the same release (v1.X.Y -> v0.X.Y).
    sed -n 's/^\t\(k8s\.io\/[a-z0-9.-]*\) v0\.0\.0$/\1/p' "$gomod" |
        while read -r module; do echo "replace $module => $module v0.${KUBERNETES_VERSION#1.}"; done
} >>go.mod
# A file that imports the commands, so that `go mod tidy` keeps what they need.
cat >tools.go <<'EOF'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
EOF
quiet go mod tidy
for b in kube-apiserver kube-controller-manager; do
    [ -x "$OUT/$b" ] && continue
    minor="${KUBERNETES_VERSION#1.}"
    go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v${KUBERNETES_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor%%.*}" \
        -o "$OUT/$b" "k8s.io/kubernetes/cmd/$b"
    echo "install-control-plane: built $b v${KUBERNETES_VERSION} ($((SECONDS - started)) s)"
done
have_all
ln -sfn "$STAMP" "$DEST/current"
echo "install-control-plane: the control plane took $((SECONDS - started)) s to build, once (in $OUT)"
