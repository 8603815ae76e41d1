//! The integration-test crate. Everything lives in `all.rs` and its
//! modules: they start the release `codemode` binary (built by
//! `scripts/test.sh`) as MCP clients do, with real sandboxes and servers.
