//! One server entry, whatever client wrote it, to a launchable command.
//!
//! The dialects differ only in spelling, so one lenient reader takes them
//! all: `command` is a string (most), an array holding the arguments too
//! (OpenCode) or an object with `path`/`args`/`env` (older Zed); the
//! environment is `env` (an object, or `NAME=VALUE` strings in old
//! OpenCode) or `environment` (OpenCode); `env_vars` (Codex) forwards host
//! variables by name; `disabled: true` / `enabled: false` switch an entry
//! off; `type`, `url`, `httpUrl` or `serverUrl` mark a remote server.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::error::{kind_of, EntryError};
use super::expand::Expander;

/// What an entry turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parsed {
    Stdio(Launch),
    Remote { transport: String },
    Disabled,
}

/// The launch fields of a stdio server, `${...}` already expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Launch {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub description: Option<String>,
}

const REMOTE_TYPES: &[&str] = &[
    "http",
    "sse",
    "streamable-http",
    "streamable_http",
    "streamableHttp",
    "remote",
    "ws",
    "websocket",
];
const URL_KEYS: &[&str] = &["url", "httpUrl", "serverUrl"];

pub(crate) fn parse(value: &Value, expander: &Expander<'_>) -> Result<Parsed, EntryError> {
    let Value::Object(entry) = value else {
        return Err(EntryError::NotAnObject {
            found: kind_of(value),
        });
    };
    if flag(entry, "disabled")? == Some(true) || flag(entry, "enabled")? == Some(false) {
        return Ok(Parsed::Disabled);
    }
    let declared = match entry.get("type") {
        None => None,
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(other) => return Err(wrong("type", "a string", other)),
    };
    if let Some(kind) = declared.filter(|k| REMOTE_TYPES.contains(k)) {
        return Ok(Parsed::Remote {
            transport: kind.to_owned(),
        });
    }
    let Some(command) = entry.get("command") else {
        if URL_KEYS.iter().any(|key| entry.contains_key(*key)) {
            let transport = declared.unwrap_or("http").to_owned();
            return Ok(Parsed::Remote { transport });
        }
        // Zed lets an extension supply the command; codemode cannot.
        if entry.get("source").and_then(Value::as_str) == Some("extension") {
            return Ok(Parsed::Remote {
                transport: "zed extension".to_owned(),
            });
        }
        return Err(EntryError::MissingCommand);
    };
    launch(entry, command, expander).map(Parsed::Stdio)
}

fn launch(
    entry: &Map<String, Value>,
    command: &Value,
    expander: &Expander<'_>,
) -> Result<Launch, EntryError> {
    let mut args = Vec::new();
    let mut env = BTreeMap::new();
    let program = match command {
        Value::String(program) => program.clone(),
        Value::Array(parts) => {
            let mut parts = strings("command", parts)?.into_iter();
            let program = parts
                .next()
                .ok_or(EntryError::EmptyCommand { field: "command" })?;
            args.extend(parts);
            program
        }
        Value::Object(legacy) => {
            let program = match legacy.get("path") {
                Some(Value::String(path)) => path.clone(),
                Some(other) => return Err(wrong("command.path", "a string", other)),
                None => return Err(EntryError::MissingCommand),
            };
            args.extend(optional_args("command.args", legacy.get("args"))?);
            read_env("command.env", legacy.get("env"), &mut env)?;
            program
        }
        other => return Err(wrong("command", "a string or an array of strings", other)),
    };
    if program.trim().is_empty() {
        return Err(EntryError::EmptyCommand { field: "command" });
    }
    args.extend(optional_args("args", entry.get("args"))?);
    read_env("env", entry.get("env"), &mut env)?;
    read_env("environment", entry.get("environment"), &mut env)?;
    forward_env_vars(entry.get("env_vars"), expander, &mut env)?;
    let cwd = match entry.get("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(dir)) if dir.is_empty() => None,
        Some(Value::String(dir)) => Some(PathBuf::from(expander.expand(dir))),
        Some(other) => return Err(wrong("cwd", "a string", other)),
    };
    let description = entry
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(Launch {
        command: expander.expand(&program),
        args: args.iter().map(|a| expander.expand(a)).collect(),
        env: env
            .into_iter()
            .map(|(k, v)| {
                let v = expander.expand(&v);
                (k, v)
            })
            .collect(),
        cwd,
        description,
    })
}

fn flag(entry: &Map<String, Value>, key: &'static str) -> Result<Option<bool>, EntryError> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(wrong(key, "a boolean", other)),
    }
}

fn optional_args(field: &str, value: Option<&Value>) -> Result<Vec<String>, EntryError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => strings(field, items),
        Some(other) => Err(wrong(field, "an array of strings", other)),
    }
}

/// Strings, with numbers and booleans spelled out (`"--port", 8080` is
/// common in hand-written configs); anything else is an error.
fn strings(field: &str, items: &[Value]) -> Result<Vec<String>, EntryError> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            scalar(item).ok_or_else(|| wrong(&format!("{field}[{i}]"), "a string", item))
        })
        .collect()
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn read_env(
    field: &str,
    value: Option<&Value>,
    env: &mut BTreeMap<String, String>,
) -> Result<(), EntryError> {
    match value {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Object(vars)) => {
            for (name, value) in vars {
                let text = scalar(value)
                    .ok_or_else(|| wrong(&format!("{field}.{name}"), "a string", value))?;
                env.insert(name.clone(), text);
            }
            Ok(())
        }
        Some(Value::Array(pairs)) => {
            for (i, pair) in pairs.iter().enumerate() {
                let item = format!("{field}[{i}]");
                let Value::String(pair) = pair else {
                    return Err(wrong(&item, "a `NAME=VALUE` string", pair));
                };
                let Some((name, value)) = pair.split_once('=').filter(|(n, _)| !n.is_empty())
                else {
                    return Err(EntryError::EnvPair {
                        field: item,
                        found: pair.clone(),
                    });
                };
                env.insert(name.to_owned(), value.to_owned());
            }
            Ok(())
        }
        Some(other) => Err(wrong(field, "an object of strings", other)),
    }
}

/// Codex's `env_vars`: names whose host values the server should get.
/// Explicit `env` entries win; unset names are left out.
fn forward_env_vars(
    value: Option<&Value>,
    expander: &Expander<'_>,
    env: &mut BTreeMap<String, String>,
) -> Result<(), EntryError> {
    for name in optional_args("env_vars", value)? {
        if env.contains_key(&name) {
            continue;
        }
        if let Some(host_value) = (expander.env)(&name) {
            env.insert(name, host_value);
        }
    }
    Ok(())
}

fn wrong(field: &str, expected: &'static str, found: &Value) -> EntryError {
    EntryError::WrongType {
        field: field.to_owned(),
        expected,
        found: kind_of(found),
    }
}

#[cfg(test)]
#[path = "entry_tests.rs"]
mod tests;
