//! podman machine handling (macOS and Windows run podman inside a VM, "the
//! machine"): before first use, start the machine when podman says it is
//! not running, creating it when none exists, as the reference bridge did;
//! stop it again at exit if codemode started it. On Linux `podman info`
//! answers directly and nothing here runs.

use std::path::Path;

use super::RuntimeError;

/// Phrases in podman's error output that mean "the machine is not running".
const NEEDS_MACHINE: &[&str] = &[
    "cannot connect to podman",
    "podman machine",
    "socket: connect",
    "connection refused",
];
/// How long one podman machine command may take.
const MACHINE_WAIT: std::time::Duration = std::time::Duration::from_secs(600);
/// `info` then `machine start`/`init` rounds before giving up.
const ATTEMPTS: usize = 3;

async fn podman(binary: &Path, args: &[&str]) -> (bool, String) {
    let mut cmd = super::client::command(binary);
    cmd.args(args);
    // `machine init` downloads an image: minutes, not forever.
    match super::client::output(cmd, MACHINE_WAIT).await {
        Ok(out) => (
            out.status.success(),
            format!(
                "{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        ),
        Err(e) => (false, e.to_string()),
    }
}

/// Makes sure podman answers, starting (or creating) its machine when that
/// is what it lacks. Returns whether a machine was started here. Linux
/// podman runs natively, so there this costs nothing.
pub async fn ensure_ready(binary: &Path) -> Result<bool, RuntimeError> {
    if cfg!(target_os = "linux") {
        return Ok(false);
    }
    start_machine_if_needed(binary).await
}

async fn start_machine_if_needed(binary: &Path) -> Result<bool, RuntimeError> {
    let mut started = false;
    let mut last = String::new();
    for _ in 0..ATTEMPTS {
        let (ok, text) = podman(binary, &["info", "--format", "{{.Host.Arch}}"]).await;
        if ok {
            return Ok(started);
        }
        let lower = text.to_lowercase();
        if !NEEDS_MACHINE.iter().any(|p| lower.contains(p)) {
            return Err(RuntimeError::Unusable {
                runtime: "podman",
                output: text.trim().to_string(),
            });
        }
        tracing::info!("podman machine is not running; starting it");
        let (ok, text) = podman(binary, &["machine", "start"]).await;
        if ok {
            started = true;
            continue;
        }
        let lower = text.to_lowercase();
        if lower.contains("does not exist") || lower.contains("no such machine") {
            tracing::info!("no podman machine exists; creating one");
            let (ok, text) = podman(binary, &["machine", "init"]).await;
            if !ok {
                return Err(RuntimeError::Unusable {
                    runtime: "podman",
                    output: format!("podman machine init failed: {}", text.trim()),
                });
            }
            continue;
        }
        last = text;
    }
    Err(RuntimeError::Unusable {
        runtime: "podman",
        output: format!(
            "podman machine did not start after {ATTEMPTS} attempts: {}",
            last.trim()
        ),
    })
}

/// Stops the machine codemode started.
pub async fn stop(binary: &Path) {
    let (ok, text) = podman(binary, &["machine", "stop"]).await;
    if !ok {
        tracing::warn!("podman machine stop failed: {}", text.trim());
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A stand-in podman whose `info` fails like a stopped machine until
    /// `machine start` has run.
    fn fake_podman(dir: &Path, machine_exists: bool) -> std::path::PathBuf {
        let marker = dir.join("running");
        let exists = dir.join("exists");
        if machine_exists {
            std::fs::write(&exists, "").unwrap();
        }
        let script = format!(
            "#!/bin/sh\ncase \"$1 $2\" in\n\
             'info --format') [ -e {m} ] && echo amd64 && exit 0; echo 'Cannot connect to Podman. Please verify... podman machine' >&2; exit 125;;\n\
             'machine start') [ -e {e} ] || {{ echo 'Error: podman-machine-default: VM does not exist' >&2; exit 125; }}; touch {m}; exit 0;;\n\
             'machine init') touch {e}; exit 0;;\n\
             'machine stop') rm -f {m}; exit 0;;\n\
             esac\nexit 1\n",
            m = marker.display(),
            e = exists.display()
        );
        let path = dir.join("podman");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[tokio::test]
    async fn starts_a_stopped_machine_and_creates_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let podman = fake_podman(dir.path(), true);
        assert!(start_machine_if_needed(&podman).await.unwrap(), "started");
        assert!(
            !start_machine_if_needed(&podman).await.unwrap(),
            "already running: nothing to do"
        );
        stop(&podman).await;

        let dir = tempfile::tempdir().unwrap();
        let podman = fake_podman(dir.path(), false);
        assert!(
            start_machine_if_needed(&podman).await.unwrap(),
            "created, then started"
        );
    }

    #[tokio::test]
    async fn other_failures_are_reported_not_retried() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("podman");
        std::fs::write(
            &path,
            "#!/bin/sh\necho 'permission denied on storage' >&2\nexit 125\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = start_machine_if_needed(&path)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("permission denied on storage"), "{err}");
    }
}
