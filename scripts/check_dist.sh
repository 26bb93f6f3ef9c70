#!/usr/bin/env bash
# The user's install, checked where nothing of this repository is: a clean Debian bookworm container (python3 3.11.2
# and its pip, made from Debian packages by scripts/base_image.sh; no checkout, no torch) gets dist/ and Debian's
# reference card PDF mounted read-only, makes a venv, runs `pip install --find-links /dist
# 'ingestion-mcp-server[embedded]'` against the package registry, and then scripts/dist_smoke.py (copied in alone):
# first start over stdio, ingest the PDF, search it, restart over streamable HTTP, search, ingest a text, search.
# Then the offline journey (scripts/offline_journey.py, copied in alone; docs/privacy.md) as a user without root: over
# stdio, then over streamable HTTP on the same data, each in a network namespace of its own (unshare -rn) under strace
# (Debian's strace and libunwind8, fetched by this machine's apt-get download and installed in the container: the
# base image carries neither; util-linux, which has unshare, is essential). JOURNEY=0 leaves the journey out.
#   make dist && scripts/check_dist.sh        (make check-dist does both)
# Env: ENGINE (podman), BASE_IMAGE (localhost/ingestion/python-base:bookworm), KEEP_BASE=1 keeps a base image this
# script had to build (default: removed at the end, as is the container), HOST_PIP=0 to not hand the container this
# machine's pip configuration (its CA bundle, index mirrors and wheel folders, mounted read-only as the image builds
# do; docs/deployment.md "Air-gapped"). Prints the install's seconds and size and the smoke's figures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/scripts/podman/containers.conf}"
ENGINE="${ENGINE:-podman}"
BASE_IMAGE="${BASE_IMAGE:-localhost/ingestion/python-base:bookworm}"
PDF_GZ=/usr/share/doc/debian-refcard/refcard-en-a4.pdf.gz
# The journey's documents, as tests/e2e/test_offline_journey.py has them (scripts/system_files.py names the packages).
JOURNEY_PDF_GZ=/usr/share/doc/device-tree-compiler/dtc-paper.pdf.gz
JOURNEY_HTML=/usr/share/doc/base-passwd/users-and-groups.html

ls dist/ingestion_mcp_server-*.whl dist/ingestion_mcp_minilm-*.whl >/dev/null 2>&1 \
    || { echo "check_dist: no wheels in dist/; run make dist first" >&2; exit 2; }
[[ -f "$PDF_GZ" ]] || { echo "check_dist: $PDF_GZ is missing (apt-get install debian-refcard)" >&2; exit 2; }
JOURNEY="${JOURNEY:-1}"
if [[ "$JOURNEY" == 1 && ! -f "$JOURNEY_PDF_GZ" ]]; then
    echo "check_dist: $JOURNEY_PDF_GZ is missing (apt-get install device-tree-compiler), or JOURNEY=0" >&2; exit 2
fi
built_base=0
if ! "$ENGINE" image exists "$BASE_IMAGE"; then
    BASE_IMAGE="$BASE_IMAGE" ENGINE="$ENGINE" scripts/base_image.sh python >&2
    built_base=1
fi
work="$(mktemp -d)"
name="check-dist-$$"
cleanup() {
    "$ENGINE" rm -f "$name" >/dev/null 2>&1 || true
    if [[ "$built_base" == 1 && "${KEEP_BASE:-0}" != 1 ]]; then "$ENGINE" rmi "$BASE_IMAGE" >/dev/null 2>&1 || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
zcat "$PDF_GZ" > "$work/refcard-en-a4.pdf"
cp scripts/dist_smoke.py "$work/"
if [[ "$JOURNEY" == 1 ]]; then
    mkdir "$work/journey" "$work/debs"
    zcat "$JOURNEY_PDF_GZ" > "$work/journey/dtc-paper.pdf"
    cp tests/fixtures/sample.docx "$JOURNEY_HTML" scripts/offline_journey.py "$work/journey/"
    # strace and what it needs beyond the base image (strace's Depends: libc6, libunwind8), of the base's own suite.
    (cd "$work/debs" && apt-get download strace libunwind8 >/dev/null 2>&1) \
        || { echo "check_dist: apt-get download strace libunwind8 failed (apt-get update first), or JOURNEY=0" >&2; exit 2; }
fi
chmod -R a+rX "$work"  # the journey's user reads it

mounts=(-v "$PWD/dist:/dist:ro" -v "$work:/smoke:ro")
if [[ "${HOST_PIP:-1}" == 1 ]]; then
    for path in /etc/pip.conf /etc/xdg/pip /root/.config/pip /etc/ssl/certs/ca-certificates.crt \
                /opt/wheels /opt/pypi /opt/pypi-more; do
        [[ -e "$path" ]] && mounts+=(-v "$path:$path:ro")
    done
fi
# Inside: bookworm's python3 and pip as a user has them; the venv and the data folder live in the container only.
# shellcheck disable=SC2016  # expanded inside the container
inside='set -e
cd /tmp
python3 -m venv /venv
echo "python $(/venv/bin/python --version 2>&1 | cut -d" " -f2), pip $(/venv/bin/pip --version | cut -d" " -f2)"
started=$(date +%s.%N)
/venv/bin/pip install -q --no-cache-dir --disable-pip-version-check --find-links /dist "ingestion-mcp-server[embedded]" \
    > /tmp/pip.log 2>&1 || { grep -v "is ignored:" /tmp/pip.log; exit 1; }
grep -v "is ignored:" /tmp/pip.log || true
ended=$(date +%s.%N)
echo "install_s $(echo "$ended - $started" | python3 -c "import sys; print(round(eval(sys.stdin.read()), 1))")"
echo "venv_mb $(du -sm /venv | cut -f1)"
/venv/bin/pip list 2>/dev/null | grep -i -E "^(torch|sentence-transformers|transformers) " && { echo "torch got installed"; exit 1; }
/venv/bin/python /smoke/dist_smoke.py --pdf /smoke/refcard-en-a4.pdf --work /tmp/smoke
[ -d /smoke/journey ] || exit 0
dpkg -i /smoke/debs/*.deb >/dev/null
useradd --create-home laptop
j=/smoke/journey
home=$(getent passwd laptop | cut -d: -f6)
journey() {
    runuser -u laptop -- /venv/bin/python $j/offline_journey.py --work "$home/journey" --require-isolation \
        --docs $j/dtc-paper.pdf $j/sample.docx $j/users-and-groups.html "$@" --queries \
        "flattened device tree blob compiler" "varroa treatment oxalic acid" "system users and groups uid"
}
echo "offline journey, stdio, as user laptop:"
journey --stop sigterm
echo "offline journey, streamable HTTP, the same data folder:"
journey --transport streamable-http --keep-data --force users-and-groups.html'
started=$SECONDS
"$ENGINE" run --name "$name" --network host "${mounts[@]}" "$BASE_IMAGE" bash -c "$inside"
echo "check_dist: passed in $((SECONDS - started)) s (container run), base image $BASE_IMAGE"
