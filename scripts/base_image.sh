#!/usr/bin/env bash
# A Debian bookworm Python base image made from Debian packages alone, for sites that mirror Debian but
# reach no image registry (docs/deployment.md, "Air-gapped"). The Dockerfiles take it as PYTHON_IMAGE:
#   scripts/base_image.sh                          -> localhost/ingestion/python-base:bookworm
#   docker build --build-arg PYTHON_IMAGE=localhost/ingestion/python-base:bookworm ...
# and, the same way, the Redis the stack needs (Debian's redis-server 7.0; compose takes it as REDIS_IMAGE):
#   scripts/base_image.sh redis                    -> localhost/ingestion/redis:bookworm
# mmdebstrap uses this machine's own apt sources (no mirror is named), so whatever the host's apt reaches
# (a local mirror, a proxy, a snapshot) is what the image is made from. Bookworm's python3 is 3.11.2.
# Env: BASE_IMAGE (the tag), ENGINE (podman or docker; podman first), SUITE (bookworm).
# Idempotent: an image already tagged is kept unless FORCE=1.
set -euo pipefail

WHAT="${1:-python}"
case "$WHAT" in
    python) BASE_IMAGE="${BASE_IMAGE:-localhost/ingestion/python-base:bookworm}" ;;
    redis) BASE_IMAGE="${REDIS_IMAGE:-localhost/ingestion/redis:bookworm}" ;;
    *) echo "base_image: python or redis, not $WHAT" >&2; exit 2 ;;
esac
SUITE="${SUITE:-bookworm}"
ENGINE="${ENGINE:-$(command -v podman || command -v docker || true)}"
if [[ -z "$ENGINE" ]]; then
    echo "base_image: neither podman nor docker is installed" >&2
    exit 2
fi
if ! command -v mmdebstrap >/dev/null; then
    echo "base_image: mmdebstrap is missing (apt-get install mmdebstrap)" >&2
    exit 2
fi
if [[ "${FORCE:-0}" != "1" ]] && "$ENGINE" image exists "$BASE_IMAGE" 2>/dev/null; then
    echo "base_image: $BASE_IMAGE is there (FORCE=1 makes it again)"
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# What differs between the two images; one mmdebstrap and one import below make either.
# The hooks run in mmdebstrap's shell, which sets $1 to the new root: single quotes on purpose. Both leave no apt
# lists, no docs and no caches behind, like the slim images.
if [[ "$WHAT" == python ]]; then
    # What the python:*-slim images carry that the Dockerfiles use: python3 with venv and pip (pip is
    # replaced by the pinned one inside each image's /opt/venv), CA certificates, useradd (passwd).
    include=python3,python3-venv,python3-pip,ca-certificates,passwd
    extra=(--dpkgopt='path-include=/usr/share/locale/locale.alias')
    # shellcheck disable=SC2016
    hook='chroot "$1" sh -c "ln -sf /usr/bin/python3 /usr/local/bin/python; rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/*.log"'
    changes=(--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'CMD ["python3"]')
    version=(python --version)
else
    # redis-server and redis-cli as the official image lays them out: /data owned by UID 999 (the user compose
    # runs it as), so a fresh named volume mounted there starts writable for that user.
    include=redis-server,redis-tools
    extra=()
    # shellcheck disable=SC2016
    hook='chroot "$1" sh -c "mkdir -p /data && chown 999:999 /data && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/*.log"'
    changes=(--change 'WORKDIR /data' --change 'EXPOSE 6379' --change 'CMD ["redis-server"]')
    version=(redis-server --version)
fi
mmdebstrap \
    --variant=minbase \
    --include="$include" \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    "${extra[@]}" \
    --customize-hook="$hook" \
    "$SUITE" "$work/base.tar"
"$ENGINE" import --change 'ENV LANG=C.UTF-8' "${changes[@]}" "$work/base.tar" "$BASE_IMAGE" >/dev/null
echo "base_image: $BASE_IMAGE ($("$ENGINE" run --rm "$BASE_IMAGE" "${version[@]}" 2>&1))"
