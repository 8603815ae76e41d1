//! What a client learns about codemode before any call: its identity
//! (`serverInfo`), the instructions (with the configured servers' names, so
//! a model's first cell can load them), and the `run_python` tool with its
//! input and output schemas. The output schema is the contract of
//! [`crate::render::structured`]; a test checks every key it writes.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{Implementation, Tool, ToolAnnotations};
use serde_json::{json, Map, Value};

use super::RunPythonArgs;
use crate::bridge::RunStatus;
use crate::config::ServerConfig;

pub const TOOL_NAME: &str = "run_python";

const INSTRUCTIONS: &str = "codemode runs Python in a persistent, network-less sandbox with one tool, run_python. \
Configured MCP servers become Python modules: pass servers=[...] to load them, then `await mcp_<alias>.<tool>(...)`. \
Discover with runtime.discovered_servers(detailed=True) and runtime.search_tool_docs('query'); \
print(runtime.capability_summary()) or read resource://codemode/manual for the full manual.";

/// Servers named in the instructions at most; the rest are counted.
pub const MAX_LISTED_SERVERS: usize = 40;
/// Bytes of the server list in the instructions at most (names and
/// descriptions), so 40 servers stay a small, fixed cost to the model.
pub const MAX_SERVER_LIST_BYTES: usize = 4096;
/// Characters of a server's description shown in the instructions.
const DESCRIPTION_CHARS: usize = 80;

/// `serverInfo`: the same name and version `codemode --version` prints.
pub fn server_info() -> Implementation {
    Implementation::new("codemode", env!("CARGO_PKG_VERSION"))
        .with_title("codemode: Python code mode for MCP servers")
}

/// The instructions: how to use the tool, then the servers a cell may load
/// (names and one-line descriptions), capped by [`MAX_LISTED_SERVERS`] and
/// [`MAX_SERVER_LIST_BYTES`].
pub fn instructions(servers: &BTreeMap<String, ServerConfig>, unapproved: &[String]) -> String {
    let mut text = String::from(INSTRUCTIONS);
    if !unapproved.is_empty() {
        let mut names: Vec<String> = unapproved.iter().map(|n| printable(n)).collect();
        names.sort();
        names.dedup();
        let shown: String = names
            .join(", ")
            .chars()
            .take(MAX_SERVER_LIST_BYTES / 4)
            .collect();
        text.push_str(&format!(
            "\nNot loadable until the user approves their project config with `codemode trust`: {shown}."
        ));
    }
    if servers.is_empty() {
        text.push_str("\nNo MCP servers are available.");
        return text;
    }
    text.push_str("\nServers (load by name with servers=[...]):");
    let mut used = 0usize;
    let mut listed = 0usize;
    for (name, config) in servers {
        let line = server_line(name, &config.description);
        if listed == MAX_LISTED_SERVERS || used + line.len() > MAX_SERVER_LIST_BYTES {
            break;
        }
        used += line.len();
        listed += 1;
        text.push_str(&line);
    }
    let rest = servers.len() - listed;
    if rest > 0 {
        text.push_str(&format!(
            "\n- ... and {rest} more: runtime.discovered_servers(detailed=True) lists them all."
        ));
    }
    text
}

/// `\n- name: description` with the description's first line, shortened.
fn server_line(name: &str, description: &str) -> String {
    let first = description.lines().next().unwrap_or("").trim();
    let mut short: String = first.chars().take(DESCRIPTION_CHARS).collect();
    if short.len() < first.len() {
        short.push_str("...");
    }
    let (name, short) = (printable(name), printable(&short));
    if short.is_empty() {
        format!("\n- {name}")
    } else {
        format!("\n- {name}: {short}")
    }
}

/// Without control characters: config text must not shape the model's prompt.
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

fn object(value: Value) -> Arc<Map<String, Value>> {
    Arc::new(match value {
        Value::Object(m) => m,
        _ => Map::new(),
    })
}

/// The JSON Schema of `run_python`'s `structuredContent`.
pub fn output_schema() -> Value {
    let text = |d: &str| json!({"type": "string", "description": d});
    let count = |d: &str| json!({"type": "integer", "minimum": 0, "description": d});
    let names = |d: &str| json!({"type": "array", "items": {"type": "string"}, "description": d});
    json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": RunStatus::ALL.map(RunStatus::as_str)},
            "stdout": text("What the cell printed (head and tail kept beyond the output cap)."),
            "stderr": text("What the cell wrote to stderr."),
            "error": text("The exception, timeout or validation message."),
            "servers": names("Servers loaded in this session."),
            "notes": names("Notes from codemode: processes, lost state, caps reached."),
            "timeoutSeconds": count("The timeout that ended the cell."),
            "images": count("Images returned as image content."),
            "display": text("The last expression's value as a notebook shows it (repr; a DataFrame as a table)."),
            "result": {"description": "That value as JSON, when it is plain data."},
            "durationMs": count("Wall time of the call."),
        },
        "required": ["status", "durationMs"],
        "additionalProperties": false
    })
}

pub fn tool_definition(max_timeout: u64, default_timeout: u64) -> Tool {
    Tool::new(
        TOOL_NAME,
        "Run Python in a persistent sandbox (like a notebook) where configured MCP servers are Python modules. \
         A last expression's value is shown (and returned as `result` when it is JSON data). \
         Prefer one cell that discovers, calls and combines tools over many calls.",
        RunPythonArgs::schema(max_timeout, default_timeout),
    )
    .with_title("Run Python")
    .with_raw_output_schema(object(output_schema()))
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .open_world(true),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(description: &str) -> ServerConfig {
        ServerConfig {
            name: String::new(),
            command: "true".into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            description: description.into(),
            source: Default::default(),
            source_name: String::new(),
        }
    }

    #[test]
    fn instructions_name_servers_with_short_descriptions() {
        let mut servers = BTreeMap::new();
        servers.insert("time".to_string(), config("Current time\nand more"));
        servers.insert("github".to_string(), config(&"x".repeat(200)));
        servers.insert("bare".to_string(), config(""));
        let text = instructions(&servers, &["proj".into()]);
        assert!(text.contains("approves their project config with `codemode trust`: proj."));
        assert!(text.contains("\n- time: Current time"), "{text}");
        assert!(!text.contains("and more"), "{text}");
        assert!(
            text.contains(&format!("\n- github: {}...", "x".repeat(80))),
            "{text}"
        );
        assert!(text.contains("\n- bare"), "{text}");
    }

    #[test]
    fn the_server_list_is_capped() {
        let servers: BTreeMap<String, ServerConfig> = (0..100)
            .map(|i| (format!("server-{i:03}"), config(&"d".repeat(100))))
            .collect();
        let text = instructions(&servers, &[]);
        let listed = text.matches("\n- server-").count();
        assert!(listed <= MAX_LISTED_SERVERS, "{listed}");
        assert!(text.len() <= INSTRUCTIONS.len() + MAX_SERVER_LIST_BYTES + 200);
        assert!(
            text.contains(&format!("and {} more", 100 - listed)),
            "{text}"
        );
    }
}
