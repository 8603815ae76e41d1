//! The host's side of one guest: starts it through a runtime backend,
//! performs the handshake, runs cells and answers the guest's RPCs. Every
//! frame from the guest is untrusted: a violation ends this sandbox with a
//! clear error, never the bridge.

mod cell;
mod output;

use std::time::Duration;

use codemode_proto::codec::FrameCodec;
use codemode_proto::v1::{
    guest_message, host_message, AddServers, GuestMessage, HostMessage, Init, Ready, ServerInfo,
};
use codemode_proto::{FrameError, VersionMismatch};
use futures::{SinkExt, StreamExt};
use tokio::process::{ChildStdin, ChildStdout};
use tokio_util::codec::{FramedRead, FramedWrite};

pub use cell::{CellRequest, CellResult, CellStatus, RpcFuture, RpcHandler};
pub use output::{CappedStream, NoListener, OutputListener};

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
    Protocol(String),
    #[error("sandbox reported a protocol error: {0}")]
    GuestRefused(String),
    #[error("sandbox channel failed: {0}")]
    Frame(#[from] FrameError),
}

type Reader = FramedRead<ChildStdout, FrameCodec<GuestMessage, HostMessage>>;
type Writer = FramedWrite<ChildStdin, FrameCodec<GuestMessage, HostMessage>>;

/// A started, handshaken guest.
pub struct Sandbox {
    process: SandboxProcess,
    reader: Reader,
    writer: Writer,
    pub ready: Ready,
    next_execution: u64,
    initialized: bool,
    max_frame_bytes: usize,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("name", &self.process.name)
            .finish()
    }
}

impl Sandbox {
    /// Launches a sandbox and waits for the guest's Ready frame.
    pub async fn start(
        backend: &Backend,
        spec: &LaunchSpec,
        max_frame_bytes: usize,
    ) -> Result<Self, SandboxError> {
        let mut process = backend.launch(spec)?;
        let (Some(stdin), Some(stdout)) = (process.stdin.take(), process.stdout.take()) else {
            return Err(SandboxError::Exited { during: "start-up" });
        };
        let mut reader = FramedRead::new(
            stdout,
            FrameCodec::new(GUEST_FRAME_MAX.min(max_frame_bytes)),
        );
        let writer = FramedWrite::new(stdin, FrameCodec::new(max_frame_bytes));
        let first = tokio::time::timeout(READY_TIMEOUT, reader.next())
            .await
            .map_err(|_| SandboxError::ReadyTimeout {
                name: spec.name.clone(),
                secs: READY_TIMEOUT.as_secs(),
            })?;
        let ready = match first {
            None => {
                let stderr = process.stderr_tail().await;
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
                return Err(SandboxError::Protocol(format!(
                    "expected Ready as the first frame, got {}",
                    cell::kind_name(&other)
                )))
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
            reader,
            writer,
            ready,
            next_execution: 1,
            initialized: false,
            max_frame_bytes,
        })
    }

    pub fn name(&self) -> &str {
        &self.process.name
    }

    pub fn is_initialized(&self) -> bool {
        self.initialized
    }

    /// Whether the sandbox process is still running.
    pub fn is_alive(&mut self) -> bool {
        !self.process.has_exited()
    }

    pub async fn init(&mut self, init: Init) -> Result<(), SandboxError> {
        self.send(host_message::Kind::Init(init)).await?;
        self.initialized = true;
        Ok(())
    }

    pub async fn add_servers(&mut self, servers: Vec<ServerInfo>) -> Result<(), SandboxError> {
        self.send(host_message::Kind::AddServers(AddServers { servers }))
            .await
    }

    async fn send(&mut self, kind: host_message::Kind) -> Result<(), SandboxError> {
        self.writer
            .send(HostMessage { kind: Some(kind) })
            .await
            .map_err(|e| match e {
                FrameError::Io(_) => SandboxError::Exited {
                    during: "a write to it",
                },
                other => other.into(),
            })
    }

    /// Asks the guest to exit, then escalates.
    pub async fn shutdown(mut self) {
        let _ = tokio::time::timeout(
            Duration::from_millis(200),
            self.send(host_message::Kind::Shutdown(Default::default())),
        )
        .await;
        let Sandbox {
            process, writer, ..
        } = self;
        drop(writer);
        process.shutdown().await;
    }
}
