//! podman and docker: one backend, the differences between the two CLIs
//! handled here. Every container gets the hardening flags, a label naming
//! the bridge instance, and is removed when its owner goes away.

use std::path::{Path, PathBuf};

use super::process::{ChannelSocket, GUEST_CHANNEL_FD};
use super::{LaunchSpec, RuntimeError, SandboxProcess, SANDBOX_WORKDIR};
use crate::settings::Settings;

/// Label carrying `<pid>` of the bridge that owns a container.
pub const OWNER_LABEL: &str = "io.codemode.owner-pid";
/// Label carrying the bridge instance id.
pub const INSTANCE_LABEL: &str = "io.codemode.instance";

/// File descriptors a sandbox may open; kept at or below the hard limit of
/// common hosts (podman's default exceeds it on some and fails to start).
const NOFILE_LIMIT: u32 = 1024;
/// Size of `/run` and `/var/tmp` in a container: nothing writes there but
/// a cell that wants to fill memory.
const SMALL_TMPFS_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OciEngine {
    Podman,
    Docker,
}

impl OciEngine {
    pub fn name(self) -> &'static str {
        match self {
            OciEngine::Podman => "podman",
            OciEngine::Docker => "docker",
        }
    }
}

#[derive(Debug, Clone)]
pub struct OciBackend {
    pub engine: OciEngine,
    pub binary: PathBuf,
    pub image: String,
    /// `--runtime` for podman (runc/crun), if any.
    pub oci_runtime: Option<String>,
    /// codemode's seccomp profile, once written ([`OciBackend::write_seccomp_profile`]).
    pub seccomp_profile: Option<PathBuf>,
}

impl OciBackend {
    pub fn new(engine: OciEngine, binary: PathBuf, settings: &Settings) -> Self {
        let oci_runtime = match (&settings.oci_runtime, engine) {
            (Some(r), _) if !r.is_empty() && r != "auto" => Some(r.clone()),
            (_, OciEngine::Podman) => default_podman_runtime(),
            _ => None,
        };
        Self {
            engine,
            binary,
            image: settings
                .image
                .clone()
                .unwrap_or_else(|| codemode_images::image_tag(&settings.variant)),
            oci_runtime,
            seccomp_profile: None,
        }
    }

    /// Writes codemode's seccomp profile (the engine's default tightened
    /// with the sandbox deny list) into `dir` and uses it from now on.
    pub fn write_seccomp_profile(&mut self, dir: &Path) -> std::io::Result<()> {
        let base = super::seccomp::engine_default_profile();
        match &base {
            Some((path, _)) => tracing::debug!("seccomp: tightening {}", path.display()),
            None => tracing::warn!(
                "seccomp: no default profile of {} found to build on; containers get codemode's deny list on an allow-by-default profile",
                self.engine.name()
            ),
        }
        let profile = super::seccomp::oci_profile(base.map(|(_, v)| v));
        let path = dir.join(format!("seccomp-{}.json", self.engine.name()));
        let tmp = dir.join(format!(
            ".seccomp-{}.json.{}",
            self.engine.name(),
            std::process::id()
        ));
        std::fs::write(&tmp, profile.to_string())?;
        std::fs::rename(&tmp, &path)?;
        self.seccomp_profile = Some(path);
        Ok(())
    }

    /// Global flags placed before the subcommand.
    pub fn global_args(&self) -> Vec<String> {
        match (&self.oci_runtime, self.engine) {
            (Some(rt), OciEngine::Podman) => vec!["--runtime".into(), rt.clone()],
            _ => Vec::new(),
        }
    }

    /// The full `run` argument list (everything after the binary).
    pub fn run_args(&self, spec: &LaunchSpec) -> Vec<String> {
        let l = &spec.limits;
        let mut a = self.global_args();
        a.extend(
            [
                "run",
                "--rm",
                "--network",
                "none",
                "--read-only",
                "--cap-drop",
                "ALL",
                "--security-opt",
                "no-new-privileges",
                // A missing image is an error to report, not a download.
                "--pull",
                "never",
                // An init as pid 1 reaps the orphans of cells' processes;
                // the guest (pid 2) ends those a cell leaves running.
                "--init",
            ]
            .map(String::from),
        );
        if let Some(profile) = &self.seccomp_profile {
            a.extend([
                "--security-opt".into(),
                format!("seccomp={}", profile.display()),
            ]);
        }
        match self.engine {
            OciEngine::Podman => {
                a.extend(["--preserve-fds".into(), (GUEST_CHANNEL_FD - 2).to_string()])
            }
            OciEngine::Docker => a.push("-i".into()),
        }
        a.extend(["--name".into(), spec.name.clone()]);
        a.extend([
            "--label".into(),
            format!("{INSTANCE_LABEL}={}", spec.instance),
        ]);
        a.extend([
            "--label".into(),
            format!("{OWNER_LABEL}={}", std::process::id()),
        ]);
        a.extend(["--user".into(), l.user.clone()]);
        a.extend(["--memory".into(), l.memory_bytes.to_string()]);
        // Without swap the memory limit is the real limit.
        a.extend(["--memory-swap".into(), l.memory_bytes.to_string()]);
        a.extend(["--pids-limit".into(), l.pids.to_string()]);
        if let Some(cpus) = l.cpus {
            a.extend(["--cpus".into(), cpus.to_string()]);
        }
        let tmpfs = |path: &str| {
            format!(
                "{path}:rw,noexec,nosuid,nodev,size={},mode=1777",
                l.tmpfs_bytes
            )
        };
        a.extend(["--tmpfs".into(), tmpfs("/tmp")]);
        a.extend(["--tmpfs".into(), tmpfs(SANDBOX_WORKDIR)]);
        // podman mounts these writable and exec-able with --read-only;
        // nothing needs more than a little room in them.
        for small in ["/run", "/var/tmp"] {
            a.extend([
                "--tmpfs".into(),
                format!("{small}:rw,noexec,nosuid,nodev,size={SMALL_TMPFS_BYTES},mode=1777"),
            ]);
        }
        a.extend([
            "--ulimit".into(),
            format!("nofile={NOFILE_LIMIT}:{NOFILE_LIMIT}"),
        ]);
        a.extend([
            "--ulimit".into(),
            format!("nproc={0}:{0}", l.pids.max(64) * 8),
        ]);
        a.extend(["--workdir".into(), SANDBOX_WORKDIR.into()]);
        a.extend(["--env".into(), "HOME=/tmp".into()]);
        for m in &spec.mounts {
            let mode = if m.writable { "rw" } else { "ro" };
            // docker's -v knows no noexec/nosuid/nodev; podman does.
            let hardening = match self.engine {
                OciEngine::Podman => ",noexec,nosuid,nodev",
                OciEngine::Docker => "",
            };
            a.extend([
                "--volume".into(),
                format!(
                    "{}:{}:{mode}{hardening}",
                    m.host.display(),
                    m.sandbox.display()
                ),
            ]);
        }
        a.push(self.image.clone());
        a.push("--end-cell-processes".into());
        if self.engine == OciEngine::Podman {
            a.extend(["--channel-fd".into(), GUEST_CHANNEL_FD.to_string()]);
        }
        a
    }

    pub fn launch(&self, spec: &LaunchSpec) -> Result<SandboxProcess, RuntimeError> {
        let mut cmd = super::client::command(&self.binary);
        cmd.args(self.run_args(spec));
        // podman passes a socket into the container (--preserve-fds), so
        // frames go straight to the guest instead of through conmon and the
        // podman client; docker has no such flag and keeps stdio.
        let socket = match self.engine {
            OciEngine::Podman => {
                Some(ChannelSocket::new().map_err(|source| RuntimeError::Spawn {
                    what: format!("the channel socket of sandbox {}", spec.name),
                    source,
                })?)
            }
            OciEngine::Docker => None,
        };
        SandboxProcess::spawn(
            cmd,
            spec.name.clone(),
            Some((self.binary.clone(), spec.name.clone())),
            socket,
        )
    }
}

/// crun refuses cgroup v1 "hybrid" hosts ("cgroups in hybrid mode not
/// supported"); runc works there. Elsewhere podman's own default is kept.
fn default_podman_runtime() -> Option<String> {
    let hybrid = Path::new("/sys/fs/cgroup/unified").exists()
        || !Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    if hybrid && super::detect::which("runc").is_some() {
        Some("runc".into())
    } else {
        None
    }
}

/// Removes containers left behind by bridges that are gone (crashed or
/// killed before they could clean up, or a start interrupted midway).
/// Returns how many were removed.
pub async fn sweep_stale_containers(backend: &OciBackend) -> usize {
    let mut cmd = super::client::command(&backend.binary);
    cmd.args(backend.global_args());
    cmd.args(["ps", "-a", "--filter", &format!("label={OWNER_LABEL}")]);
    // podman's templates have no `.Label`; its JSON does the job. docker's
    // JSON differs from podman's, and its templates have `.Label`.
    match backend.engine {
        OciEngine::Podman => cmd.args(["--format", "json"]),
        OciEngine::Docker => cmd
            .arg("--format")
            .arg(format!("{{{{.Names}}}} {{{{.Label \"{OWNER_LABEL}\"}}}}")),
    };
    let out = match super::client::output(cmd, super::client::SHORT).await {
        Ok(out) if out.status.success() => out,
        Ok(out) => {
            let err = String::from_utf8_lossy(&out.stderr);
            tracing::warn!(
                "could not list containers left by earlier bridges: {}",
                err.trim()
            );
            return 0;
        }
        Err(err) => {
            tracing::warn!("could not list containers left by earlier bridges: {err}");
            return 0;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let owned = match backend.engine {
        OciEngine::Podman => owners_from_podman_json(&text),
        OciEngine::Docker => owners_from_lines(&text),
    };
    let mut removed = 0;
    for (name, pid) in owned {
        if pid.parse::<u32>().is_ok_and(super::bridge_alive) {
            continue;
        }
        if super::client::remove(&backend.binary, &backend.global_args(), &name).await {
            tracing::info!(
                container = name,
                owner_pid = pid,
                "removed container left by a bridge that is gone"
            );
            removed += 1;
        }
    }
    removed
}

/// `(name, owner pid)` of each container in `podman ps --format json`.
fn owners_from_podman_json(text: &str) -> Vec<(String, String)> {
    let Ok(serde_json::Value::Array(items)) = serde_json::from_str(text) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|c| {
            let name = c.get("Names")?.get(0)?.as_str()?;
            let pid = c.get("Labels")?.get(OWNER_LABEL)?.as_str()?;
            Some((name.to_string(), pid.to_string()))
        })
        .collect()
}

/// `(name, owner pid)` from lines of `NAME PID`.
fn owners_from_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            Some((parts.next()?.to_string(), parts.next()?.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_read_from_podman_json_and_docker_lines() {
        let podman = format!(
            r#"[{{"Names":["codemode-a-1"],"Labels":{{"{OWNER_LABEL}":"42","x":"y"}}}},
                {{"Names":["other"],"Labels":null}}]"#
        );
        assert_eq!(
            owners_from_podman_json(&podman),
            [("codemode-a-1".to_string(), "42".to_string())]
        );
        assert!(owners_from_podman_json("not json").is_empty());
        assert_eq!(
            owners_from_lines("codemode-b-2 7\nbroken\n"),
            [("codemode-b-2".to_string(), "7".to_string())]
        );
    }
}
