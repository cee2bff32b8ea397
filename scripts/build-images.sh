#!/usr/bin/env bash
# Builds both images from this checkout, tagged with the one version (bridge_job.__version__):
#   <registry>/jms-bridge-operator:<version>   images/operator/Dockerfile
#   <registry>/bridge-job:<version>            images/bridge-job/Dockerfile
# The build context is the repository root (the Dockerfiles COPY bridge_job/, jmsbridge/, operator/...).
#
#   scripts/build-images.sh                 # build with docker
#   scripts/build-images.sh --push          # build, then push both
#   scripts/build-images.sh --dry-run       # print the commands only
# Environment: REGISTRY (default ghcr.io/jmsbridge), DOCKER (default docker; podman works too),
# SPARK_VERSION (the job image's Spark, default: the Dockerfile's).
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
spark_arg=()
if [ -n "${SPARK_VERSION:-}" ]; then
    spark_arg=(--build-arg "SPARK_VERSION=$SPARK_VERSION")
fi

for image in jms-bridge-operator:operator bridge-job:bridge-job; do
    name="${image%%:*}"
    dockerfile="images/${image#*:}/Dockerfile"
    tag="$registry/$name:$version"
    extra=()
    if [ "$name" = bridge-job ]; then
        extra=("${spark_arg[@]}")
    fi
    $run "$docker" build --file "$dockerfile" --tag "$tag" "${extra[@]}" .
    if $push; then
        $run "$docker" push "$tag"
    fi
done
