//! A canned MCP server ("everything") as the host would present it: its
//! ServerInfo for Init and the answers to every kind of RPC.

use codemode_proto::v1::{
    rpc_request::Call, rpc_response, ErrorKind, RpcError, RpcRequest, RpcResponse, ServerInfo,
    ToolInfo,
};
use serde_json::{json, Value};

pub const SERVER: &str = "everything";

fn tool(name: &str, alias: &str, description: &str, schema: Value) -> ToolInfo {
    ToolInfo {
        name: name.into(),
        alias: alias.into(),
        description: description.into(),
        input_schema_json: schema.to_string(),
    }
}

pub fn server() -> ServerInfo {
    ServerInfo {
        name: SERVER.into(),
        alias: "everything".into(),
        description: "Exercises every MCP feature".into(),
        cwd: "/srv/everything".into(),
        tools: vec![
            tool(
                "echo",
                "echo",
                "Echoes back the input.",
                json!({"type": "object", "properties": {
                    "message": {"type": "string", "description": "Message to echo"}},
                    "required": ["message"]}),
            ),
            tool(
                "add",
                "add",
                "Adds two numbers.",
                json!({"type": "object", "properties": {
                    "a": {"type": "number", "description": "First number"},
                    "b": {"type": "number", "description": "Second number"},
                    "round": {"type": "boolean", "default": false}},
                    "required": ["a", "b"]}),
            ),
            tool(
                "get-weather",
                "get_weather",
                "Weather for a city.",
                json!({"type": "object", "properties": {
                    "city-name": {"type": "string"},
                    "units": {"type": "string", "enum": ["metric", "imperial"], "default": "metric"},
                    "class": {"type": "integer"}},
                    "required": ["city-name"]}),
            ),
            tool(
                "fail",
                "fail",
                "Always reports an error.",
                json!({"type": "object", "properties": {}}),
            ),
            tool(
                "image",
                "image",
                "Returns a tiny image.",
                json!({"type": "object"}),
            ),
            tool(
                "multi",
                "multi",
                "Returns two text items.",
                json!({"type": "object", "properties": {}}),
            ),
            tool(
                "denied",
                "denied",
                "The host refuses it.",
                json!({"type": "object", "properties": {}}),
            ),
        ],
    }
}

fn ok(id: u64, value: Value) -> RpcResponse {
    RpcResponse {
        id,
        result: Some(rpc_response::Result::OkJson(value.to_string())),
    }
}

fn text(value: &str) -> Value {
    json!({"content": [{"type": "text", "text": value}]})
}

/// The answer the fake host gives to `req`.
pub fn answer(req: &RpcRequest) -> RpcResponse {
    let id = req.id;
    match req.call.as_ref().expect("request without call") {
        Call::CallTool(call) => {
            let args: Value = serde_json::from_str(&call.arguments_json).unwrap();
            match call.tool.as_str() {
                "echo" => ok(
                    id,
                    text(&format!(
                        "Echo: {}",
                        args["message"].as_str().unwrap_or("?")
                    )),
                ),
                "add" => {
                    let sum = args["a"].as_f64().unwrap() + args["b"].as_f64().unwrap();
                    ok(
                        id,
                        json!({"content": [{"type": "text", "text": sum.to_string()}],
                                  "structuredContent": {"sum": sum, "args": args}}),
                    )
                }
                "get-weather" => ok(id, text(&json!({"args": args}).to_string())),
                "fail" => ok(
                    id,
                    json!({"content": [{"type": "text", "text": "boom: it broke"}], "isError": true}),
                ),
                "image" => ok(
                    id,
                    json!({"content": [{"type": "image", "data": "iVBORw0K", "mimeType": "image/png"}]}),
                ),
                "multi" => ok(
                    id,
                    json!({"content": [{"type": "text", "text": "one"}, {"type": "text", "text": "[2]"}]}),
                ),
                "denied" => RpcResponse {
                    id,
                    result: Some(rpc_response::Result::Error(RpcError {
                        kind: ErrorKind::NotAllowed as i32,
                        message: "tool denied by policy".into(),
                    })),
                },
                other => ok(id, text(&format!("called {other} with {args}"))),
            }
        }
        Call::ListTools(list) => ok(
            id,
            json!([{"name": "echo", "alias": "echo", "description": format!("from {}", list.server),
                    "inputSchema": {"type": "object"}}]),
        ),
        Call::ListServers(_) => ok(id, json!([SERVER, "other"])),
        Call::QueryToolDocs(query) => {
            let doc = json!({"server": query.server, "serverAlias": query.server, "tool": query.tool,
                             "toolAlias": query.tool, "description": "doc", "detail": query.detail});
            ok(id, json!([doc]))
        }
        Call::SearchToolDocs(search) => ok(
            id,
            json!([{"server": SERVER, "tool": "echo", "query": search.query, "limit": search.limit,
                    "detail": search.detail}]),
        ),
        // This host keeps nothing; saved_tools.rs has one that does.
        Call::SaveTool(save) => ok(
            id,
            json!({"name": save.name, "bytes": save.source.len(), "replaced": false}),
        ),
        Call::ListSavedTools(_) => ok(id, json!([])),
        Call::LoadSavedTool(load) => RpcResponse {
            id,
            result: Some(rpc_response::Result::Error(RpcError {
                kind: ErrorKind::NotFound as i32,
                message: format!("no saved tool named {:?}", load.name),
            })),
        },
    }
}
