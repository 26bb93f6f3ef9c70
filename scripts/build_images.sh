#!/usr/bin/env bash
# Build the four application images with podman or docker, tagged as docker-compose.yml names them.
#   scripts/build_images.sh [docling|chunker|vector-gateway|ingestion-mcp ...]    (default: all four)
# Env:
#   ENGINE          podman or docker (default: podman when installed, else docker)
#   PYTHON_IMAGE    the base (default: the Dockerfiles' python:3.11.13-slim-bookworm); AIRGAP=1 builds and uses
#                   localhost/ingestion/python-base:bookworm from Debian packages (scripts/base_image.sh), and
#                   builds localhost/ingestion/redis:bookworm for compose's REDIS_IMAGE
#   IMAGE_REGISTRY, IMAGE_TAG   as in docker-compose.yml (localhost, 0.1.0)
#   DOCLING_MODELS  slim (default here and in compose) | standard | mounted
#   HOST_PIP=1      let pip inside the build see what this machine's pip sees (its configuration, CA bundle and
#                   local wheel folders, mounted read-only; podman only) and point TORCH_INDEX_URL at the index
#                   pip uses: for machines whose only route to packages is a local mirror or proxy.
#   LAYERS=false    keep no intermediate images (podman --layers=false): no build cache, but each image's throwaway
#                   stages are gone once it is built, so the disk holds the finished images only (the compose smoke
#                   sets it under CI, on a fresh machine with nothing cached to gain from; docs/deployment.md)
#   BUILD_ARGS      more --build-arg flags, verbatim
# Prints one line per image: name, size, seconds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ENGINE="${ENGINE:-$(command -v podman || command -v docker || true)}"
[[ -n "$ENGINE" ]] || { echo "build_images: neither podman nor docker is installed" >&2; exit 2; }
REGISTRY="${IMAGE_REGISTRY:-localhost}"
TAG="${IMAGE_TAG:-0.1.0}"
if [[ "${AIRGAP:-0}" == "1" ]]; then
    PYTHON_IMAGE="${PYTHON_IMAGE:-localhost/ingestion/python-base:bookworm}"
    BASE_IMAGE="$PYTHON_IMAGE" ENGINE="$ENGINE" scripts/base_image.sh python
    # The stack's Redis too (compose's REDIS_IMAGE), from Debian's redis-server.
    ENGINE="$ENGINE" scripts/base_image.sh redis
fi

args=()
[[ -n "${PYTHON_IMAGE:-}" ]] && args+=(--build-arg "PYTHON_IMAGE=$PYTHON_IMAGE")
if [[ "${HOST_PIP:-0}" == "1" ]]; then
    [[ "$(basename "$ENGINE")" == "podman" ]] || { echo "build_images: HOST_PIP=1 needs podman (build-time mounts)" >&2; exit 2; }
    args+=(--network host --build-arg "TORCH_INDEX_URL=${TORCH_INDEX_URL:-https://pypi.org/simple}")
    # What `pip config debug` lists on such a machine: the global and user files, the CA bundle they name, and
    # the local wheel folders; each mounted at the same path, read-only, for the RUN steps only.
    for path in /etc/pip.conf /etc/xdg/pip /root/.config/pip /etc/ssl/certs/ca-certificates.crt \
                /opt/wheels /opt/pypi /opt/pypi-more; do
        [[ -e "$path" ]] && args+=(-v "$path:$path:ro")
    done
elif [[ -n "${TORCH_INDEX_URL:-}" ]]; then
    args+=(--build-arg "TORCH_INDEX_URL=$TORCH_INDEX_URL")
fi
if [[ "${LAYERS:-}" == "false" ]]; then
    [[ "$(basename "$ENGINE")" == "podman" ]] && args+=(--layers=false)  # docker's BuildKit keeps its cache itself
fi
# shellcheck disable=SC2206
[[ -n "${BUILD_ARGS:-}" ]] && args+=($BUILD_ARGS)

declare -A DOCKERFILE=(
    [docling]=services/docling/Dockerfile
    [chunker]=services/chunker/Dockerfile
    [vector-gateway]=services/vector_gateway/Dockerfile
    [ingestion-mcp]=services/ingestion_mcp/Dockerfile
)
declare -A IMAGE=(
    [docling]=docling-service
    [chunker]=chunker-service
    [vector-gateway]=vector-gateway
    [ingestion-mcp]=ingestion-mcp
)
services=("$@")
# The gateway first: its ONNX-export step holds torch for a while, the largest passing use of disk of any build, so
# it runs while the store holds no other image (docs/deployment.md "Disk").
[[ ${#services[@]} -gt 0 ]] || services=(vector-gateway docling chunker ingestion-mcp)
for service in "${services[@]}"; do
    [[ -n "${DOCKERFILE[$service]:-}" ]] || { echo "build_images: unknown image $service" >&2; exit 2; }
    extra=()
    [[ "$service" == docling ]] && extra=(--build-arg "DOCLING_MODELS=${DOCLING_MODELS:-slim}")
    name="$REGISTRY/ingestion/${IMAGE[$service]}:$TAG"
    started=$SECONDS
    "$ENGINE" build "${args[@]}" "${extra[@]}" -f "${DOCKERFILE[$service]}" -t "$name" . >&2
    size="$("$ENGINE" image inspect --format '{{.Size}}' "$name")"
    printf 'build_images: %-48s %6d MB %5d s\n' "$name" "$((size / 1000000))" "$((SECONDS - started))"
done
