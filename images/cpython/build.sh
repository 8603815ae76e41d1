#!/usr/bin/env bash
# Builds the CPython the guest embeds, once, into a cache outside the
# checkout, and points the checkout at it (.codemode/cpython).
#
#   images/cpython/build.sh [--python-source TARBALL] [--cache DIR]
#
# Without --python-source the source is Debian's package, pinned below and
# downloaded with apt through a private sources list (no change to the
# system's), so apt verifies it against Debian's signed release files; the
# upstream tarball's checksum is checked too. --python-source takes a
# CPython release tarball (python.org's Python-3.X.Y.tar.xz, or any other),
# for hosts without Debian's archive.
#
# The build: every stdlib extension module compiled into libpython
# (MODULE_BUILDTYPE=static), the libraries they need from the host's static
# archives (Debian's -dev packages), no shared libpython. Then the stdlib is
# marshalled into the frozen-module table the guest embeds
# (freeze_stdlib.py). The cache key is the source's checksum and this
# folder's files, so a second run (of this script, or of either README
# command) finds the build and does nothing.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

# The pinned source: Debian's python3.13 from trixie (stable). Debian's
# python3.14 source package could not be downloaded from this project's
# machines (its pool answers 404, 2026-11-23); moving to it is a change of
# the lines below once it can.
DEBIAN_PACKAGE=python3.13
DEBIAN_SOURCES=(
  "http://deb.debian.org/debian trixie main"
  "http://deb.debian.org/debian trixie-updates main"
  "http://deb.debian.org/debian-security trixie-security main"
)
UPSTREAM_VERSION=3.13.5
UPSTREAM_SHA256=93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640

source_tarball=""
cache="${CODEMODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/codemode}"
while [ $# -gt 0 ]; do
  case "$1" in
    --python-source) source_tarball="$(realpath "$2")"; shift 2 ;;
    --cache) cache="$2"; shift 2 ;;
    *) echo "usage: $0 [--python-source TARBALL] [--cache DIR]" >&2; exit 2 ;;
  esac
done

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# The frozen stdlib is made from the build by freeze_stdlib.py, keyed on
# that script alone: changing which modules are frozen re-freezes (seconds)
# without rebuilding CPython (minutes).
freeze_key="$(sha256sum "$HERE/freeze_stdlib.py" | cut -c1-12)"

# What the guest's build reads (.cargo/config.toml): .codemode/cpython in
# the checkout, links to the cached build's description and frozen stdlib.
link_checkout() {
  local prefix="$1" frozen="$1/frozen-$freeze_key" series python
  if [ ! -f "$frozen/stdlib.idx" ]; then
    series="$(sed -n 's/^version=//p' "$prefix/pyo3-config.txt")"
    python="$(sed -n 's/^executable=//p' "$prefix/pyo3-config.txt")"
    "$python" "$HERE/freeze_stdlib.py" "$prefix/lib/python$series" \
      "$(dirname "$(ls "$prefix"/lib/python"$series"/_sysconfigdata_*.py | head -1)")" "$frozen.tmp"
    mv "$frozen.tmp" "$frozen"
  fi
  mkdir -p "$ROOT/.codemode/cpython"
  ln -sfn "$prefix/pyo3-config.txt" "$ROOT/.codemode/cpython/pyo3-config.txt"
  ln -sfn "$frozen" "$ROOT/.codemode/cpython/frozen"
}

recipe="$(sha256sum "$HERE/build.sh" | cut -c1-12)"
if [ -n "$source_tarball" ]; then
  source_sha="$(sha256sum "$source_tarball" | cut -d' ' -f1)"
else
  source_sha="$UPSTREAM_SHA256"
fi
prefix="$cache/cpython/${source_sha:0:12}-$recipe"
if [ -f "$prefix/.complete" ]; then
  link_checkout "$prefix"
  exit 0
fi

started=$(date +%s)
work="$cache/cpython/work-$$"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"

if [ -z "$source_tarball" ]; then
  log "cpython: downloading Debian's $DEBIAN_PACKAGE source (apt verifies it)"
  lists="$cache/apt-lists"
  mkdir -p "$lists/partial" "$work/apt/cache/archives/partial"
  for entry in "${DEBIAN_SOURCES[@]}"; do echo "deb-src $entry"; done > "$work/apt/sources.list"
  apt_opts=(-o "Dir::Etc::sourcelist=$work/apt/sources.list" -o Dir::Etc::sourceparts=/dev/null
            -o "Dir::State::Lists=$lists" -o "Dir::Cache=$work/apt/cache"
            -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
  apt-get "${apt_opts[@]}" -qq update
  (cd "$work" && apt-get "${apt_opts[@]}" -qq source --download-only "$DEBIAN_PACKAGE" >&2)
  source_tarball="$work/${DEBIAN_PACKAGE}_${UPSTREAM_VERSION}.orig.tar.xz"
  if [ ! -f "$source_tarball" ]; then
    echo "Debian's $DEBIAN_PACKAGE is no longer at upstream version $UPSTREAM_VERSION:" \
         "update the pin in $HERE/build.sh, or pass --python-source TARBALL" >&2
    exit 1
  fi
  echo "$UPSTREAM_SHA256  $source_tarball" | sha256sum --check --quiet
fi

log "cpython: building from $(basename "$source_tarball") into $prefix"
tar -xf "$source_tarball" -C "$work/src" --strip-components=1
cd "$work/src"
# Cross-compiling (Cross.toml): CPython's configure needs the target triple
# and a native interpreter of the same version to run its build steps.
cross=()
if [ -n "${CODEMODE_CPYTHON_HOST:-}" ]; then
  cross=(--host="$CODEMODE_CPYTHON_HOST" --build="$(uname -m)-linux-gnu"
         --with-build-python="${CODEMODE_BUILD_PYTHON:?set CODEMODE_BUILD_PYTHON to a native build}"
         ac_cv_file__dev_ptmx=yes ac_cv_file__dev_ptc=no)
fi
# Modules a sandbox has no use for (no terminal, no display, no dbm
# libraries) are left out rather than linked statically.
MODULE_BUILDTYPE=static ./configure "${cross[@]}" --prefix="$prefix" --disable-shared --without-ensurepip \
  --without-system-libmpdec --without-system-expat --disable-test-modules \
  py_cv_module__tkinter=n/a py_cv_module__curses=n/a py_cv_module__curses_panel=n/a \
  py_cv_module_readline=n/a py_cv_module__dbm=n/a py_cv_module__gdbm=n/a \
  CFLAGS="-g0" >"$work/configure.log" 2>&1 || { tail -40 "$work/configure.log" >&2; exit 1; }
make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -40 "$work/make.log" >&2; exit 1; }
# Every module the build meant to compile in must be there.
if grep -E "failed on import|[1-9][0-9]* missing" "$work/make.log" | grep -v " 0 missing, 0 failed" >&2; then
  echo "cpython: some stdlib extension modules did not build (see above)" >&2
  exit 1
fi
make install >"$work/install.log" 2>&1 || { tail -40 "$work/install.log" >&2; exit 1; }

# The interpreter that runs build steps: this build's, or the native one
# when cross-compiling.
runner="${CODEMODE_BUILD_PYTHON:-./python}"
series="$("$runner" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
lib="$prefix/lib"
# The archives the static modules link besides libpython.
cp Modules/_decimal/libmpdec/libmpdec.a Modules/_hacl/libHacl_Hash_SHA2.a Modules/expat/libexpat.a "$lib/"
cp "libpython$series.a" "$lib/"

{
  echo "implementation=CPython"
  echo "version=$series"
  echo "shared=false"
  echo "abi3=false"
  echo "lib_name=python$series"
  echo "lib_dir=$lib"
  echo "executable=${CODEMODE_BUILD_PYTHON:-$prefix/bin/python$series}"
  echo "pointer_width=64"
  echo "build_flags="
  echo "suppress_build_script_link_lines=false"
  for archive in mpdec Hacl_Hash_SHA2 expat; do
    echo "extra_build_script_line=cargo:rustc-link-lib=static=$archive"
  done
  # From the host's -dev packages: static archives when the guest links
  # with crt-static, shared libraries for the dynamic flavour.
  for library in ffi sqlite3 ssl crypto uuid lzma bz2 z m util dl pthread; do
    echo "extra_build_script_line=cargo:rustc-link-lib=$library"
  done
} > "$prefix/pyo3-config.txt"
echo "$(($(date +%s) - started))" > "$prefix/build-seconds"
touch "$prefix/.complete"
link_checkout "$prefix"
log "cpython: $series built in $(cat "$prefix/build-seconds")s"
