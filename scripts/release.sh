#!/usr/bin/env bash
# The release artefacts of this checkout, all at the one version (bridge_job.__version__):
#   <out>/jms-bridge-operator-<version>.tgz   the Helm chart (helm package)
#   <out>/install.yaml                        both CRDs in one file, for `kubectl apply --server-side -f`
#   <out>/jms_bridge_operator-<version>-py3-none-any.whl   the `jmsbridge` CLI, for `pip install`
#   both images, tagged <registry>/<name>:<version>   (scripts/build-images.sh; needs a docker daemon)
#
#   scripts/release.sh                  # everything; the images only where docker can build them
#   scripts/release.sh --push           # the same, and push the images and the chart (oci://<registry>/charts)
#   scripts/release.sh --push --platforms linux/amd64,linux/arm64   # multi-platform images (docker buildx)
#   scripts/release.sh --no-images      # the chart and install.yaml only
#   scripts/release.sh --out DIR        # somewhere else than dist/ (gitignored)
# Environment: REGISTRY and DOCKER as for scripts/build-images.sh; PYTHON (default python3, with pip: .venv/bin/python)
# builds the wheel. CONTRIBUTING.md (Release) says when.
set -euo pipefail
cd "$(dirname "$0")/.."

images=true
push=()
platforms=()
out=dist
while [ $# -gt 0 ]; do
    case "$1" in
        --no-images) images=false ;;
        --push) push=(--push) ;;
        --platforms) platforms=(--platforms "${2:?--platforms needs a list}"); shift ;;
        --out) out="${2:?--out needs a directory}"; shift ;;
        *) echo "usage: $0 [--no-images] [--push [--platforms LIST]] [--out DIR]" >&2; exit 2 ;;
    esac
    shift
done

version="$(PYTHONPATH=. python3 -c 'import bridge_job; print(bridge_job.__version__)')"
chart=charts/jms-bridge-operator
# Chart.yaml states its versions itself (helm package would otherwise ship what it says): they must agree.
chart_version="$(sed -n 's/^version: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$chart/Chart.yaml")"
app_version="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$chart/Chart.yaml")"
if [ "$chart_version" != "$version" ] || [ "$app_version" != "$version" ]; then
    echo "$chart/Chart.yaml says version $chart_version, appVersion $app_version;" \
        "bridge_job.__version__ is $version: set both to it" >&2
    exit 1
fi
for crd in crds/*.yaml; do
    if ! cmp -s "$crd" "$chart/crds/$(basename "$crd")"; then
        echo "$chart/crds/ is not a copy of crds/ ($crd): python -m jmsbridge_operator.crdgen --root ." >&2
        exit 1
    fi
done

mkdir -p "$out"
helm package "$chart" --destination "$out" >/dev/null
echo "chart:    $out/jms-bridge-operator-$version.tgz"
if [ ${#push[@]} -gt 0 ]; then
    helm push "$out/jms-bridge-operator-$version.tgz" "oci://${REGISTRY:-ghcr.io/jmsbridge}/charts"
fi

# pip builds it with the setuptools pyproject.toml asks for (from the index, or pip's cache), from a copy
# of what the wheel is made of: setuptools writes build/ and *.egg-info into the tree it builds, and two
# releases at once (the suite's workers) in one tree took each other's files away.
sources=$(mktemp -d)
trap 'rm -rf "$sources"' EXIT
tar -cf - --exclude=__pycache__ pyproject.toml README.md bridge_job jmsbridge operator | tar -xf - -C "$sources"
"${PYTHON:-python3}" -m pip wheel --quiet --no-deps --wheel-dir "$(realpath "$out")" "$sources" >/dev/null
echo "CLI:      $out/jms_bridge_operator-$version-py3-none-any.whl"

{
    echo "# The CustomResourceDefinitions of the JMS Bridge Operator $version:"
    echo "#   kubectl apply --server-side -f install.yaml"
    for crd in crds/*.yaml; do
        echo "---"
        cat "$crd"
    done
} >"$out/install.yaml"
echo "CRDs:     $out/install.yaml"

if ! $images; then
    echo "images:   not built (--no-images)"
elif ! "${DOCKER:-docker}" info >/dev/null 2>&1; then
    # A release without its images is no release: say so loudly, but leave the rest usable.
    echo "images:   NOT BUILT: no docker daemon answers here (${DOCKER:-docker} info failed);" \
        "build them where one does: scripts/build-images.sh ${push[*]:-} ${platforms[*]:-}" >&2
else
    scripts/build-images.sh "${push[@]}" "${platforms[@]}"
    echo "images:   ${REGISTRY:-ghcr.io/jmsbridge}/{jms-bridge-operator,bridge-job}:$version"
fi
