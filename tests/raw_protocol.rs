//! MCP at the JSON-RPC level against the real binary: progress
//! notifications stream a running cell's output, `notifications/cancelled`
//! interrupts it and the session survives, and garbage on stdin is refused
//! without killing the server.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

use crate::common::Fixture;

struct Raw {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    _child: tokio::process::Child,
}

impl Raw {
    async fn start(fx: &Fixture) -> Self {
        let mut cmd = fx.command("bubblewrap", &["serve"]);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("spawn codemode");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut raw = Self {
            stdin,
            lines,
            _child: child,
        };
        raw.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}))
            .await;
        raw.until_id(0).await;
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        raw
    }

    async fn send(&mut self, v: Value) {
        self.send_text(&v.to_string()).await;
    }

    async fn send_text(&mut self, text: &str) {
        self.stdin
            .write_all(format!("{text}\n").as_bytes())
            .await
            .expect("write");
        self.stdin.flush().await.expect("flush");
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(60), self.lines.next_line())
            .await
            .expect("a message in time")
            .expect("read")
            .expect("codemode closed stdout");
        serde_json::from_str(&line).expect("JSON line")
    }

    /// Reads until the response with `id`, returning it and everything before.
    async fn until_id(&mut self, id: i64) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let v = self.next().await;
            if v["id"] == json!(id) {
                return (v, before);
            }
            before.push(v);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_streams_output_and_cancel_interrupts_the_cell() {
    let fx = Fixture::new();
    let mut raw = Raw::start(&fx).await;
    raw.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "run_python", "arguments": {"code": "marker = 'kept'"}}}),
    )
    .await;
    raw.until_id(1).await;

    raw.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "_meta": {"progressToken": "p1"},
        "name": "run_python",
        "arguments": {"code": "import time\nprint('tick', flush=True)\ntime.sleep(60)\nmarker = 'overwritten'", "timeout": 100}}}))
        .await;
    // The output arrives as a progress notification while the cell still runs.
    loop {
        let v = raw.next().await;
        if v["method"] == "notifications/progress" {
            assert_eq!(v["params"]["progressToken"], "p1");
            assert!(
                v["params"]["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("tick"),
                "{v}"
            );
            break;
        }
        assert_ne!(v["id"], json!(2), "the call must still be running: {v}");
    }
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "test"}}))
        .await;
    raw.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "run_python", "arguments": {"code": "print(marker)"}}}),
    )
    .await;
    let (answer, _) = tokio::time::timeout(Duration::from_secs(20), raw.until_id(3))
        .await
        .expect("the cancelled cell stopped well before its 60 s sleep");
    let text = answer["result"]["structuredContent"]["stdout"]
        .as_str()
        .unwrap_or("");
    assert_eq!(
        text, "kept\n",
        "cell was interrupted before overwriting, state survived: {answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_input_gets_an_error_and_the_server_lives() {
    let fx = Fixture::new();
    let mut raw = Raw::start(&fx).await;
    raw.send_text("{this is not json").await;
    raw.send_text("").await;
    raw.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "run_python", "arguments": {"code": "print(7)"}}}))
        .await;
    let (answer, _) = raw.until_id(7).await;
    assert_eq!(
        answer["result"]["structuredContent"]["stdout"], "7\n",
        "{answer}"
    );
}

/// How codemode is told to stop while a cell runs.
#[derive(Clone, Copy)]
enum Stop {
    /// The client goes away: stdin reaches EOF.
    Eof,
    /// The user or a supervisor sends SIGTERM, the client still connected.
    Sigterm,
}

/// A cell spins with a long timeout when codemode is told to stop: it
/// cancels the cell and exits promptly, instead of waiting out the cell's
/// 120 s, and leaves no sandbox behind.
async fn stopping_during_a_running_cell_exits_promptly(stop: Stop) {
    let fx = Fixture::new();
    let mut raw = Raw::start(&fx).await;
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "run_python", "arguments": {"code": "print('spinning', flush=True)\nwhile True: pass", "timeout": 120}}}))
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let Raw {
        stdin,
        lines,
        _child: mut child,
    } = raw;
    let _kept = match stop {
        Stop::Eof => {
            drop(stdin);
            drop(lines);
            None
        }
        Stop::Sigterm => {
            let pid = child.id().expect("pid").to_string();
            let sent = std::process::Command::new("kill")
                .args(["-TERM", &pid])
                .status();
            assert!(sent.is_ok_and(|s| s.success()), "SIGTERM codemode");
            Some((stdin, lines))
        }
    };
    let started = std::time::Instant::now();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("codemode exits without waiting for the cell's 120 s timeout")
        .expect("wait");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "exit took {:?} ({status:?})",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_eof_during_a_running_cell_exits_promptly() {
    stopping_during_a_running_cell_exits_promptly(Stop::Eof).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_running_cell_exits_promptly() {
    stopping_during_a_running_cell_exits_promptly(Stop::Sigterm).await;
}
