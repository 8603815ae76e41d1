//! The crate's integration tests, one binary: golden vectors, round trips,
//! stream splitting, typed errors, and the fuzz smoke test.

#![allow(
    clippy::expect_used,
    reason = "test helpers: a failed expectation is a test failure"
)]

mod common;
mod errors;
mod golden;
mod roundtrip;
mod smoke;
mod streams;
