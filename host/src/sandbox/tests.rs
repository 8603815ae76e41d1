//! The host core against an in-process fake guest: a duplex channel that
//! speaks the real protocol, with no sandbox, root, podman or Node. Each
//! test plays a hostile guest the review found, and checks the host holds:
//! its deadline and cancels win, its caps hold whatever the guest sends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use codemode_proto::codec::FrameCodec;
use codemode_proto::v1::{
    guest_message, host_message, rpc_request, Finished, GuestMessage, HostMessage, ListTools,
    Output, Ready, RichOutput, RpcRequest, Status, Stream,
};
use codemode_proto::{PROTOCOL_MAJOR, PROTOCOL_MINOR};
use futures::{SinkExt, StreamExt};
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;

use super::*;

const FRAME_MAX: usize = 8 * 1024 * 1024;

type GuestReader = FramedRead<ReadHalf<DuplexStream>, FrameCodec<HostMessage, GuestMessage>>;
type GuestWriter = FramedWrite<WriteHalf<DuplexStream>, FrameCodec<HostMessage, GuestMessage>>;

/// A sandbox whose guest is this test: the host's end is a `Sandbox`, the
/// guest's end reads host frames and writes guest frames. `pipe` bytes of
/// buffer each way, so a test can fill them.
async fn sandbox_with_fake_guest(pipe: usize) -> (Sandbox, GuestReader, GuestWriter) {
    let (host_end, guest_end) = tokio::io::duplex(pipe);
    let (host_read, host_write) = tokio::io::split(host_end);
    let (guest_read, guest_write) = tokio::io::split(guest_end);
    let reader = FramedRead::new(guest_read, FrameCodec::new(FRAME_MAX));
    let mut writer = FramedWrite::new(guest_write, FrameCodec::new(FRAME_MAX));
    writer
        .send(guest(guest_message::Kind::Ready(Ready {
            guest_version: "fake".into(),
            python_version: "3.x".into(),
            protocol_major: PROTOCOL_MAJOR,
            protocol_minor: PROTOCOL_MINOR,
        })))
        .await
        .expect("send Ready");
    let sandbox = Sandbox::over_channel("fake", host_read, host_write, FRAME_MAX)
        .await
        .expect("handshake")
        .init(Init::default())
        .await
        .expect("init");
    (sandbox, reader, writer)
}

fn guest(kind: guest_message::Kind) -> GuestMessage {
    GuestMessage { kind: Some(kind) }
}

/// Reads host frames until Execute; returns its id.
async fn next_execute(reader: &mut GuestReader) -> u64 {
    while let Some(frame) = reader.next().await {
        if let Ok(HostMessage {
            kind: Some(host_message::Kind::Execute(e)),
        }) = frame
        {
            return e.id;
        }
    }
    panic!("the host never sent Execute");
}

/// Answers every RPC at once with a few KiB of JSON.
struct BigAnswers;

impl RpcHandler for BigAnswers {
    fn call(&self, _call: rpc_request::Call) -> RpcFuture {
        Box::pin(async { Ok(format!("[\"{}\"]", "x".repeat(4096))) })
    }
}

/// Counts the chunks it is given.
#[derive(Default)]
struct Counting(Arc<AtomicUsize>);

impl OutputListener for Counting {
    fn chunk(&mut self, _stream: Stream, _data: &[u8]) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn request<'a>(
    timeout: Duration,
    listener: &'a mut dyn OutputListener,
    cancel: CancellationToken,
) -> CellRequest<'a> {
    CellRequest {
        code: "pass".into(),
        timeout,
        max_output_bytes: 64 * 1024,
        call_budget: 5000,
        handler: Arc::new(BigAnswers),
        listener,
        cancel,
    }
}

/// A guest that answers Execute with 1000 RPC requests and then neither
/// reads nor writes, holding the channel open.
fn spawn_flooding_guest(
    mut from_host: GuestReader,
    mut to_host: GuestWriter,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let id = next_execute(&mut from_host).await;
        for rpc in 1..=1000u64 {
            let req = guest(guest_message::Kind::RpcRequest(RpcRequest {
                id: rpc,
                execution_id: id,
                call: Some(rpc_request::Call::ListTools(ListTools {
                    server: "any".into(),
                })),
            }));
            if to_host.send(req).await.is_err() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_secs(3600)).await;
        drop(from_host);
    })
}

/// A guest that floods RPC requests and never reads the answers: the
/// host's answers fill the pipe. The cell's deadline must still end it.
#[tokio::test]
async fn a_guest_that_never_reads_cannot_stall_the_deadline() {
    let (mut sb, from_host, to_host) = sandbox_with_fake_guest(4096).await;
    let flood = spawn_flooding_guest(from_host, to_host);
    let mut none = NoListener;
    let req = request(Duration::from_secs(1), &mut none, CancellationToken::new());
    let started = std::time::Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(10), sb.run_cell(req))
        .await
        .expect("the deadline fires while the guest does not read");
    assert!(
        matches!(
            result.termination,
            Termination::SandboxLost {
                cancelled: false,
                ..
            }
        ),
        "{:?}",
        result.termination
    );
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    tokio::time::timeout(Duration::from_secs(2), sb.shutdown())
        .await
        .expect("shutdown does not wait on a stuck guest");
    flood.abort();
}

/// The same flood, ended by the client's cancel long before the deadline.
#[tokio::test]
async fn a_cancel_wins_over_a_flooding_guest() {
    let (mut sb, from_host, to_host) = sandbox_with_fake_guest(4096).await;
    let flood = spawn_flooding_guest(from_host, to_host);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let mut none = NoListener;
    let req = request(Duration::from_secs(120), &mut none, cancel);
    let result = tokio::time::timeout(Duration::from_secs(10), sb.run_cell(req))
        .await
        .expect("the cancel ends the cell although the guest does not read");
    assert!(
        matches!(
            result.termination,
            Termination::SandboxLost {
                cancelled: true,
                ..
            }
        ),
        "{:?}",
        result.termination
    );
    flood.abort();
}

/// A forged Finished with a million empty rich outputs becomes no image
/// blocks, and the count of what was dropped.
#[tokio::test]
async fn a_forged_finished_cannot_flood_rich_outputs() {
    let (mut sb, mut from_host, mut to_host) = sandbox_with_fake_guest(64 * 1024).await;
    let forger = tokio::spawn(async move {
        let id = next_execute(&mut from_host).await;
        let mut rich = vec![RichOutput::default(); 1_000_000];
        rich.extend((0..40).map(|_| RichOutput {
            mime_type: "image/png".into(),
            data: vec![1; 16],
        }));
        let done = guest(guest_message::Kind::Finished(Finished {
            id,
            status: Status::Success as i32,
            rich,
            ..Finished::default()
        }));
        to_host.send(done).await.expect("send Finished");
        (from_host, to_host)
    });
    let mut none = NoListener;
    let req = request(Duration::from_secs(30), &mut none, CancellationToken::new());
    let result = sb.run_cell(req).await;
    assert!(
        result.rich.is_empty(),
        "{} rich outputs kept",
        result.rich.len()
    );
    assert_eq!(result.dropped_rich, 1_000_040);
    let _ = forger.await;
}

/// 400,000 empty Output frames reach neither the listener (so no progress
/// notifications) nor the result.
#[tokio::test]
async fn empty_output_frames_are_not_forwarded() {
    let (mut sb, mut from_host, mut to_host) = sandbox_with_fake_guest(64 * 1024).await;
    let flood = tokio::spawn(async move {
        let id = next_execute(&mut from_host).await;
        for _ in 0..400_000 {
            let out = guest(guest_message::Kind::Output(Output {
                execution_id: id,
                stream: Stream::Stdout as i32,
                data: Vec::new(),
            }));
            to_host.feed(out).await.expect("feed Output");
        }
        let done = guest(guest_message::Kind::Finished(Finished {
            id,
            status: Status::Success as i32,
            ..Finished::default()
        }));
        to_host.send(done).await.expect("send Finished");
        (from_host, to_host)
    });
    let chunks = Arc::new(AtomicUsize::new(0));
    let mut counting = Counting(chunks.clone());
    let req = request(
        Duration::from_secs(60),
        &mut counting,
        CancellationToken::new(),
    );
    let result = sb.run_cell(req).await;
    assert!(
        matches!(result.termination, Termination::Success),
        "{:?}",
        result.termination
    );
    assert_eq!(chunks.load(Ordering::SeqCst), 0);
    assert!(result.stdout.text().is_empty());
    let _ = flood.await;
}

/// Sends `frame` as the answer to the first Execute and keeps the channel.
async fn answer_execute_with(
    from_host: &mut GuestReader,
    to_host: &mut GuestWriter,
    frame: impl FnOnce(u64) -> GuestMessage,
) {
    let id = next_execute(from_host).await;
    to_host.send(frame(id)).await.expect("send");
}

/// Frames that break the protocol end the cell with a typed violation
/// saying what was expected and what came.
#[tokio::test]
async fn protocol_violations_are_typed() {
    type Forge = fn(u64) -> GuestMessage;
    let cases: [(Forge, ProtocolViolation); 4] = [
        (
            |id| {
                guest(guest_message::Kind::Output(Output {
                    execution_id: id,
                    stream: 7,
                    data: b"x".to_vec(),
                }))
            },
            ProtocolViolation::UnknownEnum {
                field: "Output.stream",
                value: 7,
            },
        ),
        (
            |id| {
                guest(guest_message::Kind::Finished(Finished {
                    id,
                    status: 0,
                    ..Finished::default()
                }))
            },
            ProtocolViolation::UnknownEnum {
                field: "Finished.status",
                value: 0,
            },
        ),
        (
            |id| {
                guest(guest_message::Kind::Finished(Finished {
                    id: id + 5,
                    status: Status::Success as i32,
                    ..Finished::default()
                }))
            },
            ProtocolViolation::WrongExecution {
                what: "Finished",
                received: 6,
                running: 1,
            },
        ),
        (
            |_| guest(guest_message::Kind::Ready(Ready::default())),
            ProtocolViolation::Unexpected {
                expected: "Output, RpcRequest, Log or Finished during a cell",
                received: "Ready",
            },
        ),
    ];
    for (forge, expected) in cases {
        let (mut sb, mut from_host, mut to_host) = sandbox_with_fake_guest(64 * 1024).await;
        let guest_side = tokio::spawn(async move {
            answer_execute_with(&mut from_host, &mut to_host, forge).await;
            (from_host, to_host)
        });
        let mut none = NoListener;
        let req = request(Duration::from_secs(30), &mut none, CancellationToken::new());
        match sb.run_cell(req).await.termination {
            Termination::PeerGone(SandboxError::Protocol(v)) => assert_eq!(v, expected),
            other => panic!("expected {expected:?}, got {other:?}"),
        }
        let _ = guest_side.await;
    }
}
