//! The guest's tests: the real binary driven over frames by a fake host.

mod cases;
mod common;
