#!/usr/bin/env bash
# Command two: the same setup as the demo, then every check CI runs:
# formatting, clippy, and the whole test suite against real sandboxes and
# real MCP servers. A missing tool is installed, never skipped.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
install_apt
install_servers
build_release
build_image all
write_demo_config
cd "$ROOT"
log "cargo fmt --check"
cargo fmt --all -- --check
log "cargo clippy"
cargo clippy --locked --workspace --all-targets -- -D warnings
log "cargo test"
export CODEMODE_TEST_NODE_DIR="$NODE_DIR" CODEMODE_TEST_VENV="$VENV"
cargo test --locked --workspace --release -- --test-threads 2
