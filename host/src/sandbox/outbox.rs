//! Frames to one guest go through a writer task and a bounded queue, so no
//! caller ever blocks on the guest's pipe: a guest that stops reading can
//! fill the pipe, but then only the writer task waits, while cells keep
//! serving their deadline, cancels and shutdown. Inside a cell, frames wait
//! in the cell's own bounded queue (see `cell`); outside one, a send has a
//! deadline.

use std::time::Duration;

use codemode_proto::codec::FrameCodec;
use codemode_proto::v1::{host_message, GuestMessage, HostMessage};
use futures::SinkExt;
use tokio::io::AsyncWrite;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::codec::FramedWrite;

use super::SandboxError;

/// Frames queued for the writer task; beyond this, senders wait.
const QUEUE: usize = 64;
/// How long a send outside a cell (Init, AddServers) may wait for room.
pub(super) const SEND_WAIT: Duration = Duration::from_secs(10);

pub(super) type Sink = Box<dyn AsyncWrite + Send + Unpin>;

/// The sending half of a guest's channel.
pub(super) struct Outbox {
    tx: mpsc::Sender<HostMessage>,
    task: Option<JoinHandle<()>>,
}

impl Drop for Outbox {
    /// A sandbox dropped without `finish` (an error path) stops its writer
    /// at once, whatever it was waiting on.
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Outbox {
    /// Starts the writer task for `sink`.
    pub(super) fn spawn(sink: Sink, max_frame_bytes: usize) -> Self {
        let (tx, mut rx) = mpsc::channel::<HostMessage>(QUEUE);
        let mut writer = FramedWrite::new(
            sink,
            FrameCodec::<GuestMessage, HostMessage>::new(max_frame_bytes),
        );
        let task = tokio::spawn(async move {
            while let Some(msg) = rx.recv().await {
                if let Err(e) = writer.send(msg).await {
                    tracing::debug!("writing to the sandbox failed: {e}");
                    return;
                }
            }
        });
        Outbox {
            tx,
            task: Some(task),
        }
    }

    /// Queues `kind`, waiting at most [`SEND_WAIT`] for room.
    pub(super) async fn send(&self, kind: host_message::Kind) -> Result<(), SandboxError> {
        let msg = HostMessage { kind: Some(kind) };
        match tokio::time::timeout(SEND_WAIT, self.tx.send(msg)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(SandboxError::Exited {
                during: "a write to it",
            }),
            Err(_) => Err(SandboxError::Stalled {
                secs: SEND_WAIT.as_secs(),
            }),
        }
    }

    /// The queue, for a cell that holds its own pending frames.
    pub(super) fn sender(&self) -> &mpsc::Sender<HostMessage> {
        &self.tx
    }

    /// Queues `kind` only if there is room now.
    pub(super) fn try_send(&self, kind: host_message::Kind) -> bool {
        self.tx.try_send(HostMessage { kind: Some(kind) }).is_ok()
    }

    /// Closes the queue and lets the writer deliver what it holds for at
    /// most `wait`, then stops it whatever it is waiting on (dropping the
    /// channel's write end).
    pub(super) async fn finish(mut self, wait: Duration) {
        let Some(mut task) = self.task.take() else {
            return;
        };
        drop(self);
        if tokio::time::timeout(wait, &mut task).await.is_err() {
            task.abort();
        }
    }
}
