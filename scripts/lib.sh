# Shared setup for scripts/demo.sh and scripts/test.sh: installs what codemode
# needs on a Debian 12 machine, idempotently (a second run does no work).
# Sourced, not executed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOCAL="$ROOT/.codemode"
NODE_DIR="$LOCAL/node"
VENV="$LOCAL/venv"
BIN="$ROOT/target/release"

# Versions of the third-party MCP servers and clients the demo and tests use.
NPM_PACKAGES=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory@2026.8.31"
  "@modelcontextprotocol/inspector@0.15.0"
  "@modelcontextprotocol/sdk@1.32.2"
)
# The last two check the guest's embedded Python (scripts/test.sh).
PIP_PACKAGES=("mcp-server-time==2026.10.19" "mcp==2.3.0" "ruff==0.17.5" "mypy==2.4.1")
APT_PACKAGES=(podman runc bubblewrap uidmap slirp4netns fuse-overlayfs python3.11 python3.11-venv
  # Building the guest's CPython (images/cpython/build.sh): the static
  # archives its extension modules link, and the time-zone database the
  # guest carries (tzdata).
  build-essential pkg-config libffi-dev libssl-dev libsqlite3-dev liblzma-dev libbz2-dev zlib1g-dev uuid-dev tzdata)
# The guest's CPython: Debian's pinned source package by default; a release
# tarball instead with --python-source TARBALL (or CODEMODE_PYTHON_SOURCE).
PYTHON_SOURCE="${CODEMODE_PYTHON_SOURCE:-}"
# The target the static guest is built for (crt-static needs an explicit one).
GUEST_TARGET=x86_64-unknown-linux-gnu

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root to run: $*" >&2; return 1; fi
}

install_apt() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  command -v node >/dev/null || missing+=(nodejs npm)
  command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup) first" >&2; return 1; }
  if [ ${#missing[@]} -gt 0 ]; then
    log "apt: installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

install_servers() {
  local stamp="$NODE_DIR/.installed" want
  want="$(printf '%s\n' "${NPM_PACKAGES[@]}")"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    log "npm: installing MCP servers and the Inspector into $NODE_DIR"
    mkdir -p "$NODE_DIR"
    (cd "$NODE_DIR" && [ -f package.json ] || echo '{"private":true}' > "$NODE_DIR/package.json")
    npm install --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error "${NPM_PACKAGES[@]}" >&2
    echo "$want" > "$stamp"
  fi
  local pstamp="$VENV/.installed"
  want="$(printf '%s\n' "${PIP_PACKAGES[@]}")"
  if [ ! -f "$pstamp" ] || [ "$(cat "$pstamp")" != "$want" ]; then
    log "pip: installing ${PIP_PACKAGES[*]} into $VENV"
    /usr/bin/python3.11 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "${PIP_PACKAGES[@]}" >&2
    echo "$want" > "$pstamp"
  fi
}

# Parses the README commands' own flag: --python-source TARBALL.
parse_setup_args() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --python-source) PYTHON_SOURCE="$(realpath "$2")"; shift 2 ;;
      *) echo "unknown argument: $1 (expected --python-source TARBALL)" >&2; return 2 ;;
    esac
  done
}

# The CPython the guest embeds, built once into ~/.cache/codemode (a second
# run finds it and does nothing).
build_python() {
  "$ROOT/images/cpython/build.sh" ${PYTHON_SOURCE:+--python-source "$PYTHON_SOURCE"}
}

# codemode, the dynamic guest (cargo's own target/release/codemode-guest,
# for images built from wheels) and the static guest, built for an explicit
# target with crt-static and copied beside them as codemode-guest-static
# (bubblewrap and the default image run it; see host/src/runtime/guest.rs).
build_release() {
  log "cargo: building codemode and codemode-guest (release)"
  (cd "$ROOT" && cargo build --release --locked -p codemode -p codemode-guest)
  log "cargo: building the static codemode-guest"
  (cd "$ROOT" && RUSTFLAGS="-C target-feature=+crt-static" \
    cargo build --release --locked -p codemode-guest --target "$GUEST_TARGET")
  install -m 755 "$ROOT/target/$GUEST_TARGET/release/codemode-guest" "$BIN/codemode-guest-static"
}

build_image() {
  # `image build` skips the work when the image already holds this guest.
  log "image: building the sandbox images offline (skipped when up to date)"
  "$BIN/codemode" image build
  # The datascience image's wheels come through the project venv's pip.
  if [ "${1:-}" = all ]; then CODEMODE_PIP="$VENV/bin/pip" "$BIN/codemode" image build --variant datascience; fi
}

# Writes the example servers config pointing at real third-party servers,
# into ./mcp-servers/ (a location codemode discovers when run from the
# checkout; gitignored), and approves it: a project config's servers start
# only once approved (`codemode trust`), and this one is ours.
DEMO_CONFIG="$ROOT/mcp-servers/demo.json"
write_demo_config() {
  mkdir -p "$ROOT/mcp-servers"
  cat > "$DEMO_CONFIG" <<JSON
{
  "mcpServers": {
    "everything": {
      "command": "node",
      "args": ["$NODE_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"],
      "description": "MCP reference server: echo, add, long-running operations, images"
    },
    "time": {
      "command": "$VENV/bin/mcp-server-time",
      "args": ["--local-timezone", "UTC"],
      "description": "Current time and time-zone conversion"
    },
    "memory": {
      "command": "node",
      "args": ["$NODE_DIR/node_modules/@modelcontextprotocol/server-memory/dist/index.js"],
      "env": {"MEMORY_FILE_PATH": "$LOCAL/memory.jsonl"},
      "description": "A knowledge graph kept in a local file"
    }
  }
}
JSON
  "$BIN/codemode" trust "$DEMO_CONFIG" >/dev/null
}

# The security suite also runs as an unprivileged user: codemode must hold
# without root. This account is created for it (with subordinate ids for
# rootless podman) and gets its own rootless image store.
CI_USER=codemode-ci
# Tests an unprivileged codemode cannot pass on a cgroup v1 host, each for
# a reason `codemode doctor` reports there:
# - security::as_root: a CPU quota and per-sandbox cgroups need a cgroup
#   codemode can create (root, or a delegated cgroup v2 subtree);
# - process_limit_holds::podman and memory_limit_holds::podman: rootless
#   podman on cgroup v1 ignores --pids-limit and --memory, and all its
#   containers share one user namespace, so RLIMIT_NPROC is shared too
#   (bubblewrap's per-sandbox user namespace holds: those tests run);
#   the same sharing is why a_fork_loop_does_not_starve_other_sessions
#   runs unprivileged on bubblewrap only.
UNPRIVILEGED_SKIPS=(
  --skip security::as_root
  --skip security::isolation::process_limit_holds::podman
  --skip security::isolation::memory_limit_holds::podman
  --skip security::resources::a_fork_loop_does_not_starve_other_sessions::podman
)

prepare_ci_user() {
  id "$CI_USER" >/dev/null 2>&1 || as_root useradd --create-home --shell /bin/bash "$CI_USER"
  grep -q "^$CI_USER:" /etc/subuid || as_root usermod --add-subuids 300000-365535 "$CI_USER"
  grep -q "^$CI_USER:" /etc/subgid || as_root usermod --add-subgids 300000-365535 "$CI_USER"
  local uid; uid="$(id -u "$CI_USER")"
  as_root install -d -m 700 -o "$CI_USER" -g "$CI_USER" "/run/user/$uid"
}

# Runs a command as $CI_USER with the environment rootless podman needs.
as_ci_user() {
  local uid home; uid="$(id -u "$CI_USER")"; home="$(getent passwd "$CI_USER" | cut -d: -f6)"
  as_root runuser -u "$CI_USER" -- env -i HOME="$home" USER="$CI_USER" \
    PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR="/run/user/$uid" \
    XDG_DATA_HOME="$home/.local/share" XDG_CONFIG_HOME="$home/.config" \
    CODEMODE_TEST_NODE_DIR="$NODE_DIR" CODEMODE_TEST_VENV="$VENV" "$@"
}

setup_all() {
  install_apt
  install_servers
  build_python
  build_release
  build_image
  write_demo_config
}
