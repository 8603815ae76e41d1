//! One representative message per oneof variant of `HostMessage`,
//! `GuestMessage` and `RpcRequest.call`: the golden vectors are their frames,
//! and the smoke test mutates them. Every field is set to a non-default value
//! so that a change to any field's encoding shows in the golden files.

use codemode_proto::frame::{encode_frame, DEFAULT_MAX_FRAME_BYTES};
use codemode_proto::v1::{
    guest_message, host_message, rpc_request, rpc_response, AddServers, CallTool, Cancel, Detail,
    DiscoveredServer, Display, ErrorKind, Execute, Finished, GuestMessage, HostMessage, Init,
    Limits, ListSavedTools, ListServers, ListTools, LoadSavedTool, Log, LogLevel, Output,
    ProtocolError, PyError, QueryToolDocs, Ready, RichOutput, RpcError, RpcRequest, RpcResponse,
    SaveTool, SearchToolDocs, ServerInfo, Shutdown, Status, Stream, ToolInfo,
};

/// A fixture: which direction it travels and the message itself.
#[derive(Debug, Clone)]
pub enum Fixture {
    Host(HostMessage),
    Guest(GuestMessage),
}

impl Fixture {
    /// The golden file's stem: direction, oneof field, and for variants with
    /// a nested oneof, that oneof's field (`guest.rpc_request.call_tool`).
    pub fn name(&self) -> String {
        match self {
            Fixture::Host(msg) => match &msg.kind {
                Some(kind) => format!("host.{}", host_variant(kind)),
                None => "host.unset".to_owned(),
            },
            Fixture::Guest(msg) => match &msg.kind {
                Some(kind) => format!("guest.{}", guest_variant(kind)),
                None => "guest.unset".to_owned(),
            },
        }
    }

    pub fn frame(&self) -> Vec<u8> {
        match self {
            Fixture::Host(msg) => encode_frame(msg, DEFAULT_MAX_FRAME_BYTES),
            Fixture::Guest(msg) => encode_frame(msg, DEFAULT_MAX_FRAME_BYTES),
        }
        .expect("fixtures fit in a frame")
    }
}

/// The proto field name of a `HostMessage.kind` variant. Exhaustive on
/// purpose: a new variant does not compile until it has a name here.
fn host_variant(kind: &host_message::Kind) -> String {
    use host_message::Kind;
    match kind {
        Kind::Init(_) => "init".into(),
        Kind::Execute(_) => "execute".into(),
        Kind::Cancel(_) => "cancel".into(),
        Kind::AddServers(_) => "add_servers".into(),
        Kind::RpcResponse(resp) => match &resp.result {
            Some(rpc_response::Result::OkJson(_)) => "rpc_response.ok_json".into(),
            Some(rpc_response::Result::Error(_)) => "rpc_response.error".into(),
            None => "rpc_response.unset".into(),
        },
        Kind::Shutdown(_) => "shutdown".into(),
    }
}

/// The proto field name of a `GuestMessage.kind` variant (see `host_variant`).
fn guest_variant(kind: &guest_message::Kind) -> String {
    use guest_message::Kind;
    match kind {
        Kind::Ready(_) => "ready".into(),
        Kind::Output(_) => "output".into(),
        Kind::RpcRequest(req) => {
            let call = match &req.call {
                Some(rpc_request::Call::CallTool(_)) => "call_tool",
                Some(rpc_request::Call::ListTools(_)) => "list_tools",
                Some(rpc_request::Call::ListServers(_)) => "list_servers",
                Some(rpc_request::Call::QueryToolDocs(_)) => "query_tool_docs",
                Some(rpc_request::Call::SearchToolDocs(_)) => "search_tool_docs",
                Some(rpc_request::Call::SaveTool(_)) => "save_tool",
                Some(rpc_request::Call::ListSavedTools(_)) => "list_saved_tools",
                Some(rpc_request::Call::LoadSavedTool(_)) => "load_saved_tool",
                None => "unset",
            };
            format!("rpc_request.{call}")
        }
        Kind::Finished(_) => "finished".into(),
        Kind::Log(_) => "log".into(),
        Kind::ProtocolError(_) => "protocol_error".into(),
    }
}

fn host(kind: host_message::Kind) -> Fixture {
    Fixture::Host(HostMessage { kind: Some(kind) })
}

fn guest(kind: guest_message::Kind) -> Fixture {
    Fixture::Guest(GuestMessage { kind: Some(kind) })
}

fn request(id: u64, call: rpc_request::Call) -> Fixture {
    guest(guest_message::Kind::RpcRequest(RpcRequest {
        id,
        execution_id: 3,
        call: Some(call),
    }))
}

fn server_info() -> ServerInfo {
    ServerInfo {
        name: "git-hub".into(),
        alias: "git_hub".into(),
        description: "GitHub issues and pull requests".into(),
        tools: vec![ToolInfo {
            name: "list-issues".into(),
            alias: "list_issues".into(),
            description: "List a repository's issues.".into(),
            input_schema_json: r#"{"type":"object","properties":{"repo":{"type":"string"}}}"#
                .into(),
        }],
        cwd: "/home/user/project".into(),
    }
}

/// Every fixture, in golden-file order.
// `Init.tools_dir` is deprecated but still on the wire for old peers: its
// encoding stays pinned by the golden file.
#[allow(deprecated)]
pub fn all() -> Vec<Fixture> {
    use guest_message::Kind as G;
    use host_message::Kind as H;
    vec![
        host(H::Init(Init {
            protocol_major: 1,
            protocol_minor: 2,
            servers: vec![server_info()],
            discovered: vec![DiscoveredServer {
                name: "weather".into(),
                description: "Forecasts by city".into(),
            }],
            limits: Some(Limits {
                max_output_bytes: 65_536,
                max_frame_bytes: 8 * 1024 * 1024,
                max_rich_bytes: 4 * 1024 * 1024,
            }),
            tools_dir: "/tools".into(),
        })),
        host(H::Execute(Execute {
            id: 7,
            code: "print(sum(range(10)))\nx = 'héllo ✓'\n".into(),
            timeout_ms: 30_000,
        })),
        host(H::Cancel(Cancel { id: 300 })),
        host(H::AddServers(AddServers {
            servers: vec![server_info()],
        })),
        host(H::RpcResponse(RpcResponse {
            id: 42,
            result: Some(rpc_response::Result::OkJson(
                r#"{"content":[{"type":"text","text":"ok"}]}"#.into(),
            )),
        })),
        host(H::RpcResponse(RpcResponse {
            id: 43,
            result: Some(rpc_response::Result::Error(RpcError {
                kind: ErrorKind::BudgetExceeded.into(),
                message: "tool-call budget of 50 calls used up".into(),
            })),
        })),
        host(H::Shutdown(Shutdown {})),
        guest(G::Ready(Ready {
            guest_version: "0.1.0".into(),
            python_version: "3.11.2".into(),
            protocol_major: 1,
            protocol_minor: 3,
        })),
        guest(G::Output(Output {
            execution_id: 7,
            stream: Stream::Stderr.into(),
            // Output chunks need not be UTF-8 or whole lines.
            data: vec![b'o', b'k', 0xff, 0x00, b'\n', 0xe2, 0x9c],
        })),
        request(
            11,
            rpc_request::Call::CallTool(CallTool {
                server: "git-hub".into(),
                tool: "list-issues".into(),
                arguments_json: r#"{"repo":"octo/cat","state":"open"}"#.into(),
            }),
        ),
        request(
            12,
            rpc_request::Call::ListTools(ListTools {
                server: "weather".into(),
            }),
        ),
        request(13, rpc_request::Call::ListServers(ListServers {})),
        request(
            14,
            rpc_request::Call::QueryToolDocs(QueryToolDocs {
                server: "git-hub".into(),
                tool: "list-issues".into(),
                detail: Detail::Full.into(),
            }),
        ),
        request(
            15,
            rpc_request::Call::SearchToolDocs(SearchToolDocs {
                query: "open issues".into(),
                limit: 5,
                detail: Detail::Full.into(),
            }),
        ),
        request(
            16,
            rpc_request::Call::SaveTool(SaveTool {
                name: "double".into(),
                source: "def double(x):\n    \"\"\"Twice x.\"\"\"\n    return 2 * x\n".into(),
            }),
        ),
        request(17, rpc_request::Call::ListSavedTools(ListSavedTools {})),
        request(
            18,
            rpc_request::Call::LoadSavedTool(LoadSavedTool {
                name: "double".into(),
            }),
        ),
        guest(G::Finished(Finished {
            id: 7,
            status: Status::Error.into(),
            error: Some(PyError {
                r#type: "ZeroDivisionError".into(),
                message: "division by zero".into(),
                traceback: "  File \"<cell>\", line 1, in <module>\n".into(),
            }),
            duration_us: 1_234_567,
            rich: vec![RichOutput {
                mime_type: "image/png".into(),
                data: vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a],
            }],
            dropped_output_bytes: 1 << 20,
            running_processes: 2,
            ended_processes: 3,
            display: Some(Display {
                text: "{'answer': 42}".into(),
                result_json: "{\"answer\":42}".into(),
            }),
        })),
        guest(G::Log(Log {
            level: LogLevel::Warn.into(),
            message: "server weather is slow to answer".into(),
        })),
        guest(G::ProtocolError(ProtocolError {
            message: "expected Init after Ready, got Execute".into(),
        })),
    ]
}
