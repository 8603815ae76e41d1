//! A fake host for the guest's tests: spawns the real `codemode-guest`
//! binary (no container), speaks frames to it with codemode-proto's
//! blocking codec, and answers its RPCs from a canned MCP server.

#![allow(dead_code)]

pub mod fake_server;

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use codemode_proto::frame::{encode_frame, read_frame};
use codemode_proto::v1::{
    guest_message, host_message, Cancel, DiscoveredServer, Execute, Finished, GuestMessage,
    HostMessage, Init, Limits, Ready, RpcRequest, RpcResponse, ServerInfo, Shutdown, Status,
    Stream,
};
use codemode_proto::{DEFAULT_MAX_FRAME_BYTES, PROTOCOL_MAJOR, PROTOCOL_MINOR};

pub const BIN: &str = env!("CARGO_BIN_EXE_codemode-guest");
/// Generous: the CI machine has two cores shared with parallel tests.
pub const WAIT: Duration = Duration::from_secs(30);

/// The host's writing end, handed to RPC handlers so they can answer.
pub struct HostWriter {
    stdin: Option<ChildStdin>,
}

impl HostWriter {
    pub fn send(&mut self, kind: host_message::Kind) {
        let bytes =
            encode_frame(&HostMessage { kind: Some(kind) }, DEFAULT_MAX_FRAME_BYTES).unwrap();
        self.send_raw(&bytes);
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        // The guest may have exited on purpose (protocol tests); ignore EPIPE.
        let _ = stdin.write_all(bytes);
        let _ = stdin.flush();
    }

    pub fn respond(&mut self, response: RpcResponse) {
        self.send(host_message::Kind::RpcResponse(response));
    }
}

/// Everything one cell produced.
#[derive(Debug)]
pub struct CellOutcome {
    pub finished: Finished,
    pub stdout: String,
    pub stderr: String,
    pub outputs: Vec<codemode_proto::v1::Output>,
    pub rpcs: Vec<RpcRequest>,
}

impl CellOutcome {
    pub fn status(&self) -> Status {
        Status::try_from(self.finished.status).unwrap()
    }

    pub fn error_type(&self) -> &str {
        self.finished
            .error
            .as_ref()
            .map_or("", |e| e.r#type.as_str())
    }

    #[track_caller]
    pub fn assert_success(&self) -> &Self {
        assert_eq!(self.status(), Status::Success, "cell failed: {self:#?}");
        self
    }
}

pub struct Guest {
    child: Child,
    pub host: HostWriter,
    frames: Receiver<Result<GuestMessage, String>>,
    stderr: Arc<Mutex<String>>,
    pub ready: Ready,
    next_id: u64,
}

impl Guest {
    /// Spawns the guest and waits for Ready.
    pub fn spawn() -> Self {
        Self::spawn_with(&[], &[])
    }

    pub fn spawn_with(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("spawn codemode-guest");
        let stdin = child.stdin.take();
        let mut stdout = child.stdout.take().unwrap();
        let mut child_stderr = child.stderr.take().unwrap();
        let (tx, frames) = mpsc::channel();
        thread::spawn(move || loop {
            match read_frame::<GuestMessage, _>(&mut stdout, usize::MAX >> 1) {
                Ok(Some(msg)) => {
                    if tx.send(Ok(msg)).is_err() {
                        return;
                    }
                }
                Ok(None) => return,
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                    return;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = child_stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut guest = Self {
            child,
            host: HostWriter { stdin },
            frames,
            stderr,
            ready: Ready::default(),
            next_id: 1,
        };
        match guest.recv() {
            Some(guest_message::Kind::Ready(ready)) => guest.ready = ready,
            other => panic!(
                "expected Ready first, got {other:?}; stderr: {}",
                guest.stderr()
            ),
        }
        guest
    }

    /// Spawns, sends Init for `servers`, ready to run cells.
    pub fn started(servers: Vec<ServerInfo>) -> Self {
        let mut guest = Self::spawn();
        guest.init(Init {
            servers,
            ..default_init()
        });
        guest
    }

    pub fn init(&mut self, init: Init) {
        self.host.send(host_message::Kind::Init(init));
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The next frame (None when the guest closed stdout or WAIT passed).
    pub fn recv(&mut self) -> Option<guest_message::Kind> {
        self.recv_timeout(WAIT)
    }

    pub fn recv_timeout(&mut self, wait: Duration) -> Option<guest_message::Kind> {
        match self.frames.recv_timeout(wait) {
            Ok(Ok(msg)) => msg.kind,
            Ok(Err(e)) => panic!("guest sent a bad frame: {e}"),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    pub fn next_cell_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    pub fn execute(&mut self, code: &str, timeout_ms: u64) -> u64 {
        let id = self.next_cell_id();
        self.host.send(host_message::Kind::Execute(Execute {
            id,
            code: code.to_owned(),
            timeout_ms,
        }));
        id
    }

    pub fn cancel(&mut self, id: u64) {
        self.host.send(host_message::Kind::Cancel(Cancel { id }));
    }

    pub fn shutdown(&mut self) {
        self.host.send(host_message::Kind::Shutdown(Shutdown {}));
    }

    /// Runs a cell, answering RPCs from the fake server.
    pub fn run(&mut self, code: &str) -> CellOutcome {
        let id = self.execute(code, 0);
        self.collect(id, |host, req| host.respond(fake_server::answer(&req)))
    }

    /// Runs a cell with a timeout, answering RPCs from the fake server.
    pub fn run_timeout(&mut self, code: &str, timeout_ms: u64) -> CellOutcome {
        let id = self.execute(code, timeout_ms);
        self.collect(id, |host, req| host.respond(fake_server::answer(&req)))
    }

    /// Collects frames of cell `id` until its Finished; RPCs go to `on_rpc`.
    pub fn collect(
        &mut self,
        id: u64,
        mut on_rpc: impl FnMut(&mut HostWriter, RpcRequest),
    ) -> CellOutcome {
        let mut outputs = Vec::new();
        let mut rpcs = Vec::new();
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(kind) = self.recv_timeout(left) else {
                panic!("no Finished for cell {id}; stderr: {}", self.stderr());
            };
            match kind {
                guest_message::Kind::Output(out) => {
                    assert_eq!(out.execution_id, id, "output attributed to the wrong cell");
                    outputs.push(out);
                }
                guest_message::Kind::RpcRequest(req) => {
                    rpcs.push(req.clone());
                    on_rpc(&mut self.host, req);
                }
                guest_message::Kind::Finished(finished) => {
                    assert_eq!(finished.id, id);
                    let text = |stream: Stream| {
                        let bytes: Vec<u8> = outputs
                            .iter()
                            .filter(|o: &&codemode_proto::v1::Output| o.stream == stream as i32)
                            .flat_map(|o| o.data.clone())
                            .collect();
                        String::from_utf8_lossy(&bytes).into_owned()
                    };
                    return CellOutcome {
                        stdout: text(Stream::Stdout),
                        stderr: text(Stream::Stderr),
                        finished,
                        outputs,
                        rpcs,
                    };
                }
                other => panic!("unexpected frame during cell {id}: {other:?}"),
            }
        }
    }

    /// Waits for the process to exit.
    pub fn wait_exit(&mut self, wait: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn close_stdin(&mut self) {
        self.host.stdin = None;
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn default_init() -> Init {
    Init {
        protocol_major: PROTOCOL_MAJOR,
        protocol_minor: PROTOCOL_MINOR,
        servers: Vec::new(),
        discovered: vec![DiscoveredServer {
            name: "everything".into(),
            description: "Test server".into(),
        }],
        limits: Some(Limits {
            max_output_bytes: 1024 * 1024,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES as u32,
            max_rich_bytes: 4 * 1024 * 1024,
        }),
        ..Init::default()
    }
}
