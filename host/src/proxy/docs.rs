//! Tool documentation for `query_tool_docs`, in the reference bridge's
//! shape (`search_tool_docs` ranks the tool index: [`crate::index`]): `{server, serverAlias, tool, toolAlias,
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
