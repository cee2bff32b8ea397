#!/usr/bin/env bash
# Builds both images from this checkout, tagged with the one version (bridge_job.__version__):
#   <registry>/jms-bridge-operator:<version>   images/operator/Dockerfile
#   <registry>/bridge-job:<version>            images/bridge-job/Dockerfile
# The build context is the repository root (the Dockerfiles COPY bridge_job/, jmsbridge/, operator/...).
#
#   scripts/build-images.sh                 # build with docker
#   scripts/build-images.sh --push          # build, then push both
#   scripts/build-images.sh --dry-run       # print the commands only
#   scripts/build-images.sh --push --platforms linux/amd64,linux/arm64
#                                           # one multi-platform image each (docker buildx), pushed: a
#                                           # multi-platform image cannot be kept in the local image store
# Environment: REGISTRY (default ghcr.io/jmsbridge), DOCKER (default docker; podman works too, not with
# --platforms). Both Dockerfiles start from multi-platform images and download nothing of one architecture.
# The job image's Spark is not a choice here: it is the pyspark the tests ran (images/bridge-job/Dockerfile).
set -euo pipefail
cd "$(dirname "$0")/.."

push=false
run=
platforms=
while [ $# -gt 0 ]; do
    case "$1" in
        --push) push=true ;;
        --dry-run) run=echo ;;
        --platforms) platforms="${2:?--platforms needs a list, e.g. linux/amd64,linux/arm64}"; shift ;;
        *) echo "usage: $0 [--push] [--dry-run] [--platforms LIST]" >&2; exit 2 ;;
    esac
    shift
done
if [ -n "$platforms" ] && ! $push; then
    echo "--platforms builds a multi-platform image, which can only be pushed: add --push" >&2
    exit 2
fi

registry="${REGISTRY:-ghcr.io/jmsbridge}"
docker="${DOCKER:-docker}"
version="$(PYTHONPATH=. python3 -c 'import bridge_job; print(bridge_job.__version__)')"

for image in jms-bridge-operator:operator bridge-job:bridge-job; do
    name="${image%%:*}"
    dockerfile="images/${image#*:}/Dockerfile"
    tag="$registry/$name:$version"
    # VERSION: the images' org.opencontainers.image.version label.
    if [ -n "$platforms" ]; then
        $run "$docker" buildx build --platform "$platforms" --file "$dockerfile" --tag "$tag" \
            --build-arg "VERSION=$version" --push .
        continue
    fi
    $run "$docker" build --file "$dockerfile" --tag "$tag" --build-arg "VERSION=$version" .
    if $push; then
        $run "$docker" push "$tag"
    fi
done
