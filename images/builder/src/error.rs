//! The one error type of image staging and building.

use std::path::PathBuf;

/// What went wrong while staging or building a sandbox image. Every variant
/// names the path or command involved and, for commands, what they printed.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// A filesystem operation on the host or in the staging tree failed.
    #[error("could not {action} {path}: {source}")]
    Io {
        /// What was being done, e.g. "copy" or "read the symlink".
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A helper program (ldd, pip, the guest, the engine) could not be started.
    #[error("could not run `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A helper program ran but did not succeed.
    #[error("`{command}` exited with {status}, expected success; it printed:\n{output}")]
    CommandFailed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// The tail of its stdout and stderr.
        output: String,
    },
    /// A helper program succeeded but printed something this module cannot use.
    #[error("`{command}` printed output that is not {expected}: {output}")]
    UnexpectedOutput {
        /// The command line.
        command: String,
        /// What the output should have been.
        expected: &'static str,
        /// The start of what it printed.
        output: String,
    },
    /// The guest binary given to the build is missing or not an ELF executable.
    #[error("expected the codemode-guest ELF executable at {path}, found {found}")]
    BadGuest {
        /// The path given.
        path: PathBuf,
        /// What is there instead.
        found: String,
    },
    /// An ELF file needs a shared library the host's loader cannot find.
    #[error("{elf} needs {library}, which the host's dynamic loader cannot find (ldd: not found)")]
    MissingLibrary {
        /// The ELF file whose dependency is missing.
        elf: PathBuf,
        /// The library's soname.
        library: String,
    },
    /// Resolving a path met more symlinks than any sane tree has.
    #[error("too many levels of symlinks while resolving {path}")]
    SymlinkLoop {
        /// The path being resolved.
        path: PathBuf,
    },
    /// The guest given is the wrong flavour for the image.
    #[error("{path} is {found}, but {why}")]
    WrongGuest {
        /// The guest binary.
        path: PathBuf,
        /// What it is ("dynamically linked").
        found: &'static str,
        /// Which flavour the image needs, and why.
        why: &'static str,
    },
}

impl ImageError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| ImageError::Io {
            action,
            path,
            source,
        }
    }
}
