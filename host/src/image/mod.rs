//! Sandbox images, built offline from this Debian 12 host's own files.
//!
//! This module owns image naming ([`image_tag`]), staging a `FROM scratch`
//! build context from the host's Debian packages ([`stage`]: the guest,
//! Python 3.11's stdlib, optional numpy/pandas/matplotlib, and the `ldd`
//! closure of every ELF file) and building it with podman or docker
//! ([`build`]). The Containerfile template and the datascience probe live in
//! `images/`; `images/README.md` explains the result. Progress goes to the
//! caller's callback, never to stdout.

mod datascience;
mod elf;
mod engine;
mod error;
mod rootfs;
mod stage;

use std::path::PathBuf;

pub use engine::{build, image_exists};

/// Image repository of the default variant; variants append `-<name>`.
pub const REPOSITORY: &str = "localhost/codemode-sandbox";

/// Which image to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, clap::ValueEnum)]
pub enum Variant {
    /// The guest and the Python 3.11 standard library (about 50 MB).
    #[default]
    Default,
    /// Default plus numpy, pandas and matplotlib (Agg backend).
    Datascience,
}

impl Variant {
    /// The name used on the command line, in tags and in image labels.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Default => "default",
            Variant::Datascience => "datascience",
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The tag `codemode image build` gives `variant`: the guest version (this
/// crate's, the workspace shares one) and the protocol major, so a host
/// never runs a guest that speaks another protocol.
pub fn image_tag(variant: Variant) -> String {
    let suffix = match variant {
        Variant::Default => String::new(),
        other => format!("-{}", other.name()),
    };
    format!(
        "{REPOSITORY}{suffix}:{}-p{}",
        env!("CARGO_PKG_VERSION"),
        codemode_proto::PROTOCOL_MAJOR
    )
}

/// What [`build`] builds, with what.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Which image.
    pub variant: Variant,
    /// The codemode-guest binary to put in it.
    pub guest: PathBuf,
    /// `podman` or `docker` (a name on PATH or a path).
    pub engine: PathBuf,
    /// A tag instead of [`image_tag`]`(variant)`.
    pub tag: Option<String>,
    /// Rebuild even when the image already holds this guest.
    pub force: bool,
}

/// What [`build`] built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltImage {
    /// The image's tag.
    pub tag: String,
    /// Its size as the engine reports it.
    pub size_bytes: u64,
    /// Files and symlinks staged into it (0 when it was up to date).
    pub staged_files: usize,
    /// The existing image already held this guest; nothing was built.
    pub up_to_date: bool,
}

#[cfg(test)]
mod tests;
