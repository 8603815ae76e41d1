//! Shared helpers for the integration tests live in `all.rs` modules.
