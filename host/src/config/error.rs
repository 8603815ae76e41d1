//! Errors of config reading: a whole file ([`ConfigError`]) and one server
//! entry inside a file ([`EntryError`]).

use std::path::PathBuf;

/// A config file that could not be used, with its path.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct ConfigError {
    pub path: PathBuf,
    pub kind: ConfigErrorKind,
}

/// What is wrong with a config file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigErrorKind {
    #[error("expected a config file, found nothing at this path")]
    Missing,
    #[error("expected a readable file: {0}")]
    Read(#[source] std::io::Error),
    #[error("expected UTF-8 text, found invalid byte sequences")]
    NotUtf8,
    #[error("invalid JSON: {0}")]
    Json(#[source] serde_json::Error),
    #[error("invalid TOML at line {line}, column {column}: {message}")]
    Toml {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("expected an object at the top level, found {found}")]
    TopLevel { found: &'static str },
    #[error("`{key}`: expected an object mapping server names to servers, found {found}")]
    ServersTable { key: String, found: &'static str },
    #[error(
        "expected one of the keys `mcpServers`, `servers`, `mcp.servers`, `mcp`, \
         `mcp_servers` or `context_servers`, found none"
    )]
    NoServerTable,
    #[error("server `{server}`: {error}")]
    Entry { server: String, error: EntryError },
}

impl ConfigError {
    pub(crate) fn new(path: impl Into<PathBuf>, kind: ConfigErrorKind) -> Self {
        Self {
            path: path.into(),
            kind,
        }
    }
}

/// What is wrong with one server entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error("expected an object, found {found}")]
    NotAnObject { found: &'static str },
    #[error("expected a `command` (or a `url` for a remote server), found neither")]
    MissingCommand,
    #[error("`{field}`: expected {expected}, found {found}")]
    WrongType {
        field: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("`{field}`: expected a non-empty command, found an empty one")]
    EmptyCommand { field: &'static str },
    #[error("`{field}`: expected `NAME=VALUE`, found `{found}`")]
    EnvPair { field: String, found: String },
}

/// JSON type names for "found ..." in messages.
pub(crate) fn kind_of(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
