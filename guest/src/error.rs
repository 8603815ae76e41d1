//! Errors of the guest's own machinery: start-up failures and the protocol
//! violations that end the session. Each message says what was expected and
//! what arrived.

use std::io;

use codemode_proto::{FrameError, VersionMismatch};

/// The guest could not get to the point of sending `Ready`.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("invalid command line: {0}; expected `--max-frame-bytes N` and `--max-processes N`, each optional")]
    Args(String),
    #[error(
        "fd {fd} must be open (the codemode channel is stdin/stdout, diagnostics stderr): {source}"
    )]
    StdioFd {
        fd: i32,
        #[source]
        source: io::Error,
    },
    #[error("cannot set up {what}: {source}")]
    Setup {
        what: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("cannot start the {name} thread: {source}")]
    Thread {
        name: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("the Python interpreter failed to initialize: {0}")]
    PythonInit(String),
    #[error("the guest's Python runtime failed to load: {0}")]
    Bootstrap(String),
    #[error("cannot compile the Python files under {dir}: {reason}")]
    Compile { dir: String, reason: String },
    #[error("cannot send Ready to the host: {0}")]
    Ready(#[source] FrameError),
}

/// The host sent something the guest cannot accept: the session ends.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolViolation {
    #[error("cannot read a frame from the host: {0}")]
    Frame(#[from] FrameError),
    #[error(transparent)]
    Version(#[from] VersionMismatch),
    #[error("expected {expected}, received {received}")]
    OutOfOrder {
        expected: &'static str,
        received: &'static str,
    },
    #[error("received Execute {id} while cell {running} is still running; expected Execute only after Finished")]
    ExecuteWhileRunning { id: u64, running: u64 },
    #[error("received Execute {id} after Execute {last}; expected increasing execution ids")]
    ExecuteIdNotIncreasing { id: u64, last: u64 },
    #[error("received RpcResponse {id}, which answers no outstanding request of this guest")]
    UnknownRpc { id: u64 },
    #[error("received RpcResponse {id} with neither ok_json nor error set")]
    EmptyRpcResponse { id: u64 },
}
