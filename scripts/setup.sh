#!/usr/bin/env bash
# Install everything curator needs on a fresh Debian/Ubuntu machine with Python >= 3.11:
# system packages (gcc for curator's native-reads library, redis-server for the Redis Cluster
# backend and its tests, chromium for the report test, libmagic1 for datatrove's WARC reader in the comparisons, python3.11-doc as real
# text for bench/bench_minhash.py), then a virtualenv in .venv with every extra (dask, mpi, extract, filters, redis,
# tokenize, train, deploy, test). Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(redis-server chromium libmagic1 util-linux python3.11-doc openssl iproute2 gcc)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# The system packages, the Triton virtualenv and .venv do not depend on each other: they are
# installed side by side (most of each is waiting on the network and the disk), and the
# script waits for all three before it says done.
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
apt_pid=""
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing system packages: ${missing[*]}"
  { $SUDO apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null; } &
  apt_pid=$!
fi
triton_pid=""
if [ -f scripts/setup_triton.sh ]; then
  bash scripts/setup_triton.sh &
  triton_pid=$!
fi
wait_for() {  # PID WHAT: fail the setup when that background part failed
  [ -z "$1" ] || wait "$1" || { echo "setup: $2 failed" >&2; exit 1; }
}

PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || {
  echo "setup: curator needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PY" -m venv .venv
pip_install() {
  if ! .venv/bin/python -m pip install -q "$@" >.venv/pip.log 2>&1; then
    grep -v "is ignored" .venv/pip.log >&2
    echo "setup: pip install $* failed" >&2
    exit 1
  fi
}
pip_install --upgrade pip
echo "setup: installing curator with all extras into .venv"
pip_install -e ".[all,test]"
.venv/bin/python -c "import curator, dask, mpi4py, redis" || {
  echo "setup: the Python install failed; see the messages above" >&2; exit 1; }
# compile the MinHash kernels once now (numba caches them beside the source) rather than in
# the first dedup run
.venv/bin/python -c "import curator.dedup.minhash as m; m.warm_up()" || {
  echo "setup: compiling the MinHash kernels failed" >&2; exit 1; }
# byte-compile curator and the test helpers once: an editable install is not compiled, and
# where PYTHONDONTWRITEBYTECODE is set every process would compile each module it imports
# again (0.12 s of the 0.71 s CPU of a small `curator run`)
.venv/bin/python -m compileall -q -j 0 curator tests bench >/dev/null || {
  echo "setup: byte-compiling curator failed" >&2; exit 1; }
wait_for "$apt_pid" "installing the system packages"
# the library that sees what native code reads (curator/core/_native_reads.c, see
# docs/running.md): pip built it if a compiler was there before apt finished; now gcc is
.venv/bin/python setup.py -q build_ext --inplace >.venv/build_ext.log 2>&1 || {
  cat .venv/build_ext.log >&2; echo "setup: building curator/core/_native_reads.c failed" >&2
  exit 1; }
wait_for "$triton_pid" "scripts/setup_triton.sh"
echo "setup: done"
