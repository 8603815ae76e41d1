//! Helpers shared by the test modules: representative messages and proptest
//! strategies.

pub mod fixtures;
pub mod strategies;
