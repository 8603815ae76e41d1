//! Picks the sandbox backend: the one asked for, or with `auto` the first
//! installed of podman, docker, bubblewrap. Never falls back to running
//! code unsandboxed.

use std::path::{Path, PathBuf};

use super::{Backend, BwrapBackend, OciBackend, OciEngine, RuntimeError};
use crate::settings::{RuntimeChoice, Settings};

/// The selected backend and a sentence saying why, for logs and `doctor`.
#[derive(Debug, Clone)]
pub struct BackendChoice {
    pub backend: Backend,
    pub reason: String,
}

/// Finds `name` on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The static guest, for bubblewrap and the default image: `--guest`, else
/// the one next to this executable ([`super::guest`]).
pub fn guest_path(settings: &Settings) -> Option<PathBuf> {
    match &settings.guest {
        Some(p) => Some(p.clone()),
        None => super::guest::beside_codemode(super::guest::Flavour::Static),
    }
}

pub async fn select_backend(settings: &Settings) -> Result<BackendChoice, RuntimeError> {
    let oci = |engine: OciEngine, binary: PathBuf, reason: String| -> BackendChoice {
        BackendChoice {
            backend: Backend::Oci(OciBackend::new(engine, binary, settings)),
            reason,
        }
    };
    let bwrap = |binary: PathBuf, reason: String| -> Result<BackendChoice, RuntimeError> {
        if !settings.variant.is_default() && settings.image.is_none() {
            return Err(RuntimeError::VariantNeedsEngine(
                settings.variant.to_string(),
            ));
        }
        let guest = guest_path(settings).ok_or(RuntimeError::GuestMissing(PathBuf::from(
            "codemode-guest-static",
        )))?;
        if !is_executable(&guest) {
            return Err(RuntimeError::GuestMissing(guest));
        }
        // Nothing of the host is bound into the sandbox: a guest that needs
        // the host's loader and libraries could not start there.
        if super::guest::flavour_of(&guest) != Some(super::guest::Flavour::Static) {
            return Err(RuntimeError::GuestNotStatic(guest));
        }
        Ok(BackendChoice {
            backend: Backend::Bubblewrap(BwrapBackend::new(binary, guest)),
            reason,
        })
    };
    match settings.runtime {
        RuntimeChoice::Podman => which("podman")
            .map(|b| {
                oci(
                    OciEngine::Podman,
                    b,
                    "requested with --runtime podman".into(),
                )
            })
            .ok_or(RuntimeError::Missing {
                runtime: "podman",
                binary: "podman",
            }),
        RuntimeChoice::Docker => which("docker")
            .map(|b| {
                oci(
                    OciEngine::Docker,
                    b,
                    "requested with --runtime docker".into(),
                )
            })
            .ok_or(RuntimeError::Missing {
                runtime: "docker",
                binary: "docker",
            }),
        RuntimeChoice::Bubblewrap => match which("bwrap") {
            Some(b) => bwrap(b, "requested with --runtime bubblewrap".into()),
            None => Err(RuntimeError::Missing {
                runtime: "bubblewrap",
                binary: "bwrap",
            }),
        },
        RuntimeChoice::Auto => {
            if let Some(b) = which("podman") {
                return Ok(oci(
                    OciEngine::Podman,
                    b,
                    "auto: podman is installed (preferred)".into(),
                ));
            }
            let docker = match which("docker") {
                Some(b) if docker_engine_up(&b).await => Some(b),
                _ => None,
            };
            if let Some(b) = docker {
                return Ok(oci(
                    OciEngine::Docker,
                    b,
                    "auto: no podman; docker is installed and its engine answers".into(),
                ));
            }
            if let Some(b) = which("bwrap") {
                return bwrap(
                    b,
                    "auto: no podman or working docker; bubblewrap is installed".into(),
                );
            }
            Err(RuntimeError::NoneFound)
        }
    }
}

/// A docker CLI without a reachable engine (common: only the client is
/// installed) must not win `auto`.
async fn docker_engine_up(docker: &Path) -> bool {
    let mut cmd = super::client::command(docker);
    cmd.args(["info", "--format", "{{.ServerVersion}}"]);
    // Bounded: a docker CLI whose engine hangs must not hang start-up.
    super::client::output(cmd, std::time::Duration::from_secs(10))
        .await
        .is_ok_and(|o| o.status.success())
}
