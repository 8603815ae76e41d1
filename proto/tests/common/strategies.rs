//! proptest strategies for every message of the schema. Enum fields take
//! any i32, not only known values: an unknown value must survive a round
//! trip too, since a newer peer may send one.

use codemode_proto::v1::{
    guest_message, host_message, rpc_request, rpc_response, AddServers, CallTool, Cancel,
    DiscoveredServer, Display, Execute, Finished, GuestMessage, HostMessage, Init, Limits,
    ListSavedTools, ListServers, ListTools, LoadSavedTool, Log, Output, ProtocolError, PyError,
    QueryToolDocs, Ready, RichOutput, RpcError, RpcRequest, RpcResponse, SaveTool, SearchToolDocs,
    ServerInfo, Shutdown, ToolInfo,
};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "\\PC{0,24}", any::<String>()]
}

fn blob() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..64)
}

fn tool_info() -> impl Strategy<Value = ToolInfo> {
    (text(), text(), text(), text()).prop_map(|(name, alias, description, input_schema_json)| {
        ToolInfo {
            name,
            alias,
            description,
            input_schema_json,
        }
    })
}

fn server_info() -> impl Strategy<Value = ServerInfo> {
    (text(), text(), text(), vec(tool_info(), 0..3), text()).prop_map(
        |(name, alias, description, tools, cwd)| ServerInfo {
            name,
            alias,
            description,
            tools,
            cwd,
        },
    )
}

// `tools_dir` is deprecated but old peers still send it: it must round-trip.
#[allow(deprecated)]
fn init() -> impl Strategy<Value = Init> {
    let limits = (any::<u64>(), any::<u32>(), any::<u64>()).prop_map(|(o, f, r)| Limits {
        max_output_bytes: o,
        max_frame_bytes: f,
        max_rich_bytes: r,
    });
    let discovered =
        (text(), text()).prop_map(|(name, description)| DiscoveredServer { name, description });
    (
        any::<u32>(),
        any::<u32>(),
        vec(server_info(), 0..3),
        vec(discovered, 0..3),
        option::of(limits),
        text(),
    )
        .prop_map(
            |(protocol_major, protocol_minor, servers, discovered, limits, tools_dir)| Init {
                protocol_major,
                protocol_minor,
                servers,
                discovered,
                limits,
                tools_dir,
            },
        )
}

fn rpc_response() -> impl Strategy<Value = RpcResponse> {
    let error = (any::<i32>(), text()).prop_map(|(kind, message)| RpcError { kind, message });
    let result = option::of(prop_oneof![
        text().prop_map(rpc_response::Result::OkJson),
        error.prop_map(rpc_response::Result::Error),
    ]);
    (any::<u64>(), result).prop_map(|(id, result)| RpcResponse { id, result })
}

pub fn host_message() -> impl Strategy<Value = HostMessage> {
    use host_message::Kind;
    let execute = (any::<u64>(), text(), any::<u64>()).prop_map(|(id, code, timeout_ms)| Execute {
        id,
        code,
        timeout_ms,
    });
    prop_oneof![
        init().prop_map(Kind::Init),
        execute.prop_map(Kind::Execute),
        any::<u64>().prop_map(|id| Kind::Cancel(Cancel { id })),
        vec(server_info(), 0..3).prop_map(|servers| Kind::AddServers(AddServers { servers })),
        rpc_response().prop_map(Kind::RpcResponse),
        Just(Kind::Shutdown(Shutdown {})),
    ]
    .prop_map(|kind| HostMessage { kind: Some(kind) })
}

fn rpc_request() -> impl Strategy<Value = RpcRequest> {
    use rpc_request::Call;
    let call = prop_oneof![
        (text(), text(), text()).prop_map(|(server, tool, arguments_json)| {
            Call::CallTool(CallTool {
                server,
                tool,
                arguments_json,
            })
        }),
        text().prop_map(|server| Call::ListTools(ListTools { server })),
        Just(Call::ListServers(ListServers {})),
        (text(), text(), any::<i32>()).prop_map(|(server, tool, detail)| {
            Call::QueryToolDocs(QueryToolDocs {
                server,
                tool,
                detail,
            })
        }),
        (text(), any::<u32>(), any::<i32>()).prop_map(|(query, limit, detail)| {
            Call::SearchToolDocs(SearchToolDocs {
                query,
                limit,
                detail,
            })
        }),
        (text(), text()).prop_map(|(name, source)| Call::SaveTool(SaveTool { name, source })),
        Just(Call::ListSavedTools(ListSavedTools {})),
        text().prop_map(|name| Call::LoadSavedTool(LoadSavedTool { name })),
    ];
    (any::<u64>(), any::<u64>(), option::of(call)).prop_map(|(id, execution_id, call)| RpcRequest {
        id,
        execution_id,
        call,
    })
}

fn finished() -> impl Strategy<Value = Finished> {
    let error = (text(), text(), text()).prop_map(|(r#type, message, traceback)| PyError {
        r#type,
        message,
        traceback,
    });
    let rich = (text(), blob()).prop_map(|(mime_type, data)| RichOutput { mime_type, data });
    let display = (text(), text()).prop_map(|(text, result_json)| Display { text, result_json });
    (
        any::<u64>(),
        any::<i32>(),
        option::of(error),
        any::<u64>(),
        vec(rich, 0..3),
        any::<u64>(),
        (any::<u32>(), any::<u32>(), option::of(display)),
    )
        .prop_map(
            |(id, status, error, duration_us, rich, dropped_output_bytes, processes)| {
                let (running_processes, ended_processes, display) = processes;
                Finished {
                    id,
                    status,
                    error,
                    duration_us,
                    rich,
                    dropped_output_bytes,
                    running_processes,
                    ended_processes,
                    display,
                }
            },
        )
}

pub fn guest_message() -> impl Strategy<Value = GuestMessage> {
    use guest_message::Kind;
    let ready =
        (text(), text(), any::<u32>(), any::<u32>()).prop_map(|(g, p, major, minor)| Ready {
            guest_version: g,
            python_version: p,
            protocol_major: major,
            protocol_minor: minor,
        });
    let output =
        (any::<u64>(), any::<i32>(), blob()).prop_map(|(execution_id, stream, data)| Output {
            execution_id,
            stream,
            data,
        });
    prop_oneof![
        ready.prop_map(Kind::Ready),
        output.prop_map(Kind::Output),
        rpc_request().prop_map(Kind::RpcRequest),
        finished().prop_map(Kind::Finished),
        (any::<i32>(), text()).prop_map(|(level, message)| Kind::Log(Log { level, message })),
        text().prop_map(|message| Kind::ProtocolError(ProtocolError { message })),
    ]
    .prop_map(|kind| GuestMessage { kind: Some(kind) })
}

/// A byte stream built to reach the decoder's edges: whole valid frames,
/// length prefixes claiming anything from zero to 4 GiB, and raw noise.
pub fn hostile_stream(max: usize) -> impl Strategy<Value = Vec<u8>> {
    let claimed = prop_oneof![
        Just(0u32),
        1..=max as u32,
        Just(max as u32 + 1),
        any::<u32>(),
        Just(u32::MAX),
    ];
    let segment = prop_oneof![
        guest_message().prop_map(|m| {
            codemode_proto::frame::encode_frame(&m, u32::MAX as usize).expect("encodes")
        }),
        (claimed, vec(any::<u8>(), 0..32)).prop_map(|(len, tail)| {
            let mut bytes = len.to_be_bytes().to_vec();
            bytes.extend(tail);
            bytes
        }),
        vec(any::<u8>(), 0..16),
    ];
    vec(segment, 0..8).prop_map(|segments| segments.concat())
}
