//! The guest's tests: the real binary driven over frames by a fake host.

// Test helpers outside `#[test]` functions panic on purpose: a failed
// expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod cases;
mod common;
