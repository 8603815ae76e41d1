//! A started sandbox process: a supervised child ([`crate::child`]) with
//! piped stdin/stdout for frames, plus what outlives the process itself
//! (bubblewrap's cgroup, a container) and is removed after it.

use std::path::PathBuf;
use std::time::Duration;

use tokio::process::{ChildStdin, ChildStdout, Command};

use super::RuntimeError;
use crate::child::{Child, StderrLevel};

/// How long a sandbox gets to exit after its channel closes before SIGTERM,
/// and again before SIGKILL: the guest flushes and exits at once on EOF, so
/// anything slower is stuck.
const EXIT_GRACE: Duration = Duration::from_millis(1500);
/// How long an error message waits for a dead sandbox's last stderr lines.
const STDERR_WAIT: Duration = Duration::from_millis(500);

/// A running sandbox process.
#[derive(Debug)]
pub struct SandboxProcess {
    child: Option<Child>,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    /// For container backends: the engine and container name to remove.
    container: Option<(PathBuf, String)>,
    /// bubblewrap's per-sandbox cgroup, removed after the process is gone.
    pub(super) cgroup: Option<super::cgroup::SandboxCgroup>,
}

impl SandboxProcess {
    /// Spawns `cmd` supervised, with piped stdio. A container engine's
    /// client gets SIGTERM when codemode dies (it then stops and removes
    /// its container); bubblewrap gets SIGKILL.
    pub(super) fn spawn(
        cmd: Command,
        name: String,
        container: Option<(PathBuf, String)>,
    ) -> Result<Self, RuntimeError> {
        let death = if container.is_some() {
            libc::SIGTERM
        } else {
            libc::SIGKILL
        };
        let label = format!("sandbox {name}");
        let mut child =
            Child::spawn(cmd, label.clone(), StderrLevel::Warn, death).map_err(|source| {
                RuntimeError::Spawn {
                    what: label,
                    source,
                }
            })?;
        Ok(Self {
            stdin: child.take_stdin(),
            stdout: child.take_stdout(),
            child: Some(child),
            container,
            cgroup: None,
        })
    }

    /// The last lines the sandbox wrote to stderr (why it failed to start,
    /// usually), once the stream has ended or briefly after.
    pub async fn stderr_tail(&self) -> String {
        match &self.child {
            Some(child) => child.stderr_tail(STDERR_WAIT).await,
            None => String::new(),
        }
    }

    /// Escalating shutdown (see [`Child::shutdown`]), then the cgroup and
    /// the container are removed.
    pub async fn shutdown(mut self) {
        self.stdin.take();
        if let Some(child) = self.child.take() {
            child.shutdown(EXIT_GRACE).await;
        }
        if let Some(cg) = self.cgroup.take() {
            cg.remove().await;
        }
        if let Some((engine, name)) = self.container.take() {
            super::client::remove(&engine, &[], &name).await;
        }
    }

    /// Kills at once (used when the guest misbehaves).
    pub fn kill_now(&mut self) {
        if let Some(child) = &self.child {
            child.kill_now();
        }
    }

    /// Whether the process has exited (non-blocking).
    pub fn has_exited(&mut self) -> bool {
        self.child.as_mut().is_none_or(Child::has_exited)
    }
}

impl Drop for SandboxProcess {
    fn drop(&mut self) {
        // Dropping the child kills its group; tokio reaps it.
        if let Some(child) = self.child.take() {
            tracing::debug!(child = child.label(), "dropped; killed");
        }
        if let Some(cg) = self.cgroup.take() {
            cg.remove_or_defer();
        }
        if let Some((engine, name)) = self.container.take() {
            // Killing the podman client does not stop the container under
            // conmon, so remove it explicitly; detached, as Drop cannot
            // wait, but reaped.
            super::client::remove_detached(engine, name);
        }
    }
}
