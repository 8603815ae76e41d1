//! The one way codemode starts and stops a child process: sandboxes,
//! proxied MCP servers and container-engine commands all go through here.
//!
//! Every child gets:
//! - the environment its caller lists and nothing else ([`command`]);
//! - its own process group (process-wrap's `ProcessGroup`), so a signal
//!   reaches everything it started;
//! - a parent-death signal, so a SIGKILLed codemode does not leave it
//!   running;
//! - its stderr in the log, tagged with its label, with the last lines kept
//!   in one ring buffer for error messages;
//! - a bounded, escalating shutdown (close stdin, SIGTERM, SIGKILL), and a
//!   SIGKILL of the group when dropped; it is always reaped (by `wait`, or
//!   by tokio's orphan reaper after a drop).

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::process::{ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, CommandWrapper, ProcessGroup};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

/// Lines of a child's stderr kept for error messages.
const RECENT_STDERR_LINES: usize = 20;

/// A command that sees exactly `env` (after `env_clear`), with stdin
/// closed unless the caller pipes it.
pub(crate) fn command<K, V>(
    program: impl AsRef<OsStr>,
    env: impl IntoIterator<Item = (K, V)>,
) -> Command
where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    let mut cmd = Command::new(program);
    cmd.env_clear().envs(env).stdin(Stdio::null());
    cmd
}

/// The variables of this process named in `names`, for [`command`].
pub(crate) fn inherited(names: &[&str]) -> Vec<(OsString, OsString)> {
    names
        .iter()
        .filter_map(|n| std::env::var_os(n).map(|v| (OsString::from(n), v)))
        .collect()
}

/// What a child's stdin and stdout are (its stderr always goes to the log).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Io {
    /// Pipes to codemode: the protocol channel (sandboxes, MCP servers).
    Channel,
    /// /dev/null: the channel is elsewhere (a socket passed to the child).
    Closed,
}

/// How loud the child's stderr is in the log.
#[derive(Debug, Clone, Copy)]
pub(crate) enum StderrLevel {
    Info,
    Warn,
}

/// Sets the parent-death signal in the child, after every other `pre_exec`
/// step (a later `setuid` would clear it).
///
/// The signal follows the *thread* that forked: children are spawned from
/// tokio's worker threads or from a thread that waits for them, both of
/// which live as long as the child is wanted.
#[derive(Debug, Clone, Copy)]
struct ParentDeath(i32);

impl CommandWrapper for ParentDeath {
    fn pre_spawn(&mut self, command: &mut Command, _core: &CommandWrap) -> std::io::Result<()> {
        let signal = self.0;
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the closure runs in the forked child before exec and only
        // calls prctl, getppid and raise, which are async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died before the prctl took effect.
                if libc::getppid() != parent {
                    libc::raise(signal);
                }
                Ok(())
            });
        }
        Ok(())
    }
}

/// Spawns `cmd` as the leader of its own process group, with `death` as
/// its parent-death signal.
fn spawn_wrapped(cmd: Command, death: i32) -> std::io::Result<Box<dyn ChildWrapper>> {
    let mut wrapped = CommandWrap::from(cmd);
    wrapped
        .wrap(ProcessGroup::leader())
        .wrap(ParentDeath(death));
    wrapped.spawn()
}

/// The last lines of a child's stderr, and whether the stream has ended.
#[derive(Debug, Clone)]
struct StderrLog {
    recent: Arc<Mutex<VecDeque<String>>>,
    ended: watch::Receiver<bool>,
}

impl StderrLog {
    /// Forwards `stream` line by line to the log until it ends.
    fn forward(
        stream: impl AsyncRead + Unpin + Send + 'static,
        label: String,
        level: StderrLevel,
    ) -> Self {
        let recent = Arc::new(Mutex::new(VecDeque::new()));
        let (ended_tx, ended) = watch::channel(false);
        let kept = recent.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stream).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                match level {
                    StderrLevel::Info => tracing::info!(child = %label, "{line}"),
                    StderrLevel::Warn => tracing::warn!(child = %label, "{line}"),
                }
                if let Ok(mut r) = kept.lock() {
                    if r.len() == RECENT_STDERR_LINES {
                        r.pop_front();
                    }
                    r.push_back(line);
                }
            }
            let _ = ended_tx.send(true);
        });
        Self { recent, ended }
    }

    /// The kept lines, once the stream has ended or `bound` has passed.
    async fn tail(&self, bound: Duration) -> String {
        let mut ended = self.ended.clone();
        let _ = tokio::time::timeout(bound, ended.wait_for(|e| *e)).await;
        self.recent
            .lock()
            .map(|r| r.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }
}

/// A running child (see the module docs).
#[derive(Debug)]
pub(crate) struct Child {
    label: String,
    inner: Box<dyn ChildWrapper>,
    pgid: i32,
    stderr: Option<StderrLog>,
    status: Option<ExitStatus>,
}

impl Child {
    /// Starts `cmd` supervised, its stdin and stdout as `io` says. `death`
    /// is the signal the child gets when codemode dies (SIGKILL, or SIGTERM
    /// for a client that must clean up).
    pub(crate) fn spawn(
        mut cmd: Command,
        label: impl Into<String>,
        io: Io,
        level: StderrLevel,
        death: i32,
    ) -> std::io::Result<Self> {
        let label = label.into();
        let (stdin, stdout) = match io {
            Io::Channel => (Stdio::piped(), Stdio::piped()),
            Io::Closed => (Stdio::null(), Stdio::null()),
        };
        cmd.stdin(stdin).stdout(stdout).stderr(Stdio::piped());
        let mut inner = spawn_wrapped(cmd, death)?;
        let pgid = inner
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| {
                std::io::Error::other(format!("{label} exited before it could be watched"))
            })?;
        let stderr = inner
            .stderr()
            .take()
            .map(|s| StderrLog::forward(s, label.clone(), level));
        Ok(Self {
            label,
            inner,
            pgid,
            stderr,
            status: None,
        })
    }

    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    pub(crate) fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.inner.stdin().take()
    }

    pub(crate) fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.inner.stdout().take()
    }

    /// The last lines of its stderr, waiting at most `bound` for the
    /// stream to end (it ends soon after the child exits).
    pub(crate) async fn stderr_tail(&self, bound: Duration) -> String {
        match &self.stderr {
            Some(log) => log.tail(bound).await,
            None => String::new(),
        }
    }

    /// Whether the child has exited (non-blocking; reaps it if so).
    pub(crate) fn has_exited(&mut self) -> bool {
        if self.status.is_some() {
            return true;
        }
        match self.inner.try_wait() {
            Ok(Some(status)) => {
                self.status = Some(status);
                true
            }
            Ok(None) => false,
            Err(_) => true,
        }
    }

    /// Sends `signal` to the child's whole group.
    pub(crate) fn signal_group(&self, signal: i32) {
        // SAFETY: killpg only sends a signal, to the group this child leads.
        unsafe {
            libc::killpg(self.pgid, signal);
        }
    }

    /// Kills the group now; it is reaped by a later `wait` or on drop.
    pub(crate) fn kill_now(&self) {
        self.signal_group(libc::SIGKILL);
    }

    /// Waits for the child to exit (and reaps it), at most `bound`.
    async fn wait_within(&mut self, bound: Duration) -> Option<ExitStatus> {
        if self.status.is_none() {
            if let Ok(Ok(status)) = tokio::time::timeout(bound, self.inner.wait()).await {
                self.status = Some(status);
            }
        }
        self.status
    }

    /// Waits, at most `bound`, until nothing is left in the child's group.
    async fn group_gone_within(&mut self, bound: Duration) -> bool {
        let until = tokio::time::Instant::now() + bound;
        if self.wait_within(bound).await.is_none() {
            return false;
        }
        loop {
            // SAFETY: signal 0 only checks whether the group has members.
            if unsafe { libc::killpg(self.pgid, 0) } != 0 {
                return true;
            }
            if tokio::time::Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Escalating shutdown: close stdin (a well-behaved child exits on
    /// EOF), wait `grace`; SIGTERM the group, wait `grace`; SIGKILL the
    /// group and reap. Never takes much more than twice `grace`.
    pub(crate) async fn shutdown(mut self, grace: Duration) -> Option<ExitStatus> {
        drop(self.inner.stdin().take());
        if !self.group_gone_within(grace).await {
            tracing::debug!(child = %self.label, "did not exit on EOF; SIGTERM");
            self.signal_group(libc::SIGTERM);
            if !self.group_gone_within(grace).await {
                tracing::warn!(child = %self.label, "did not exit on SIGTERM; SIGKILL");
                self.kill_now();
                self.wait_within(grace).await;
            }
        }
        // Stragglers that outlived the leader go too.
        self.kill_now();
        self.status
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.status.is_none() {
            self.kill_now();
        }
        // The inner tokio child is dropped without a wait: tokio's orphan
        // reaper collects it once it has died.
    }
}

/// Runs `cmd` to completion for its output (stdout and stderr), killing
/// its group after `limit`. The error names `label`.
pub(crate) async fn output(
    mut cmd: Command,
    label: &str,
    limit: Duration,
) -> std::io::Result<Output> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut inner = spawn_wrapped(cmd, libc::SIGKILL)?;
    let mut stdout = inner.stdout().take();
    let mut stderr = inner.stderr().take();
    let run = async {
        let (out, err, status) = tokio::join!(
            read_all(stdout.as_mut()),
            read_all(stderr.as_mut()),
            inner.wait()
        );
        Ok::<_, std::io::Error>(Output {
            status: status?,
            stdout: out?,
            stderr: err?,
        })
    };
    match tokio::time::timeout(limit, run).await {
        Ok(result) => result,
        Err(_) => {
            let _ = inner.start_kill();
            let _ = tokio::time::timeout(Duration::from_secs(5), inner.wait()).await;
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("{label} did not finish within {}s", limit.as_secs()),
            ))
        }
    }
}

async fn read_all(stream: Option<&mut (impl AsyncRead + Unpin)>) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    if let Some(s) = stream {
        s.read_to_end(&mut buf).await?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = command("/bin/sh", inherited(&["PATH"]));
        cmd.args(["-c", script]);
        cmd
    }

    #[tokio::test]
    async fn the_child_sees_only_the_listed_environment() {
        let mut cmd = command("/usr/bin/env", [("ONLY", "this")]);
        cmd.env_remove("PATH");
        let out = output(cmd, "env", Duration::from_secs(5)).await.unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ONLY=this\n");
    }

    #[tokio::test]
    async fn output_kills_the_whole_group_when_it_overruns() {
        let started = std::time::Instant::now();
        // The grandchild holds stdout open: only a group kill ends it.
        let err = output(
            sh("sleep 30 & sleep 30"),
            "sleeper",
            Duration::from_millis(200),
        )
        .await
        .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert!(err.to_string().contains("sleeper did not finish"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn shutdown_escalates_to_sigkill_and_reaps() {
        let cmd = sh("trap '' TERM; echo started >&2; while :; do sleep 1; done");
        let mut child = Child::spawn(
            cmd,
            "stubborn",
            Io::Channel,
            StderrLevel::Info,
            libc::SIGKILL,
        )
        .unwrap();
        let pgid = child.pgid;
        assert!(!child.has_exited());
        let started = std::time::Instant::now();
        let status = child.shutdown(Duration::from_millis(200)).await;
        assert!(started.elapsed() < Duration::from_secs(3));
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.and_then(|s| s.signal()), Some(libc::SIGKILL));
        assert_group_ends(pgid).await;
    }

    /// Polls: a killed grandchild stays visible until init reaps it.
    async fn assert_group_ends(pgid: i32) {
        let until = std::time::Instant::now() + Duration::from_secs(5);
        // SAFETY: signal 0 only probes the group.
        while unsafe { libc::killpg(pgid, 0) } == 0 {
            assert!(std::time::Instant::now() < until, "group left behind");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn the_stderr_tail_is_there_once_the_child_has_exited() {
        let cmd = sh("echo one >&2; echo two >&2; exit 3");
        let mut child = Child::spawn(
            cmd,
            "failing",
            Io::Channel,
            StderrLevel::Warn,
            libc::SIGKILL,
        )
        .unwrap();
        assert!(child.wait_within(Duration::from_secs(5)).await.is_some());
        assert!(child.has_exited());
        assert_eq!(child.stderr_tail(Duration::from_secs(5)).await, "one\ntwo");
    }

    #[tokio::test]
    async fn a_dropped_child_and_its_group_are_killed() {
        let cmd = sh("sleep 30 & sleep 30");
        let child = Child::spawn(
            cmd,
            "dropped",
            Io::Channel,
            StderrLevel::Info,
            libc::SIGKILL,
        )
        .unwrap();
        let pgid = child.pgid;
        drop(child);
        assert_group_ends(pgid).await;
    }
}
