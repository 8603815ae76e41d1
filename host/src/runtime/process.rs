//! A started sandbox process: its own process group, piped stdin/stdout for
//! frames, stderr forwarded to tracing, and a `Drop` that kills the group
//! (and removes the container) so no sandbox outlives its owner.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::RuntimeError;
use crate::procgroup::signal_group;

/// How long a sandbox gets to exit after its channel closes before SIGTERM,
/// and again before SIGKILL: the guest flushes and exits at once on EOF, so
/// anything slower is stuck.
const EXIT_GRACE: Duration = Duration::from_millis(1500);

/// A running sandbox process.
#[derive(Debug)]
pub struct SandboxProcess {
    child: Option<Child>,
    pgid: Option<i32>,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    /// For container backends: the engine and container name to remove.
    container: Option<(PathBuf, String)>,
    pub name: String,
    /// bubblewrap's per-sandbox cgroup, removed after the process is gone.
    pub(super) cgroup: Option<super::cgroup::SandboxCgroup>,
    recent_stderr: Arc<Mutex<VecDeque<String>>>,
}

/// Lines of a sandbox's stderr kept for error messages.
const RECENT_STDERR_LINES: usize = 20;

impl SandboxProcess {
    /// Spawns `cmd` in a new process group with piped stdio.
    pub(super) fn spawn(
        mut cmd: Command,
        name: String,
        container: Option<(PathBuf, String)>,
    ) -> Result<Self, RuntimeError> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|source| RuntimeError::Spawn {
            what: format!("sandbox {name}"),
            source,
        })?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        let recent = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(stderr) = child.stderr.take() {
            let tag = name.clone();
            let recent = recent.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::warn!(sandbox = %tag, "{line}");
                    if let Ok(mut r) = recent.lock() {
                        if r.len() == RECENT_STDERR_LINES {
                            r.pop_front();
                        }
                        r.push_back(line);
                    }
                }
            });
        }
        Ok(Self {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            child: Some(child),
            pgid,
            container,
            name,
            cgroup: None,
            recent_stderr: recent,
        })
    }

    /// The last lines the sandbox wrote to stderr (why it failed to start,
    /// usually), waiting briefly for the forwarder to catch up.
    pub async fn stderr_tail(&self) -> String {
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.recent_stderr
            .lock()
            .map(|r| r.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }

    /// Escalating shutdown: close stdin (the guest exits on EOF), wait,
    /// SIGTERM the group, wait, SIGKILL the group; then remove the container.
    pub async fn shutdown(mut self) {
        self.stdin.take();
        if let Some(mut child) = self.child.take() {
            let exited = tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok();
            if !exited {
                signal_group(self.pgid, libc::SIGTERM);
                if tokio::time::timeout(EXIT_GRACE, child.wait())
                    .await
                    .is_err()
                {
                    signal_group(self.pgid, libc::SIGKILL);
                    let _ = child.wait().await;
                }
            }
            self.pgid = None;
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
        signal_group(self.pgid, libc::SIGKILL);
    }

    /// Whether the process has exited (non-blocking).
    pub fn has_exited(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => !matches!(child.try_wait(), Ok(None)),
            None => true,
        }
    }
}

impl Drop for SandboxProcess {
    fn drop(&mut self) {
        signal_group(self.pgid, libc::SIGKILL);
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
