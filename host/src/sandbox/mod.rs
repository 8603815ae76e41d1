//! The host's side of one guest: starts it through a runtime backend,
//! performs the handshake, runs cells and answers the guest's RPCs. Every
//! frame from the guest is untrusted: a violation ends this sandbox with a
//! clear error, never the bridge.

mod cell;
mod outbox;
mod output;
#[cfg(test)]
mod tests;

use std::marker::PhantomData;
use std::time::Duration;

use codemode_proto::codec::FrameCodec;
use codemode_proto::v1::{
    guest_message, host_message, AddServers, GuestMessage, HostMessage, Init, ServerInfo,
};
use codemode_proto::{FrameError, VersionMismatch};
use futures::StreamExt;
use tokio::io::AsyncRead;
use tokio_util::codec::FramedRead;

use outbox::{Outbox, Sink};

pub use cell::{CellRequest, RpcFuture, RpcHandler, Termination, MAX_RICH_BYTES, MAX_RICH_OUTPUTS};
pub use output::{NoListener, OutputListener};

use crate::runtime::{Backend, LaunchSpec, RuntimeError, SandboxProcess};

/// How long a new sandbox may take to send Ready. A cold podman start is
/// ~0.3 s here, but the first start after boot or on a loaded laptop can
/// take seconds; beyond this something is wrong.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest frame the host accepts from a guest. Decoding a hostile frame
/// can take ~35x its size in memory (repeated empty messages cost 2 bytes on
/// the wire each), so guest frames are held to half the host's own limit.
pub const GUEST_FRAME_MAX: usize = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(
        "sandbox {name} did not send its Ready frame within {secs}s (see the log for its stderr)"
    )]
    ReadyTimeout { name: String, secs: u64 },
    #[error("sandbox exited {during} (out of memory, killed, or the guest crashed); the log has its stderr")]
    Exited { during: &'static str },
    #[error("the sandbox did not start: {stderr}")]
    StartFailed { stderr: String },
    #[error(transparent)]
    Version(#[from] VersionMismatch),
    #[error("sandbox broke the protocol: {0}")]
    Protocol(#[from] ProtocolViolation),
    #[error("sandbox reported a protocol error: {0}")]
    GuestRefused(String),
    #[error("sandbox channel failed: {0}")]
    Frame(#[from] FrameError),
    #[error("the sandbox stopped reading its channel for {secs}s")]
    Stalled { secs: u64 },
}

/// A frame from the guest that its state does not allow: the sandbox
/// is ended with this as the error, and the bridge carries on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolViolation {
    #[error("expected {expected}, received {received}")]
    Unexpected {
        expected: &'static str,
        received: &'static str,
    },
    #[error("received {what} for execution {received} while execution {running} runs")]
    WrongExecution {
        what: &'static str,
        received: u64,
        running: u64,
    },
    #[error("received RpcRequest {0} while a request with that id is in flight")]
    RpcIdReused(u64),
    #[error("received {field} = {value}, which is no value of that enum")]
    UnknownEnum { field: &'static str, value: i32 },
}

type Source = Box<dyn AsyncRead + Send + Unpin>;
type Reader = FramedRead<Source, FrameCodec<GuestMessage, HostMessage>>;

/// How long a shutdown lets the writer task deliver Shutdown.
const SHUTDOWN_SEND_WAIT: Duration = Duration::from_millis(200);

/// State of a sandbox that has sent Ready and awaits Init (the warm pool
/// holds these): it accepts only `init` and `shutdown`.
#[derive(Debug)]
pub struct Started;
/// State of a sandbox that has been sent Init (a session holds these): it
/// runs cells and accepts more servers.
#[derive(Debug)]
pub struct Initialized;

/// A handshaken guest in state `S`. Which messages may be sent is a matter
/// of types: `Init` only from [`Started`], `Execute` and `AddServers` only
/// from [`Initialized`], `Shutdown` from either; `send` is private.
pub struct Sandbox<S = Initialized> {
    /// The sandbox process; `None` for an in-process guest (tests).
    process: Option<SandboxProcess>,
    name: String,
    reader: Reader,
    outbox: Outbox,
    next_execution: u64,
    max_frame_bytes: usize,
    state: PhantomData<S>,
}

impl<S> std::fmt::Debug for Sandbox<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").field("name", &self.name).finish()
    }
}

impl Sandbox<Started> {
    /// Launches a sandbox and waits for the guest's Ready frame.
    pub async fn start(
        backend: &Backend,
        spec: &LaunchSpec,
        max_frame_bytes: usize,
    ) -> Result<Self, SandboxError> {
        let mut process = backend.launch(spec)?;
        let Some((from_guest, to_guest)) = process.take_channel() else {
            return Err(SandboxError::Exited { during: "start-up" });
        };
        Self::handshake(
            Some(process),
            spec.name.clone(),
            from_guest,
            to_guest,
            max_frame_bytes,
        )
        .await
    }

    /// A guest on any byte channel (an in-process fake guest in tests).
    #[cfg(test)]
    pub(crate) async fn over_channel(
        name: &str,
        from_guest: impl AsyncRead + Send + Unpin + 'static,
        to_guest: impl tokio::io::AsyncWrite + Send + Unpin + 'static,
        max_frame_bytes: usize,
    ) -> Result<Self, SandboxError> {
        Self::handshake(
            None,
            name.to_string(),
            Box::new(from_guest),
            Box::new(to_guest),
            max_frame_bytes,
        )
        .await
    }

    /// Waits for the guest's Ready frame and checks its version.
    async fn handshake(
        process: Option<SandboxProcess>,
        name: String,
        from_guest: Source,
        to_guest: Sink,
        max_frame_bytes: usize,
    ) -> Result<Self, SandboxError> {
        let mut reader = FramedRead::new(
            from_guest,
            FrameCodec::new(GUEST_FRAME_MAX.min(max_frame_bytes)),
        );
        let outbox = Outbox::spawn(to_guest, max_frame_bytes);
        let first = tokio::time::timeout(READY_TIMEOUT, reader.next())
            .await
            .map_err(|_| SandboxError::ReadyTimeout {
                name: name.clone(),
                secs: READY_TIMEOUT.as_secs(),
            })?;
        let ready = match first {
            None => {
                let stderr = match &process {
                    Some(p) => p.stderr_tail().await,
                    None => String::new(),
                };
                if stderr.trim().is_empty() {
                    return Err(SandboxError::Exited { during: "start-up" });
                }
                return Err(SandboxError::StartFailed { stderr });
            }
            Some(Err(e)) => return Err(e.into()),
            Some(Ok(GuestMessage {
                kind: Some(guest_message::Kind::Ready(ready)),
            })) => ready,
            Some(Ok(GuestMessage {
                kind: Some(guest_message::Kind::ProtocolError(e)),
            })) => return Err(SandboxError::GuestRefused(e.message)),
            Some(Ok(other)) => {
                return Err(ProtocolViolation::Unexpected {
                    expected: "Ready as the first frame",
                    received: cell::kind_name(&other),
                }
                .into())
            }
        };
        codemode_proto::check_peer_version(
            "host",
            "guest",
            ready.protocol_major,
            ready.protocol_minor,
        )?;
        Ok(Self {
            process,
            name,
            reader,
            outbox,
            next_execution: 1,
            max_frame_bytes,
            state: PhantomData,
        })
    }

    /// Sends Init: the sandbox is then ready to run cells.
    pub async fn init(mut self, init: Init) -> Result<Sandbox<Initialized>, SandboxError> {
        self.send(host_message::Kind::Init(init)).await?;
        let Sandbox {
            process,
            name,
            reader,
            outbox,
            next_execution,
            max_frame_bytes,
            state: _,
        } = self;
        Ok(Sandbox {
            process,
            name,
            reader,
            outbox,
            next_execution,
            max_frame_bytes,
            state: PhantomData,
        })
    }
}

impl Sandbox<Initialized> {
    pub async fn add_servers(&mut self, servers: Vec<ServerInfo>) -> Result<(), SandboxError> {
        self.send(host_message::Kind::AddServers(AddServers { servers }))
            .await
    }
}

impl<S> Sandbox<S> {
    /// Whether the sandbox process is still running.
    pub fn is_alive(&mut self) -> bool {
        self.process.as_mut().is_none_or(|p| !p.has_exited())
    }

    async fn send(&mut self, kind: host_message::Kind) -> Result<(), SandboxError> {
        self.outbox.send(kind).await
    }

    /// Asks the guest to exit (if its channel has room), then escalates;
    /// never waits on a guest that stopped reading.
    pub async fn shutdown(self) {
        let Sandbox {
            process, outbox, ..
        } = self;
        outbox.try_send(host_message::Kind::Shutdown(Default::default()));
        // Closing the queue lets the writer deliver Shutdown, then drop the
        // guest's stdin (EOF, which also ends it).
        outbox.finish(SHUTDOWN_SEND_WAIT).await;
        if let Some(process) = process {
            process.shutdown().await;
        }
    }
}
