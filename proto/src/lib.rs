//! The codemode wire protocol: message types generated from
//! `proto/codemode.proto`, the protocol version, and length-prefixed framing.
//!
//! This crate does no I/O of its own. [`frame`] encodes and decodes frames
//! over byte buffers and `std::io` streams; the `codec` feature adds a
//! tokio-util codec for the host. [`fuzzing`] holds the fuzz entry points
//! that the cargo-fuzz targets and the smoke test share.

pub mod frame;
pub mod fuzzing;
pub mod version;

#[cfg(feature = "codec")]
pub mod codec;

/// Generated message types (package `codemode.v1`).
#[allow(clippy::all, missing_docs)]
pub mod v1 {
    include!(concat!(env!("OUT_DIR"), "/codemode.v1.rs"));
}

pub use frame::{FrameError, DEFAULT_MAX_FRAME_BYTES, FRAME_HEADER_BYTES};
pub use version::{check_peer_version, VersionMismatch, PROTOCOL_MAJOR, PROTOCOL_MINOR};
