//! Running one cell: send Execute, then serve the guest's frames until its
//! Finished frame — streaming output, answering RPCs concurrently (bounded),
//! forwarding cancellation, and killing a guest that overruns its deadline.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_proto::v1::{
    guest_message, host_message, rpc_request, rpc_response, Cancel, Display, ErrorKind, Execute,
    GuestMessage, HostMessage, LogLevel, PyError, RichOutput, RpcError, RpcRequest, RpcResponse,
    Status, Stream,
};
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::output::{CappedStream, OutputListener};
use super::{Initialized, ProtocolViolation, Sandbox, SandboxError};

/// After the cell's own timeout the guest interrupts it itself; this is how
/// much longer the host waits for Finished before killing the sandbox
/// (covers C code that ignores KeyboardInterrupt).
const KILL_GRACE: Duration = Duration::from_secs(3);
/// After a cancel request, how long the guest gets to stop the cell.
const CANCEL_GRACE: Duration = Duration::from_secs(3);
/// RPCs answered concurrently; more wait in a queue.
const MAX_INFLIGHT_RPCS: usize = 64;
/// Frames the host holds for a guest that is slow to read them (RPC
/// answers, a cancel); while this many wait, the host stops reading the
/// guest's frames, so a guest that never reads cannot grow them.
const MAX_PENDING_FRAMES: usize = MAX_INFLIGHT_RPCS + 16;
/// Rich outputs (images) one cell may return, and their bytes in all:
/// the guest caps them too, but a forged Finished must not turn into a
/// million image blocks.
pub const MAX_RICH_OUTPUTS: usize = 32;
pub const MAX_RICH_BYTES: usize = 8 * 1024 * 1024;

/// Bytes of a cell's shown value (its repr) kept, and of its JSON: the
/// guest bounds both (32 KiB of text, 64 KiB of JSON); a forged Finished
/// gets no more than this.
const MAX_DISPLAY_TEXT: usize = 64 * 1024;
const MAX_RESULT_JSON: usize = 256 * 1024;

/// RPCs of any kind one cell may send (discovery calls included), or
/// twice the tool-call budget when that is larger; tool calls have their
/// own configurable budget.
const MAX_RPCS_PER_CELL: u32 = 10_000;

/// What a cell that used up its tool-call budget is told: what to do, and
/// which setting raises it.
pub fn budget_message(budget: u32) -> String {
    format!(
        "tool-call budget of {budget} calls per cell used up: split the work over several run_python calls \
         (the budget is per cell), or have whoever runs codemode raise it with --call-budget \
         (MCP_BRIDGE_CALL_BUDGET)"
    )
}

pub type RpcFuture = Pin<Box<dyn Future<Output = Result<String, RpcError>> + Send>>;
/// An RPC in flight, tagged with its request id.
type Tagged = Pin<Box<dyn Future<Output = (u64, Result<String, RpcError>)> + Send>>;

/// Answers the guest's RPCs; the session's policy lives behind it.
pub trait RpcHandler: Send + Sync {
    fn call(&self, call: rpc_request::Call) -> RpcFuture;
}

/// What to run.
pub struct CellRequest<'a> {
    pub code: String,
    pub timeout: Duration,
    pub max_output_bytes: usize,
    pub call_budget: u32,
    pub handler: Arc<dyn RpcHandler>,
    pub listener: &'a mut dyn OutputListener,
    pub cancel: CancellationToken,
}

/// How a cell ended: the one type that flows from the sandbox, through the
/// session, to the status a client sees.
#[derive(Debug)]
pub enum Termination {
    /// It ran to its end.
    Success,
    /// It raised: the exception, with its traceback.
    Raised(PyError),
    /// Its deadline passed and the guest stopped it (the interrupt, when
    /// the guest reported one).
    Timeout(Option<PyError>),
    /// The client cancelled it and the guest stopped it.
    Cancelled(Option<PyError>),
    /// It did not stop when interrupted (deadline or cancel), so its
    /// sandbox was killed after `after`: the session's state is gone.
    SandboxLost { after: Duration, cancelled: bool },
    /// The guest broke the protocol, refused, or its channel closed: the
    /// sandbox is unusable and its state is gone.
    PeerGone(SandboxError),
}

impl Termination {
    /// Whether the sandbox must be dropped after this cell.
    pub fn loses_sandbox(&self) -> bool {
        matches!(
            self,
            Termination::SandboxLost { .. } | Termination::PeerGone(_)
        )
    }
}

/// The outcome of one cell: how it ended, and everything it produced until
/// then (nothing is lost when the sandbox is).
#[derive(Debug)]
pub struct CellResult {
    pub termination: Termination,
    pub stdout: CappedStream,
    pub stderr: CappedStream,
    pub duration: Duration,
    pub rich: Vec<RichOutput>,
    pub tool_calls: u32,
    /// Processes cells left running (kept), as the guest counted them.
    pub running_processes: u32,
    /// Processes this cell left running that the guest ended at its end.
    pub ended_processes: u32,
    /// Rich outputs dropped by the host's caps.
    pub dropped_rich: usize,
    /// The cell's last value as the guest showed it, within
    /// [`MAX_DISPLAY_TEXT`] and [`MAX_RESULT_JSON`].
    pub display: Option<Display>,
}

/// `display` within the host's bounds: the text cut at a character
/// boundary, JSON beyond its bound dropped (cut JSON is no JSON).
fn cap_display(display: Display) -> Display {
    let mut text = display.text;
    if text.len() > MAX_DISPLAY_TEXT {
        let mut end = MAX_DISPLAY_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("\n[... cut by codemode ...]");
    }
    let result_json = if display.result_json.len() <= MAX_RESULT_JSON {
        display.result_json
    } else {
        String::new()
    };
    Display { text, result_json }
}

/// Keeps the first rich outputs within [`MAX_RICH_OUTPUTS`] and
/// [`MAX_RICH_BYTES`]; returns how many were dropped.
fn cap_rich(rich: &mut Vec<RichOutput>) -> usize {
    let total = rich.len();
    let mut bytes = 0usize;
    let mut keep = 0usize;
    for r in rich.iter() {
        let size = r.data.len() + r.mime_type.len();
        if keep == MAX_RICH_OUTPUTS || bytes + size > MAX_RICH_BYTES {
            break;
        }
        bytes += size;
        keep += 1;
    }
    rich.truncate(keep);
    rich.retain(|r| !r.data.is_empty());
    total - rich.len()
}

pub(super) fn kind_name(msg: &GuestMessage) -> &'static str {
    match &msg.kind {
        Some(guest_message::Kind::Ready(_)) => "Ready",
        Some(guest_message::Kind::Output(_)) => "Output",
        Some(guest_message::Kind::RpcRequest(_)) => "RpcRequest",
        Some(guest_message::Kind::Finished(_)) => "Finished",
        Some(guest_message::Kind::Log(_)) => "Log",
        Some(guest_message::Kind::ProtocolError(_)) => "ProtocolError",
        None => "an empty message",
    }
}

fn rpc_error(kind: ErrorKind, message: impl Into<String>) -> RpcError {
    RpcError {
        kind: kind as i32,
        message: message.into(),
    }
}

impl Sandbox<Initialized> {
    /// Runs one cell. When its termination [loses the
    /// sandbox](Termination::loses_sandbox), the caller drops it.
    pub async fn run_cell(&mut self, req: CellRequest<'_>) -> CellResult {
        let started = Instant::now();
        let mut result = CellResult {
            termination: Termination::Success,
            stdout: CappedStream::new(req.max_output_bytes),
            stderr: CappedStream::new(req.max_output_bytes),
            duration: Duration::ZERO,
            rich: Vec::new(),
            tool_calls: 0,
            running_processes: 0,
            ended_processes: 0,
            dropped_rich: 0,
            display: None,
        };
        result.termination = match self.drive(req, &mut result, started).await {
            Ok(termination) => termination,
            Err(e) => Termination::PeerGone(e),
        };
        result.duration = started.elapsed();
        result
    }

    /// The cell loop: sends Execute, then answers the guest until the cell
    /// ends. `Err` is a guest that can no longer be used.
    async fn drive(
        &mut self,
        req: CellRequest<'_>,
        result: &mut CellResult,
        started: Instant,
    ) -> Result<Termination, SandboxError> {
        let id = self.next_execution;
        self.next_execution += 1;
        let timeout_ms = u64::try_from(req.timeout.as_millis()).unwrap_or(u64::MAX);
        self.send(host_message::Kind::Execute(Execute {
            id,
            code: req.code,
            timeout_ms,
        }))
        .await?;
        let hard_deadline = tokio::time::Instant::now() + req.timeout + KILL_GRACE;
        let mut cancel_deadline: Option<tokio::time::Instant> = None;
        let mut inflight: FuturesUnordered<Tagged> = FuturesUnordered::new();
        let mut inflight_ids: HashSet<u64> = HashSet::new();
        let mut queued: VecDeque<(u64, rpc_request::Call)> = VecDeque::new();
        let mut rpcs: u32 = 0;
        // Frames for the guest, sent as the writer's queue has room: the
        // loop never waits on the guest reading them.
        let mut outgoing: VecDeque<host_message::Kind> = VecDeque::new();
        let to_guest = self.outbox.sender().clone();
        let max_rpcs = MAX_RPCS_PER_CELL.max(req.call_budget.saturating_mul(2));

        loop {
            let deadline = cancel_deadline.map_or(hard_deadline, |c| c.min(hard_deadline));
            let room = outgoing.len() < MAX_PENDING_FRAMES;
            tokio::select! {
                // The deadline and a cancel win over everything the guest sends.
                biased;
                _ = tokio::time::sleep_until(deadline) => {
                    if let Some(process) = self.process.as_mut() {
                        process.kill_now();
                    }
                    return Ok(Termination::SandboxLost {
                        after: started.elapsed(),
                        cancelled: cancel_deadline.is_some(),
                    });
                }
                _ = req.cancel.cancelled(), if cancel_deadline.is_none() => {
                    outgoing.push_front(host_message::Kind::Cancel(Cancel { id }));
                    cancel_deadline = Some(tokio::time::Instant::now() + CANCEL_GRACE);
                }
                permit = to_guest.reserve(), if !outgoing.is_empty() => {
                    let Ok(permit) = permit else {
                        return Err(SandboxError::Exited { during: "a write to it" });
                    };
                    if let Some(kind) = outgoing.pop_front() {
                        permit.send(HostMessage { kind: Some(kind) });
                    }
                }
                Some((rpc_id, answer)) = inflight.next(), if !inflight.is_empty() && room => {
                    inflight_ids.remove(&rpc_id);
                    outgoing.push_back(self.response(rpc_id, answer));
                    if let Some((qid, qcall)) = queued.pop_front() {
                        inflight_ids.insert(qid);
                        let fut = req.handler.call(qcall);
                        inflight.push(Box::pin(async move { (qid, fut.await) }));
                    }
                }
                frame = self.reader.next(), if room => {
                    let msg = match frame {
                        None => return Err(SandboxError::Exited { during: "a cell" }),
                        Some(Err(e)) => return Err(e.into()),
                        Some(Ok(msg)) => msg,
                    };
                    match msg.kind {
                        Some(guest_message::Kind::Output(out)) => {
                            if out.execution_id != id {
                                return Err(ProtocolViolation::WrongExecution { what: "Output", received: out.execution_id, running: id }.into());
                            }
                            let stream = match Stream::try_from(out.stream) {
                                Ok(s @ (Stream::Stdout | Stream::Stderr)) => s,
                                _ => return Err(ProtocolViolation::UnknownEnum { field: "Output.stream", value: out.stream }.into()),
                            };
                            if out.data.is_empty() {
                                continue;
                            }
                            match stream {
                                Stream::Stderr => result.stderr.push(&out.data),
                                _ => result.stdout.push(&out.data),
                            }
                            req.listener.chunk(stream, &out.data);
                        }
                        Some(guest_message::Kind::RpcRequest(RpcRequest { id: rpc_id, execution_id, call })) => {
                            if execution_id != id {
                                return Err(ProtocolViolation::WrongExecution { what: "RpcRequest", received: execution_id, running: id }.into());
                            }
                            if inflight_ids.contains(&rpc_id) || queued.iter().any(|(q, _)| *q == rpc_id) {
                                return Err(ProtocolViolation::RpcIdReused(rpc_id).into());
                            }
                            rpcs += 1;
                            let immediate = match call {
                                None => Some(rpc_error(ErrorKind::InvalidArguments, "RpcRequest without a call")),
                                Some(_) if rpcs > max_rpcs => Some(rpc_error(
                                    ErrorKind::BudgetExceeded,
                                    format!("this cell sent more than {max_rpcs} requests"))),
                                Some(rpc_request::Call::CallTool(_)) if result.tool_calls >= req.call_budget => Some(rpc_error(
                                    ErrorKind::BudgetExceeded,
                                    budget_message(req.call_budget))),
                                Some(c) => {
                                    if matches!(c, rpc_request::Call::CallTool(_)) {
                                        result.tool_calls += 1;
                                    }
                                    queued.push_back((rpc_id, c));
                                    None
                                }
                            };
                            if let Some(err) = immediate {
                                outgoing.push_back(self.response(rpc_id, Err(err)));
                            }
                            while inflight.len() < MAX_INFLIGHT_RPCS {
                                let Some((qid, qcall)) = queued.pop_front() else { break };
                                inflight_ids.insert(qid);
                                let fut = req.handler.call(qcall);
                                inflight.push(Box::pin(async move { (qid, fut.await) }));
                            }
                        }
                        Some(guest_message::Kind::Finished(done)) => {
                            if done.id != id {
                                return Err(ProtocolViolation::WrongExecution { what: "Finished", received: done.id, running: id }.into());
                            }
                            let termination = match Status::try_from(done.status) {
                                Ok(Status::Success) => Termination::Success,
                                Ok(Status::Error) => Termination::Raised(done.error.unwrap_or_else(|| PyError {
                                    r#type: "Error".into(),
                                    message: "the cell failed without reporting an exception".into(),
                                    traceback: String::new(),
                                })),
                                Ok(Status::Timeout) => Termination::Timeout(done.error),
                                Ok(Status::Cancelled) => Termination::Cancelled(done.error),
                                _ => return Err(ProtocolViolation::UnknownEnum { field: "Finished.status", value: done.status }.into()),
                            };
                            result.rich = done.rich;
                            result.dropped_rich = cap_rich(&mut result.rich);
                            result.running_processes = done.running_processes;
                            result.ended_processes = done.ended_processes;
                            result.display = done.display.map(cap_display);
                            return Ok(termination);
                        }
                        Some(guest_message::Kind::Log(log)) => {
                            let level = match LogLevel::try_from(log.level) {
                                Ok(LogLevel::Unspecified) | Err(_) => return Err(ProtocolViolation::UnknownEnum { field: "Log.level", value: log.level }.into()),
                                Ok(level) => level,
                            };
                            let text: String = log.message.chars().take(2000).collect();
                            match level {
                                LogLevel::Error | LogLevel::Warn => tracing::warn!(sandbox = %self.name, "guest: {text}"),
                                _ => tracing::debug!(sandbox = %self.name, "guest: {text}"),
                            }
                        }
                        Some(guest_message::Kind::ProtocolError(e)) => return Err(SandboxError::GuestRefused(e.message)),
                        other => {
                            return Err(ProtocolViolation::Unexpected {
                                expected: "Output, RpcRequest, Log or Finished during a cell",
                                received: kind_name(&GuestMessage { kind: other }),
                            }.into())
                        }
                    }
                }
            }
        }
    }

    /// The RpcResponse frame for `answer` (an error when it would not fit
    /// a frame).
    fn response(&self, id: u64, answer: Result<String, RpcError>) -> host_message::Kind {
        /// Room for the frame's own fields around the JSON payload.
        const ENVELOPE: usize = 64;
        let result = match answer {
            Ok(json) if json.len() + ENVELOPE > self.max_frame_bytes => rpc_response::Result::Error(rpc_error(
                ErrorKind::ServerError,
                format!(
                    "the result is {} bytes, more than the {}-byte frame limit; ask the tool for less",
                    json.len(),
                    self.max_frame_bytes
                ),
            )),
            Ok(json) => rpc_response::Result::OkJson(json),
            Err(e) => rpc_response::Result::Error(e),
        };
        host_message::Kind::RpcResponse(RpcResponse {
            id,
            result: Some(result),
        })
    }
}
