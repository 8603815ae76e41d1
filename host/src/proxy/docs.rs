//! Tool documentation for `query_tool_docs` / `search_tool_docs`, in the
//! reference bridge's shape: `{server, serverAlias, tool, toolAlias,
//! description, inputSchema (full detail only)}`.

use codemode_proto::v1::ServerInfo;
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    Summary,
    Full,
}

pub fn format_doc(
    server: &ServerInfo,
    tool: &codemode_proto::v1::ToolInfo,
    detail: Detail,
) -> Value {
    let mut doc = json!({
        "server": server.name,
        "serverAlias": server.alias,
        "tool": tool.name,
        "toolAlias": tool.alias,
    });
    if !tool.description.is_empty() {
        doc["description"] = json!(tool.description);
    }
    if detail == Detail::Full {
        doc["inputSchema"] = serde_json::from_str(&tool.input_schema_json).unwrap_or(Value::Null);
    }
    doc
}

/// Every tool whose server name/alias, tool name/alias or description
/// contains all of the query's tokens (case-insensitive), at most `limit`
/// (clamped to 1..=20).
pub fn search_docs(servers: &[ServerInfo], query: &str, limit: u32, detail: Detail) -> Vec<Value> {
    let tokens: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    if tokens.is_empty() {
        return Vec::new();
    }
    let cap = limit.clamp(1, 20) as usize;
    let mut out = Vec::new();
    for server in servers {
        for tool in &server.tools {
            let hay = format!(
                "{} {} {} {} {}",
                server.name, server.alias, tool.name, tool.alias, tool.description
            )
            .to_lowercase();
            if tokens.iter().all(|t| hay.contains(t.as_str())) {
                out.push(format_doc(server, tool, detail));
                if out.len() >= cap {
                    return out;
                }
            }
        }
    }
    out
}
