#!/usr/bin/env bash
# Builds both images from this checkout, tagged with the one version (bridge_job.__version__):
#   <registry>/jms-bridge-operator:<version>   images/operator/Dockerfile
#   <registry>/bridge-job:<version>            images/bridge-job/Dockerfile
# The build context is the repository root (the Dockerfiles COPY bridge_job/, jmsbridge/, operator/...).
#
#   scripts/build-images.sh                 # build with docker
#   scripts/build-images.sh --push          # build, then push both
#   scripts/build-images.sh --dry-run       # print the commands only
# Environment: REGISTRY (default ghcr.io/jmsbridge), DOCKER (default docker; podman works too).
# The job image's Spark is not a choice here: it is the pyspark the tests ran (images/bridge-job/Dockerfile).
set -euo pipefail
cd "$(dirname "$0")/.."

push=false
run=
for arg in "$@"; do
    case "$arg" in
        --push) push=true ;;
        --dry-run) run=echo ;;
        *) echo "usage: $0 [--push] [--dry-run]" >&2; exit 2 ;;
    esac
done

registry="${REGISTRY:-ghcr.io/jmsbridge}"
docker="${DOCKER:-docker}"
version="$(PYTHONPATH=. python3 -c 'import bridge_job; print(bridge_job.__version__)')"

for image in jms-bridge-operator:operator bridge-job:bridge-job; do
    name="${image%%:*}"
    dockerfile="images/${image#*:}/Dockerfile"
    tag="$registry/$name:$version"
    # VERSION: the images' org.opencontainers.image.version label.
    $run "$docker" build --file "$dockerfile" --tag "$tag" --build-arg "VERSION=$version" .
    if $push; then
        $run "$docker" push "$tag"
    fi
done
