#!/usr/bin/env bash
# One-time (idempotent) set-up of a controller: host packages, the project venv with the
# pinned tools, containers.podman and ansible.posix (Galaxy is not reachable: taken from the `ansible`
# wheel on PyPI), the offline stand-in for ansible-test's get-pip download, and the lab image.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3.11}
ANSIBLE_BUNDLE_VERSION=12.3.0   # bundles containers.podman 1.18.0 and ansible.posix 2.1.0

log() { printf '\n== setup: %s\n' "$*"; }

need_apt=()
# gcc, patch, git: lab/build-wheelhouse.sh builds the ABI fixture, the patched wheel and the fork bundle;
# ssh (package openssh-client): the lab's SSH inventory. BIN:PACKAGE where the two names differ
for need in podman runc debootstrap shellcheck gcc patch git ssh:openssh-client; do
  command -v "${need%%:*}" >/dev/null || need_apt+=("${need#*:}")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  log "apt packages: ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/ansible-playbook ] || ! cmp -s requirements-dev.txt .venv/.requirements-dev.txt; then
  log "project venv (.venv) with pinned tools"
  "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r requirements-dev.txt
  cp requirements-dev.txt .venv/.requirements-dev.txt
fi

# containers.podman: the lab's connection; ansible.posix: role sglang_install's patch module
if [ ! -d .deps/ansible_collections/containers/podman ] || [ ! -d .deps/ansible_collections/ansible/posix ]; then
  log "containers.podman and ansible.posix from the ansible $ANSIBLE_BUNDLE_VERSION wheel"
  tmp=$(mktemp -d)
  .venv/bin/pip download -q --no-deps "ansible==$ANSIBLE_BUNDLE_VERSION" -d "$tmp"
  .venv/bin/python - "$tmp" "$ROOT/.deps" <<'PY'
import glob, sys, zipfile
wheel = zipfile.ZipFile(glob.glob(sys.argv[1] + "/ansible-*.whl")[0])
wheel.extractall(sys.argv[2], [n for n in wheel.namelist()
                               if n.startswith(("ansible_collections/containers/podman/",
                                                "ansible_collections/ansible/posix/"))])
PY
  rm -rf "$tmp"
fi

# promtool from Debian's prometheus package, the version the lab's Prometheus runs: the alert rules'
# check and tests (scripts/test.sh lint), without installing Prometheus on the controller
if [ ! -x .deps/bin/promtool ]; then
  log "promtool from Debian's prometheus package"
  tmp=$(mktemp -d)
  (cd "$tmp" && { apt-get download -qq prometheus 2>/dev/null || { apt-get update -qq && apt-get download -qq prometheus; }; } &&
   dpkg-deb -x prometheus_*.deb extracted)
  mkdir -p .deps/bin && cp "$tmp/extracted/usr/bin/promtool" .deps/bin/promtool
  rm -rf "$tmp"
fi

# ansible-test looks for the collection under .../ansible_collections/ddtree/sglang
mkdir -p .deps/tree/ansible_collections/ddtree
ln -sfn "$ROOT" .deps/tree/ansible_collections/ddtree/sglang

# ansible-test sanity downloads get-pip from a host outside PyPI: seed its cache instead
cache="$HOME/.ansible/test/cache"
if [ ! -f "$cache/get_pip_24_2.py" ]; then
  log "offline get-pip stand-in for ansible-test"
  mkdir -p "$cache"
  .venv/bin/pip download -q --no-deps pip==24.2 -d "$cache"
  cp scripts/get_pip_offline.py "$cache/get_pip_24_2.py"
fi

# make demo builds the image itself, beside the wheelhouse (DDTREE_SETUP_SKIP_IMAGE=1)
if [ -z "${DDTREE_SETUP_SKIP_IMAGE:-}" ]; then
  log "lab image"
  lab/build-image.sh
fi

# the key the lab's SSH inventory logs in with as the user deploy (lab/up.sh and molecule mount its
# public half into the lab hosts); known_hosts gets each host's key when the host starts
if [ ! -f lab/.ssh/id_ed25519 ]; then
  log "lab SSH key (lab/.ssh)"
  mkdir -p lab/.ssh && chmod 0700 lab/.ssh
  ssh-keygen -q -t ed25519 -N '' -C ddtree-lab-deploy -f lab/.ssh/id_ed25519
fi
