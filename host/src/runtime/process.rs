//! A started sandbox process: a supervised child ([`crate::child`]) and the
//! channel its guest speaks frames on (the child's stdin/stdout, or a
//! socket passed into a podman container), plus what outlives the process
//! itself (bubblewrap's cgroup, a container) and is removed after it.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::process::Command;

use super::RuntimeError;
use crate::child::{Child, Io, StderrLevel};

/// How long a sandbox gets to exit after its channel closes before SIGTERM,
/// and again before SIGKILL: the guest flushes and exits at once on EOF, so
/// anything slower is stuck.
const EXIT_GRACE: Duration = Duration::from_millis(1500);
/// How long an error message waits for a dead sandbox's last stderr lines.
const STDERR_WAIT: Duration = Duration::from_millis(500);

/// The host's end of a guest's channel: what it reads, what it writes.
pub type Channel = (
    Box<dyn AsyncRead + Send + Sync + Unpin>,
    Box<dyn AsyncWrite + Send + Sync + Unpin>,
);

/// A socket pair for a guest's channel: the host keeps `host`; `guest`
/// becomes the child's fd [`GUEST_CHANNEL_FD`].
pub struct ChannelSocket {
    pub host: UnixStream,
    pub guest: OwnedFd,
}

/// The fd the guest's end of a [`ChannelSocket`] gets in the child.
pub const GUEST_CHANNEL_FD: i32 = 3;

impl ChannelSocket {
    pub fn new() -> std::io::Result<Self> {
        let (host, guest) = UnixStream::pair()?;
        Ok(Self {
            host,
            guest: OwnedFd::from(guest),
        })
    }
}

/// A running sandbox process.
pub struct SandboxProcess {
    child: Option<Child>,
    channel: Option<Channel>,
    /// For container backends: the engine and container name to remove.
    container: Option<(PathBuf, String)>,
    /// bubblewrap's per-sandbox cgroup, removed after the process is gone.
    pub(super) cgroup: Option<super::cgroup::SandboxCgroup>,
}

impl SandboxProcess {
    /// Spawns `cmd` supervised. The channel is `socket` when given (its
    /// guest end becomes fd 3 of the child), else the child's stdin and
    /// stdout. A container engine's client gets SIGTERM when codemode dies
    /// (it then stops and removes its container); bubblewrap gets SIGKILL.
    pub(super) fn spawn(
        mut cmd: Command,
        name: String,
        container: Option<(PathBuf, String)>,
        socket: Option<ChannelSocket>,
    ) -> Result<Self, RuntimeError> {
        if let Some(socket) = &socket {
            let fd = socket.guest.as_raw_fd();
            // SAFETY: the closure runs in the forked child before exec and
            // only calls dup2 and fcntl, which are async-signal-safe.
            unsafe {
                cmd.pre_exec(move || {
                    if fd == GUEST_CHANNEL_FD {
                        // Already in place: only drop close-on-exec.
                        if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    } else if libc::dup2(fd, GUEST_CHANNEL_FD) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let death = if container.is_some() {
            libc::SIGTERM
        } else {
            libc::SIGKILL
        };
        let label = format!("sandbox {name}");
        // With a socket, the child's stdin and stdout carry nothing.
        let io = if socket.is_some() {
            Io::Closed
        } else {
            Io::Channel
        };
        let mut child =
            Child::spawn(cmd, label.clone(), io, StderrLevel::Warn, death).map_err(|source| {
                RuntimeError::Spawn {
                    what: label.clone(),
                    source,
                }
            })?;
        let channel: Option<Channel> = match socket {
            Some(ChannelSocket { host, guest }) => {
                // The child has its copy; the host's would keep the guest
                // from ever seeing EOF.
                drop(guest);
                let host = host
                    .set_nonblocking(true)
                    .and_then(|()| tokio::net::UnixStream::from_std(host))
                    .map_err(|source| RuntimeError::Spawn {
                        what: label,
                        source,
                    })?;
                let (read, write) = host.into_split();
                Some((Box::new(read), Box::new(write)))
            }
            None => match (child.take_stdout(), child.take_stdin()) {
                (Some(read), Some(write)) => Some((Box::new(read), Box::new(write))),
                _ => None,
            },
        };
        Ok(Self {
            channel,
            child: Some(child),
            container,
            cgroup: None,
        })
    }

    /// The channel, once: what the host reads and writes frames on.
    pub fn take_channel(&mut self) -> Option<Channel> {
        self.channel.take()
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
        self.channel.take();
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

impl std::fmt::Debug for SandboxProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxProcess")
            .field("child", &self.child)
            .field("container", &self.container)
            .finish()
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
