#!/usr/bin/env bash
# Command two: the same setup as the demo, then every check CI runs:
# formatting, clippy, ruff and mypy on the guest's Python, and the whole
# test suite against real sandboxes and real MCP servers. A missing tool is
# installed, never skipped.
# Takes --python-source TARBALL on hosts without Debian's archive.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_setup_args "$@"
install_apt
install_servers
build_python
build_release
build_image all
write_demo_config
cd "$ROOT"
log "cargo fmt --check"
cargo fmt --all -- --check
log "cargo clippy"
cargo clippy --locked --workspace --all-targets --features codemode-tests/system -- -D warnings
log "ruff and mypy (the guest's Python)"
"$VENV/bin/ruff" check guest/python
"$VENV/bin/ruff" format --check guest/python
"$VENV/bin/mypy" --config-file guest/python/mypy.ini guest/python
log "cargo test"
# Images the tests build from requirements fetch wheels with the venv's pip.
export CODEMODE_TEST_NODE_DIR="$NODE_DIR" CODEMODE_TEST_VENV="$VENV" CODEMODE_PIP="$VENV/bin/pip"
log_file="$LOCAL/test.log"
# --lib --bins --tests: every unit and integration test (the crates have no
# doc tests, and the benchmark is run separately with `cargo bench`).
skips=()
# Run by an ordinary user, this pass is already the unprivileged one.
[ "$(id -u)" = 0 ] || skips=("${UNPRIVILEGED_SKIPS[@]}")
set +e
cargo test --locked --workspace --release --no-fail-fast --lib --bins --tests --features codemode-tests/system -- --test-threads 2 "${skips[@]}" 2>&1 | tee "$log_file"
status=${PIPESTATUS[0]}
set -e
if [ "$(id -u)" = 0 ]; then
  log "security suite as the unprivileged user $CI_USER"
  prepare_ci_user
  as_ci_user "$BIN/codemode" image build >&2
  suite="$(cargo test --locked --release -p codemode-tests --features system --test all --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "all" and m.get("executable"):
        print(m["executable"])')"
  set +e
  (cd /tmp && as_ci_user "$suite" security:: --test-threads 2 "${UNPRIVILEGED_SKIPS[@]}") 2>&1 | tee -a "$log_file"
  unprivileged=${PIPESTATUS[0]}
  set -e
  [ "$unprivileged" = 0 ] || status=$unprivileged
fi
# One closing line for the whole run, summed over every test binary.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed;?$/) p += $(i-1); if ($i ~ /^failed;?$/) f += $(i-1) } }
     END { printf "%d passed, %d failed\n", p, f }' "$log_file"
exit "$status"
