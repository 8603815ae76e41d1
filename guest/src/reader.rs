//! The reader thread: reads the host's frames, enforces the protocol's order
//! (Init once and first, one cell at a time, increasing ids, responses only
//! to outstanding requests), handles Cancel and Shutdown itself, and queues
//! the rest for the Python thread. It never takes the GIL, so a cell that
//! holds it cannot stop a Cancel.

use std::fs::File;

use codemode_proto::check_peer_version;
use codemode_proto::frame::read_frame;
use codemode_proto::v1::{host_message::Kind, rpc_response, HostMessage, Init};

use crate::channel::lock;
use crate::error::ProtocolViolation;
use crate::session::{Inbound, Interrupt, Phase, RunningCell, Session};

/// Reads frames until the channel ends; never returns.
pub fn run(session: &Session, mut input: File) -> ! {
    loop {
        match read_frame::<HostMessage, _>(&mut input, session.read_max) {
            Ok(None) => session.exit_clean(),
            Ok(Some(message)) => {
                if let Err(violation) = handle(session, message) {
                    session.channel.fail(&violation.to_string());
                }
            }
            Err(err) => session
                .channel
                .fail(&ProtocolViolation::Frame(err).to_string()),
        }
    }
}

fn kind_name(kind: &Kind) -> &'static str {
    match kind {
        Kind::Init(_) => "Init",
        Kind::Execute(_) => "Execute",
        Kind::Cancel(_) => "Cancel",
        Kind::AddServers(_) => "AddServers",
        Kind::RpcResponse(_) => "RpcResponse",
        Kind::Shutdown(_) => "Shutdown",
    }
}

fn handle(session: &Session, message: HostMessage) -> Result<(), ProtocolViolation> {
    // `read_frame` refuses messages whose kind is unset.
    let Some(kind) = message.kind else {
        return Ok(());
    };
    let received = kind_name(&kind);
    let mut control = lock(&session.control);
    let initialized = control.phase == Phase::Initialized;
    match kind {
        Kind::Init(init) => {
            if initialized {
                return Err(ProtocolViolation::OutOfOrder {
                    expected: "Execute, Cancel, AddServers, RpcResponse or Shutdown (Init was already received)",
                    received,
                });
            }
            check_peer_version("guest", "host", init.protocol_major, init.protocol_minor)?;
            apply_limits(session, &init);
            control.phase = Phase::Initialized;
            drop(control);
            session.deliver(Inbound::Init(init));
        }
        Kind::Execute(execute) => {
            if !initialized {
                return Err(before_init(received));
            }
            if let Some(cell) = &control.cell {
                return Err(ProtocolViolation::ExecuteWhileRunning {
                    id: execute.id,
                    running: cell.id,
                });
            }
            if let Some(last) = control.last_execute.filter(|last| execute.id <= *last) {
                return Err(ProtocolViolation::ExecuteIdNotIncreasing {
                    id: execute.id,
                    last,
                });
            }
            control.last_execute = Some(execute.id);
            control.last_cell = execute.id;
            control.cell = Some(RunningCell {
                id: execute.id,
                timeout_ms: execute.timeout_ms,
                interrupt: None,
                started: None,
            });
            drop(control);
            session.deliver(Inbound::Execute {
                id: execute.id,
                code: execute.code,
            });
        }
        Kind::Cancel(cancel) => {
            drop(control);
            session.interrupt(cancel.id, Interrupt::Cancelled);
        }
        Kind::AddServers(add) => {
            if !initialized {
                return Err(before_init(received));
            }
            drop(control);
            session.deliver(Inbound::AddServers(add.servers));
        }
        Kind::RpcResponse(response) => {
            if !control.pending_rpcs.remove(&response.id) {
                return Err(ProtocolViolation::UnknownRpc { id: response.id });
            }
            if !matches!(
                response.result,
                Some(rpc_response::Result::OkJson(_) | rpc_response::Result::Error(_))
            ) {
                return Err(ProtocolViolation::EmptyRpcResponse { id: response.id });
            }
            drop(control);
            session.deliver_rpc(response);
        }
        Kind::Shutdown(_) => {
            drop(control);
            session.exit_clean();
        }
    }
    Ok(())
}

fn before_init(received: &'static str) -> ProtocolViolation {
    ProtocolViolation::OutOfOrder {
        expected: "Init",
        received,
    }
}

fn apply_limits(session: &Session, init: &Init) {
    let limits = init.limits.unwrap_or_default();
    if limits.max_frame_bytes > 0 {
        session
            .channel
            .set_send_max(limits.max_frame_bytes as usize);
    }
    session
        .output
        .configure(limits.max_output_bytes, limits.max_rich_bytes);
}
