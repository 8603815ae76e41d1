//! Integration tests for codemode: one binary, one module per behaviour.
//! Each end-to-end test runs against both sandbox backends (bubblewrap and
//! podman, via `per_runtime!`), with real MCP servers.

// Test code: panicking on a broken precondition is the point.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

mod cleanup;
mod cli;
mod clients;
mod discovery;
mod display;
mod e2e;
mod guest_python;
mod raw_protocol;
mod security;
mod sessions;

/// Expands one async test body `fn(runtime)` into a test per backend.
#[macro_export]
macro_rules! per_runtime {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn bubblewrap() {
                super::$name("bubblewrap").await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn podman() {
                super::$name("podman").await
            }
        }
    };
}
