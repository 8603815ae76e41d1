//! Sandbox runtimes: how a guest process is started inside podman, docker
//! or bubblewrap, with the project's security flags and limits. This module
//! owns the command lines and their cleanup; it knows nothing of frames.

pub mod allowance;
mod bwrap;
mod cgroup;
pub mod client;
mod detect;
pub mod enforcement;
pub mod guest;
pub mod identity;
mod mounts;
mod oci;
mod process;
mod seccomp;

use std::path::PathBuf;

pub use bwrap::BwrapBackend;
pub use detect::{guest_path, select_backend, which};

/// podman or docker, whichever is on PATH (for building images).
pub fn which_engine() -> Option<PathBuf> {
    which("podman").or_else(|| which("docker"))
}
pub use cgroup::remove_leftovers as remove_leftover_cgroups;
pub use mounts::{parse_mount, Mount, MountError, MountGuard};

/// Removes sandbox cgroups left by bridges that are gone.
pub fn sweep_stale_cgroups() -> usize {
    cgroup::sweep_stale(bridge_alive)
}

/// A pid belongs to a live codemode bridge (not a recycled pid).
pub(crate) fn bridge_alive(pid: u32) -> bool {
    pid == std::process::id()
        || std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|comm| comm.trim().starts_with("codemode"))
            .unwrap_or(false)
}
pub use oci::{sweep_stale_containers, OciBackend, OciEngine};
pub use process::SandboxProcess;

/// Working directory of cells inside the sandbox.
pub const SANDBOX_WORKDIR: &str = "/workspace";

/// Resource limits applied to one sandbox.
#[derive(Debug, Clone)]
pub struct Limits {
    pub memory_bytes: u64,
    pub pids: u32,
    /// CPUs' worth of time a sandbox may use (`None`: no quota).
    pub cpus: Option<f64>,
    /// `uid:gid` inside the sandbox.
    pub user: String,
    /// Size of the `/tmp` and `/workspace` tmpfs, in bytes.
    pub tmpfs_bytes: u64,
    /// CPU seconds a bubblewrap sandbox may use over its life (RLIMIT_CPU).
    pub cpu_seconds: u64,
}

/// Everything needed to start one sandbox.
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    pub limits: Limits,
    pub mounts: Vec<Mount>,
    /// Identifies this bridge process in container labels and names.
    pub instance: String,
    /// Unique name of this sandbox.
    pub name: String,
}

/// A configured, usable sandbox backend.
#[derive(Debug, Clone)]
pub enum Backend {
    Oci(OciBackend),
    Bubblewrap(BwrapBackend),
}

/// Why a sandbox could not be started.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("no sandbox runtime found: install podman (or docker) or bubblewrap; codemode never runs code outside a sandbox")]
    NoneFound,
    #[error("the {runtime} runtime was requested but `{binary}` is not installed or not on PATH")]
    Missing {
        runtime: &'static str,
        binary: &'static str,
    },
    #[error("static guest binary {0} not found: build it (scripts/lib.sh `build_release`, or see the README's \"Building the guest\") or pass --guest PATH")]
    GuestMissing(PathBuf),
    #[error("guest binary {0} is dynamically linked, but bubblewrap sandboxes bind nothing of the host (no loader, no libraries): use the static guest (built with crt-static, see the README's \"Building the guest\")")]
    GuestNotStatic(PathBuf),
    #[error("variant {0:?} is an image with packages, which runs in podman or docker; bubblewrap runs only the static guest (use --runtime podman, or drop --variant)")]
    VariantNeedsEngine(String),
    #[error(transparent)]
    Identity(#[from] identity::IdentityError),
    #[error("{path} cannot be reached by host uid {uid}, the unprivileged user bubblewrap runs sandboxes as when codemode runs as root: make it (and its parent directories) accessible to that uid, or mount another path")]
    Unreachable { path: PathBuf, uid: u32 },
    #[error("failed to start {what}: {source}")]
    Spawn {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl Backend {
    /// Short name for logs and `doctor`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Oci(oci) => oci.engine.name(),
            Backend::Bubblewrap(_) => "bubblewrap",
        }
    }

    /// Starts a sandbox running the guest, stdin/stdout piped for frames.
    pub fn launch(&self, spec: &LaunchSpec) -> Result<SandboxProcess, RuntimeError> {
        match self {
            Backend::Oci(oci) => oci.launch(spec),
            Backend::Bubblewrap(bw) => bw.launch(spec),
        }
    }
}
