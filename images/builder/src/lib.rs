//! codemode-images: codemode's sandbox images, built offline. A crate of
//! its own so that the MCP server never stages files, runs pip or ldd: the
//! `codemode image build` command calls it, the server only names images.
//!
//! This crate owns image naming ([`image_tag`]), staging a `FROM scratch`
//! build context ([`stage`]) and building it with podman or docker
//! ([`build`]). The default image is one file: the static guest, CPython
//! and its standard library inside. An image with packages (the
//! `datascience` variant, or a user's requirements file) carries the
//! dynamically linked guest, the packages installed from wheels
//! ([`packages`]) and the shared libraries they load. The Containerfile
//! template and the datascience requirements live in `images/`;
//! `images/README.md` explains the result. Progress goes to the caller's
//! callback, never to stdout.

mod elf;
mod engine;
mod error;
pub mod flavour;
mod packages;
mod rootfs;
mod stage;

use std::path::PathBuf;

pub use engine::{build, image_exists, EngineRunner};
pub use error::ImageError;

/// Image repository of the default variant; variants append `-<name>`.
pub const REPOSITORY: &str = "localhost/codemode-sandbox";

/// The datascience variant's pinned requirements (numpy, pandas,
/// matplotlib, scipy and what they need), installed from PyPI wheels.
pub const DATASCIENCE_REQUIREMENTS: &str = include_str!("../../datascience.txt");

/// An image's name among codemode's images: `default`, `datascience`, or a
/// name given to an image built from a requirements file. It picks the
/// image's tag, so `--variant NAME` selects it at run time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Variant(String);

impl Variant {
    pub const DEFAULT: &'static str = "default";
    pub const DATASCIENCE: &'static str = "datascience";

    /// The name used on the command line, in tags and in image labels.
    pub fn name(&self) -> &str {
        &self.0
    }

    pub fn is_default(&self) -> bool {
        self.0 == Self::DEFAULT
    }

    /// Requirements this variant brings itself (only `datascience` does).
    pub fn built_in_requirements(&self) -> Option<&'static str> {
        (self.0 == Self::DATASCIENCE).then_some(DATASCIENCE_REQUIREMENTS)
    }
}

impl Default for Variant {
    fn default() -> Self {
        Variant(Self::DEFAULT.to_owned())
    }
}

impl std::str::FromStr for Variant {
    type Err = String;

    /// Lowercase letters, digits and inner dashes, at most 40: it becomes
    /// part of an image name.
    fn from_str(name: &str) -> Result<Self, String> {
        let valid_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
        if name.is_empty()
            || name.len() > 40
            || !name.chars().all(valid_char)
            || name.starts_with('-')
            || name.ends_with('-')
        {
            return Err(format!(
                "variant {name:?} must be 1-40 lowercase letters, digits and inner dashes (like `default`, `datascience`, `ml-tools`)"
            ));
        }
        Ok(Variant(name.to_owned()))
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
pub fn image_tag(variant: &Variant) -> String {
    let suffix = if variant.is_default() {
        String::new()
    } else {
        format!("-{}", variant.name())
    };
    format!(
        "{REPOSITORY}{suffix}:{}-p{}",
        env!("CARGO_PKG_VERSION"),
        codemode_proto::PROTOCOL_MAJOR
    )
}

/// What goes into an image besides the guest.
#[derive(Debug, Clone)]
pub enum Contents {
    /// The static guest alone.
    GuestOnly { guest: PathBuf },
    /// The dynamic guest and packages from wheels.
    Packages {
        guest: PathBuf,
        /// pip requirements (the text of a requirements file).
        requirements: String,
        /// Where the requirements came from, for messages.
        source: String,
    },
}

/// What [`build`] builds, with what.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Which image (its name in tags and labels).
    pub variant: Variant,
    pub contents: Contents,
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
