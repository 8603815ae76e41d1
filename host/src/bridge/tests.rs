//! The bridge and its sessions against in-process guests: no sandbox,
//! root, podman or Node. Each guest speaks the real protocol over a duplex
//! channel, but runs a tiny script language instead of Python, one action
//! per line:
//! - `print TEXT`: TEXT and a newline on stdout;
//! - `set NAME VALUE` / `get NAME`: the sandbox's own state (`get` prints
//!   `unset` for a name never set in this sandbox);
//! - `call SERVER TOOL`: a tool call to the host; prints the answer, or
//!   `error: MESSAGE`;
//! - `search QUERY`: `search_tool_docs(QUERY, limit=5)`; prints the answer;
//! - `hang`: never finishes, and ignores Cancel (only the host's deadline
//!   ends it);
//! - `raise TEXT`: ends the cell with an exception;
//! - `rich N`: ends the cell with N empty rich outputs (a forged Finished);
//! - `show TEXT|JSON`: ends the cell with TEXT as its shown value, and
//!   JSON as that value's JSON (may be empty, or not JSON at all);
//! - `forge`: sends what was printed so far, then a Finished for another
//!   execution (a protocol violation).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use codemode_proto::codec::FrameCodec;
use codemode_proto::v1::{
    guest_message, host_message, rpc_request, rpc_response, CallTool, Display, Finished,
    GuestMessage, HostMessage, Output, PyError, Ready, RichOutput, RpcRequest, SearchToolDocs,
    Status, Stream,
};
use codemode_proto::{PROTOCOL_MAJOR, PROTOCOL_MINOR};
use futures::{SinkExt, StreamExt};
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::sandbox::NoListener;

const FRAME_MAX: usize = 8 * 1024 * 1024;

type FromHost = FramedRead<ReadHalf<DuplexStream>, FrameCodec<HostMessage, GuestMessage>>;
type ToHost = FramedWrite<WriteHalf<DuplexStream>, FrameCodec<HostMessage, GuestMessage>>;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    settings: Settings,
}

/// A bridge of in-process scripted guests, with `flags` on top of a
/// private state dir; also how many guests it has started.
fn bridge(state: &tempfile::TempDir, flags: &[&str]) -> (Arc<Bridge>, Arc<AtomicUsize>) {
    bridge_with(state, flags, Discovery::default())
}

/// [`bridge`] with the configured servers of `discovery`.
fn bridge_with(
    state: &tempfile::TempDir,
    flags: &[&str],
    discovery: Discovery,
) -> (Arc<Bridge>, Arc<AtomicUsize>) {
    let mut argv = vec!["codemode", "--state-dir"];
    argv.push(state.path().to_str().expect("utf-8 temp dir"));
    argv.extend(flags);
    let settings = Args::parse_from(argv).settings;
    let started = Arc::new(AtomicUsize::new(0));
    let count = started.clone();
    let connect = Arc::new(move || {
        count.fetch_add(1, Ordering::SeqCst);
        let (host_end, guest_end) = tokio::io::duplex(64 * 1024);
        let (guest_read, guest_write) = tokio::io::split(guest_end);
        tokio::spawn(scripted_guest(
            FramedRead::new(guest_read, FrameCodec::new(FRAME_MAX)),
            FramedWrite::new(guest_write, FrameCodec::new(FRAME_MAX)),
        ));
        tokio::io::split(host_end)
    });
    let bridge = Bridge::in_process(settings, discovery, connect).expect("bridge");
    (bridge, started)
}

fn frame(kind: guest_message::Kind) -> GuestMessage {
    GuestMessage { kind: Some(kind) }
}

/// The guest: Ready, then one cell per Execute until the channel closes.
async fn scripted_guest(mut from_host: FromHost, mut to_host: ToHost) {
    let ready = frame(guest_message::Kind::Ready(Ready {
        guest_version: "scripted".into(),
        python_version: "none".into(),
        protocol_major: PROTOCOL_MAJOR,
        protocol_minor: PROTOCOL_MINOR,
    }));
    if to_host.send(ready).await.is_err() {
        return;
    }
    let mut vars: HashMap<String, String> = HashMap::new();
    let mut next_rpc = 1u64;
    while let Some(Ok(msg)) = from_host.next().await {
        let Some(host_message::Kind::Execute(exec)) = msg.kind else {
            continue;
        };
        let mut out = String::new();
        let mut end = Finished {
            id: exec.id,
            status: Status::Success as i32,
            ..Finished::default()
        };
        for line in exec.code.lines() {
            let (action, rest) = line.split_once(' ').unwrap_or((line, ""));
            match action {
                "print" => out.push_str(&format!("{rest}\n")),
                "set" => {
                    let (k, v) = rest.split_once(' ').unwrap_or((rest, ""));
                    vars.insert(k.into(), v.into());
                }
                "get" => out.push_str(&format!(
                    "{}\n",
                    vars.get(rest).map(String::as_str).unwrap_or("unset")
                )),
                "call" | "search" => {
                    let call = if action == "call" {
                        let (server, tool) = rest.split_once(' ').unwrap_or((rest, ""));
                        rpc_request::Call::CallTool(CallTool {
                            server: server.into(),
                            tool: tool.into(),
                            arguments_json: "{}".into(),
                        })
                    } else {
                        rpc_request::Call::SearchToolDocs(SearchToolDocs {
                            query: rest.into(),
                            limit: 5,
                            detail: 0,
                        })
                    };
                    let id = next_rpc;
                    next_rpc += 1;
                    let request = frame(guest_message::Kind::RpcRequest(RpcRequest {
                        id,
                        execution_id: exec.id,
                        call: Some(call),
                    }));
                    if to_host.send(request).await.is_err() {
                        return;
                    }
                    out.push_str(&answer(&mut from_host, id).await);
                }
                "hang" => {
                    // Reads (and ignores) everything, so only the host's
                    // deadline or the end of the channel stops it.
                    while from_host.next().await.is_some() {}
                    return;
                }
                "raise" => {
                    end.status = Status::Error as i32;
                    end.error = Some(PyError {
                        r#type: "RuntimeError".into(),
                        message: rest.into(),
                        traceback: String::new(),
                    });
                }
                "forge" => {
                    let output = frame(guest_message::Kind::Output(Output {
                        execution_id: exec.id,
                        stream: Stream::Stdout as i32,
                        data: std::mem::take(&mut out).into_bytes(),
                    }));
                    let forged = frame(guest_message::Kind::Finished(Finished {
                        id: exec.id + 100,
                        ..Finished::default()
                    }));
                    let _ = to_host.send(output).await;
                    let _ = to_host.send(forged).await;
                }
                "rich" => {
                    let n: usize = rest.parse().unwrap_or(0);
                    end.rich = vec![RichOutput::default(); n];
                }
                "show" => {
                    let (text, json) = rest.split_once('|').unwrap_or((rest, ""));
                    end.display = Some(Display {
                        text: text.into(),
                        result_json: json.into(),
                    });
                }
                _ => out.push_str(&format!("unknown action {action}\n")),
            }
        }
        let output = frame(guest_message::Kind::Output(Output {
            execution_id: exec.id,
            stream: Stream::Stdout as i32,
            data: out.into_bytes(),
        }));
        if to_host.send(output).await.is_err()
            || to_host
                .send(frame(guest_message::Kind::Finished(end)))
                .await
                .is_err()
        {
            return;
        }
    }
}

/// Waits for the answer to RPC `id`: its JSON, or `error: MESSAGE`.
async fn answer(from_host: &mut FromHost, id: u64) -> String {
    while let Some(Ok(msg)) = from_host.next().await {
        if let Some(host_message::Kind::RpcResponse(r)) = msg.kind {
            if r.id != id {
                continue;
            }
            return match r.result {
                Some(rpc_response::Result::OkJson(json)) => format!("{json}\n"),
                Some(rpc_response::Result::Error(e)) => format!("error: {}\n", e.message),
                None => "error: empty answer\n".into(),
            };
        }
    }
    "error: channel closed\n".into()
}

async fn run(bridge: &Arc<Bridge>, session: &str, code: &str, timeout: u64) -> RunOutcome {
    let req = RunRequest {
        code: code.into(),
        servers: Vec::new(),
        timeout: Some(timeout),
        session: session.into(),
    };
    bridge
        .run(req, &mut NoListener, CancellationToken::new())
        .await
}

#[tokio::test]
async fn sessions_keep_their_state_and_do_not_share_it() {
    let state = tempfile::tempdir().unwrap();
    let (bridge, _) = bridge(&state, &["--warm-pool", "0"]);
    let out = run(&bridge, "a", "set x 1\nprint done", 5).await;
    assert_eq!(
        (out.status, out.stdout.as_str()),
        (RunStatus::Success, "done\n")
    );
    let out = run(&bridge, "a", "get x", 5).await;
    assert_eq!(out.stdout, "1\n", "{out:?}");
    let out = run(&bridge, "b", "get x", 5).await;
    assert_eq!(out.stdout, "unset\n", "{out:?}");
    let out = run(&bridge, "a", "raise boom", 5).await;
    assert_eq!(out.status, RunStatus::Error);
    assert_eq!(out.error.as_deref(), Some("RuntimeError: boom"));
    let out = run(&bridge, "a", "get x", 5).await;
    assert_eq!(out.stdout, "1\n", "an exception keeps the state: {out:?}");
    bridge.shutdown().await;
}

#[tokio::test]
async fn a_cell_that_ignores_its_deadline_loses_its_sandbox_and_says_so() {
    let state = tempfile::tempdir().unwrap();
    let (bridge, started) = bridge(&state, &["--warm-pool", "0"]);
    run(&bridge, "s", "set x 1", 5).await;
    let out = run(&bridge, "s", "hang", 1).await;
    assert_eq!(out.status, RunStatus::Timeout, "{out:?}");
    assert_eq!(out.error.as_deref(), Some("execution exceeded 1s"));
    assert!(
        out.notes.iter().any(|n| n
            .contains("the cell ignored the interrupt, so its sandbox was killed")
            && n.contains("variables and imports from earlier calls are gone")),
        "{:?}",
        out.notes
    );
    let out = run(&bridge, "s", "get x", 5).await;
    assert_eq!(out.status, RunStatus::Success, "{out:?}");
    assert_eq!(out.stdout, "unset\n", "a fresh sandbox: {out:?}");
    assert_eq!(started.load(Ordering::SeqCst), 2);
    bridge.shutdown().await;
}

#[tokio::test]
async fn tool_calls_are_checked_and_counted_by_the_host() {
    let state = tempfile::tempdir().unwrap();
    let (bridge, _) = bridge(&state, &["--warm-pool", "0", "--call-budget", "2"]);
    let out = run(
        &bridge,
        "s",
        "call time now\ncall time now\ncall time now",
        5,
    )
    .await;
    assert_eq!(out.status, RunStatus::Success, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{out:?}");
    for line in &lines[..2] {
        assert!(
            line.starts_with("error: server \"time\" is not loaded in this session (loaded: none)"),
            "{line}"
        );
    }
    assert!(
        lines[2].contains("tool-call budget of 2 calls per cell used up"),
        "{}",
        lines[2]
    );
    // The budget is per cell.
    let out = run(&bridge, "s", "call time now", 5).await;
    assert!(out.stdout.contains("is not loaded"), "{out:?}");
    bridge.shutdown().await;
}

#[tokio::test]
async fn forged_rich_outputs_are_capped_and_noted() {
    let state = tempfile::tempdir().unwrap();
    let (bridge, _) = bridge(&state, &["--warm-pool", "0"]);
    let out = run(&bridge, "s", "rich 100000", 5).await;
    assert_eq!(out.status, RunStatus::Success, "{out:?}");
    assert!(out.rich.is_empty(), "empty images are dropped");
    assert!(
        out.notes
            .iter()
            .any(|n| n.contains("100000 images were dropped")),
        "{:?}",
        out.notes
    );
    bridge.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_a_hanging_cell_and_returns() {
    let state = tempfile::tempdir().unwrap();
    let (bridge, _) = bridge(&state, &["--warm-pool", "1"]);
    let running = {
        let bridge = bridge.clone();
        tokio::spawn(async move { run(&bridge, "s", "hang", 100).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Bounded: the cell's cancel grace, then its sandbox is killed.
    tokio::time::timeout(Duration::from_secs(30), bridge.shutdown())
        .await
        .expect("shutdown returns");
    let out = running.await.expect("the call returns");
    assert_eq!(out.status, RunStatus::Cancelled, "{out:?}");
}

#[tokio::test]
async fn a_guest_that_breaks_the_protocol_is_replaced_and_its_output_kept() {
    let state = tempfile::tempdir().unwrap();
    let (bridge, started) = bridge(&state, &["--warm-pool", "0"]);
    run(&bridge, "s", "set x 1", 5).await;
    let out = run(&bridge, "s", "print before\nforge", 5).await;
    assert_eq!(out.status, RunStatus::Error, "{out:?}");
    assert_eq!(
        out.stdout, "before\n",
        "what the cell printed is kept: {out:?}"
    );
    let error = out.error.as_deref().unwrap_or("");
    assert!(
        error.starts_with("sandbox failed: ")
            && error.contains("received Finished for execution 102 while execution 2 runs"),
        "{error}"
    );
    assert!(
        out.notes
            .iter()
            .any(|n| n.contains("the sandbox was discarded")),
        "{:?}",
        out.notes
    );
    let out = run(&bridge, "s", "get x", 5).await;
    assert_eq!(out.stdout, "unset\n", "a fresh sandbox: {out:?}");
    assert_eq!(started.load(Ordering::SeqCst), 2);
    bridge.shutdown().await;
}

#[tokio::test]
async fn a_shown_value_reaches_the_outcome_only_when_valid_and_successful() {
    let state = tempfile::tempdir().unwrap();
    let (bridge, _) = bridge(&state, &["--warm-pool", "0"]);
    let out = run(&bridge, "s", r#"show {'a': 1}|{"a":1}"#, 5).await;
    assert_eq!(
        out.shown,
        Some(Shown {
            text: "{'a': 1}".into(),
            result: Some(serde_json::json!({"a": 1})),
        })
    );
    let out = run(&bridge, "s", "show <object>|{not json", 5).await;
    assert_eq!(
        out.shown,
        Some(Shown {
            text: "<object>".into(),
            result: None,
        }),
        "a forged result that is not JSON is dropped"
    );
    let out = run(&bridge, "s", "show |", 5).await;
    assert_eq!(out.shown, None, "an empty display shows nothing");
    let out = run(&bridge, "s", "show 1|1\nraise boom", 5).await;
    assert_eq!(out.status, RunStatus::Error);
    assert_eq!(out.shown, None, "a failed cell shows no value");
    let long = "x".repeat(100 * 1024);
    let out = run(&bridge, "s", &format!("show {long}|"), 5).await;
    let text = out.shown.map(|s| s.text).unwrap_or_default();
    assert!(
        text.len() < 70 * 1024 && text.ends_with("[... cut by codemode ...]"),
        "{}",
        text.len()
    );
    bridge.shutdown().await;
}

/// A server that is configured but never started, as a config names it.
fn unstarted(name: &str, command: &str) -> crate::config::ServerConfig {
    crate::config::ServerConfig {
        name: name.into(),
        command: command.into(),
        args: Vec::new(),
        env: Default::default(),
        cwd: None,
        description: format!("{name} server"),
        source: Default::default(),
        source_name: String::new(),
    }
}

fn indexed_tool(name: &str, description: &str) -> rmcp::model::Tool {
    let schema =
        serde_json::json!({"type": "object", "properties": {"timezone": {"type": "string"}}});
    let serde_json::Value::Object(schema) = schema else {
        unreachable!()
    };
    rmcp::model::Tool::new(name.to_string(), description.to_string(), Arc::new(schema))
}

#[tokio::test]
async fn search_ranks_indexed_tools_of_servers_never_started() {
    let state = tempfile::tempdir().unwrap();
    let time = unstarted("time", "/nonexistent/time-server");
    let moved = unstarted("moved", "/nonexistent/moved-server");
    {
        // What an earlier codemode recorded when these servers ran.
        let index = crate::index::ToolIndex::open(state.path());
        let tools = [
            indexed_tool("get_current_time", "Current time in a timezone."),
            indexed_tool("convert_time", "Convert a time between timezones."),
        ];
        index.record("time", &crate::index::fingerprint(&time), &tools);
        let old = unstarted("moved", "/old/command");
        let stale = [indexed_tool("convert_time_too", "Convert time.")];
        index.record("moved", &crate::index::fingerprint(&old), &stale);
    }
    let discovery = Discovery {
        servers: [("time".to_string(), time), ("moved".to_string(), moved)].into(),
        ..Discovery::default()
    };
    let flags = ["--warm-pool", "0", "--deny-tools", "time.get_current_time"];
    let (bridge, _) = bridge_with(&state, &flags, discovery);
    let out = run(&bridge, "s", "search convert time", 5).await;
    assert_eq!(out.status, RunStatus::Success, "{out:?}");
    let hits: serde_json::Value = serde_json::from_str(out.stdout.trim()).expect("json hits");
    let hits = hits.as_array().expect("a list");
    assert_eq!(
        hits.len(),
        1,
        "denied and stale tools are left out: {hits:?}"
    );
    assert_eq!(hits[0]["tool"], "convert_time");
    assert_eq!(hits[0]["loaded"], false);
    assert!(
        hits[0]["load"]
            .as_str()
            .is_some_and(|l| l.contains("servers=[\"time\"]")),
        "{hits:?}"
    );
    bridge.shutdown().await;
}
