//! `search_tool_docs`: the indexed tools of every configured server,
//! ranked with [`bm25`](super::bm25), as hits in the reference bridge's
//! doc shape (`server`, `serverAlias`, `tool`, `toolAlias`, `description`,
//! `inputSchema` in full detail) plus `loaded` (whether the session has the
//! server), `load` (how to load it when it has not) and `score`.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::bm25::{self, Document};
use super::IndexedTool;
use crate::proxy::Detail;

/// Hits per search, as the reference bridge clamped them.
const MIN_HITS: u32 = 1;
const MAX_HITS: u32 = 20;

/// One server's searchable tools, with the aliases the guest gives them.
pub struct Catalog<'a> {
    pub name: &'a str,
    pub alias: String,
    pub description: &'a str,
    pub tools: Vec<(&'a IndexedTool, String)>,
}

/// The `limit` tools (clamped to 1..=20) that best match `query`, best
/// first; `loaded` names the servers of the asking session.
pub fn hits(
    catalog: &[Catalog<'_>],
    query: &str,
    limit: u32,
    detail: Detail,
    loaded: &BTreeSet<String>,
) -> Vec<Value> {
    let entries: Vec<(&Catalog<'_>, &IndexedTool, &str)> = catalog
        .iter()
        .flat_map(|server| {
            server
                .tools
                .iter()
                .map(move |(tool, alias)| (server, *tool, alias.as_str()))
        })
        .collect();
    let docs: Vec<Document> = entries
        .iter()
        .map(|(server, tool, _)| {
            let server_text = format!("{} {}", server.name, server.description);
            Document::new([
                &tool.name,
                &tool.description,
                &params_text(&tool.input_schema),
                &server_text,
            ])
        })
        .collect();
    let limit = limit.clamp(MIN_HITS, MAX_HITS) as usize;
    bm25::rank(&docs, query, limit)
        .into_iter()
        .map(|(i, score)| {
            let (server, tool, tool_alias) = entries[i];
            hit(server, tool, tool_alias, score, detail, loaded)
        })
        .collect()
}

fn hit(
    server: &Catalog<'_>,
    tool: &IndexedTool,
    tool_alias: &str,
    score: f64,
    detail: Detail,
    loaded: &BTreeSet<String>,
) -> Value {
    let mut doc = json!({
        "server": server.name,
        "serverAlias": server.alias,
        "tool": tool.name,
        "toolAlias": tool_alias,
    });
    if !tool.description.is_empty() {
        doc["description"] = json!(tool.description);
    }
    if detail == Detail::Full {
        doc["inputSchema"] = tool.input_schema.clone();
    }
    let is_loaded = loaded.contains(server.name);
    doc["loaded"] = json!(is_loaded);
    if !is_loaded {
        // Servers load only through run_python's `servers` argument.
        let name = Value::String(server.name.to_string());
        doc["load"] = json!(format!(
            "not loaded in this session: call run_python with servers=[{name}], then mcp_{}.{tool_alias}(...)",
            server.alias
        ));
    }
    doc["score"] = json!((score * 1000.0).round() / 1000.0);
    doc
}

/// The names and descriptions of the schema's top-level properties.
fn params_text(schema: &Value) -> String {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let mut text = String::new();
    for (name, property) in properties {
        text.push_str(name);
        text.push(' ');
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            text.push_str(description);
            text.push(' ');
        }
    }
    text
}
