//! One config file to server definitions: reading it as JSON(C) or TOML,
//! finding the server tables each client uses, and turning their entries
//! into [`ServerConfig`]s, invalid entries and skipped ones.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{Map, Value};

use super::entry::{self, Parsed};
use super::error::{kind_of, ConfigError, ConfigErrorKind, EntryError};
use super::expand::Expander;
use super::{jsonc, ServerConfig, SkipReason, SkippedServer};

/// Everything one file defines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileReport {
    /// Launchable stdio servers, in file order, one per name.
    pub servers: Vec<ServerConfig>,
    /// Entries with a bad shape; the rest of the file is still usable.
    pub invalid: Vec<InvalidEntry>,
    /// Remote, disabled and same-file duplicate entries.
    pub skipped: Vec<SkippedServer>,
}

/// A server entry that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidEntry {
    pub server: String,
    pub error: EntryError,
}

/// Which part of a document holds its servers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Select<'a> {
    /// Every server table a client format defines, found by key.
    Auto,
    /// `~/.claude.json`'s `projects.<dir>.mcpServers` (Claude Code's local scope).
    ClaudeProject(&'a Path),
}

const LABEL: &str = "config file";

/// Servers of one file in any supported format. An entry with a bad shape
/// fails the whole call (use [`load_file_report`] to keep the rest).
/// No self-reference policy is applied: see [`super::is_self_server`].
/// Discovery reads files through [`extract`]; this is the tests' way in.
#[cfg(test)]
pub(crate) fn load_file(path: &Path) -> Result<Vec<ServerConfig>, ConfigError> {
    let report = load_file_report(path)?;
    if let Some(bad) = report.invalid.into_iter().next() {
        let kind = ConfigErrorKind::Entry {
            server: bad.server,
            error: bad.error,
        };
        return Err(ConfigError::new(path, kind));
    }
    Ok(report.servers)
}

/// Everything one file defines, invalid entries listed beside the good ones.
/// A file without any server table is an error here.
#[cfg(test)]
pub(crate) fn load_file_report(path: &Path) -> Result<FileReport, ConfigError> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let host_env = |name: &str| std::env::var(name).ok();
    let value = read_document(path)?;
    let expander = Expander::for_file(path, home, &host_env);
    match extract(path, &value, Select::Auto, LABEL, &expander) {
        Ok(Some(report)) => Ok(report),
        Ok(None) => Err(ConfigError::new(path, ConfigErrorKind::NoServerTable)),
        Err(kind) => Err(ConfigError::new(path, kind)),
    }
}

/// [`load_file_report`] with every `${...}` left as written and no
/// variable forwarded: for showing what an unapproved file would run.
pub fn load_file_report_as_written(path: &Path) -> Result<FileReport, ConfigError> {
    let value = read_document(path)?;
    match extract(path, &value, Select::Auto, LABEL, &Expander::inert()) {
        Ok(Some(report)) => Ok(report),
        Ok(None) => Err(ConfigError::new(path, ConfigErrorKind::NoServerTable)),
        Err(kind) => Err(ConfigError::new(path, kind)),
    }
}

/// Reads and parses a file: TOML by its `.toml` extension, JSON(C) by
/// `.json`/`.jsonc`, otherwise whichever parses (JSON's error if neither).
pub(crate) fn read_document(path: &Path) -> Result<Value, ConfigError> {
    parse_document(path, &read_bytes(path)?)
}

/// A config file's bytes, a missing file told apart from an unreadable one.
pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ConfigError::new(path, ConfigErrorKind::Missing),
        _ => ConfigError::new(path, ConfigErrorKind::Read(e)),
    })
}

/// Parses bytes already read from `path` (whose extension picks the format):
/// the bytes a trust decision was made on are the bytes that get used.
pub(crate) fn parse_document(path: &Path, bytes: &[u8]) -> Result<Value, ConfigError> {
    let fail = |kind| ConfigError::new(path, kind);
    let text = std::str::from_utf8(bytes).map_err(|_| fail(ConfigErrorKind::NotUtf8))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let value = match ext {
        "toml" => parse_toml(text),
        "json" | "jsonc" => parse_json(text),
        _ => parse_json(text).or_else(|json_err| parse_toml(text).map_err(|_| json_err)),
    }
    .map_err(fail)?;
    match value {
        Value::Object(_) => Ok(value),
        other => Err(fail(ConfigErrorKind::TopLevel {
            found: kind_of(&other),
        })),
    }
}

fn parse_json(text: &str) -> Result<Value, ConfigErrorKind> {
    serde_json::from_str(&jsonc::to_json(text)).map_err(ConfigErrorKind::Json)
}

fn parse_toml(text: &str) -> Result<Value, ConfigErrorKind> {
    match toml::from_str::<toml::Table>(text) {
        Ok(table) => Ok(toml_to_json(toml::Value::Table(table))),
        Err(e) => {
            let offset = e.span().map_or(0, |span| span.start);
            let before = &text[..offset.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            Err(ConfigErrorKind::Toml {
                line,
                column,
                message: e.message().trim().to_owned(),
            })
        }
    }
}

fn toml_to_json(value: toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => Value::from(f),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(table) => Value::Object(
            table
                .into_iter()
                .map(|(k, v)| (k, toml_to_json(v)))
                .collect(),
        ),
    }
}

/// The servers `select` finds in a parsed document, `None` when it holds
/// no server table at all (normal for, say, a settings file without MCP).
pub(crate) fn extract(
    path: &Path,
    doc: &Value,
    select: Select<'_>,
    source_name: &str,
    expander: &Expander<'_>,
) -> Result<Option<FileReport>, ConfigErrorKind> {
    let tables = match select {
        Select::Auto => auto_tables(doc)?,
        Select::ClaudeProject(dir) => claude_project_table(doc, dir)?.into_iter().collect(),
    };
    if tables.is_empty() {
        return Ok(None);
    }
    let file_description = doc.get("description").and_then(Value::as_str).unwrap_or("");
    let mut report = FileReport::default();
    let mut seen = HashSet::new();
    for table in tables {
        for (name, value) in table.entries {
            if table.lenient && !value.is_object() {
                continue;
            }
            let skip = |reason| SkippedServer {
                name: name.clone(),
                source: path.to_path_buf(),
                source_name: source_name.to_owned(),
                reason,
            };
            let launch = match entry::parse(value, expander) {
                Ok(Parsed::Stdio(launch)) => launch,
                Ok(Parsed::Remote { transport }) => {
                    report
                        .skipped
                        .push(skip(SkipReason::NotStdio { transport }));
                    continue;
                }
                Ok(Parsed::Disabled) => {
                    report.skipped.push(skip(SkipReason::Disabled));
                    continue;
                }
                Err(error) => {
                    report.invalid.push(InvalidEntry {
                        server: name.clone(),
                        error,
                    });
                    continue;
                }
            };
            if !seen.insert(name.clone()) {
                let by = path.to_path_buf();
                report.skipped.push(skip(SkipReason::Shadowed { by }));
                continue;
            }
            report.servers.push(ServerConfig {
                name: name.clone(),
                command: launch.command,
                args: launch.args,
                env: launch.env,
                cwd: launch.cwd,
                description: launch
                    .description
                    .unwrap_or_else(|| file_description.to_owned()),
                source: path.to_path_buf(),
                source_name: source_name.to_owned(),
            });
        }
    }
    Ok(Some(report))
}

struct Table<'a> {
    entries: &'a Map<String, Value>,
    /// OpenCode's `mcp` key is also Gemini's `mcp` settings block
    /// (`allowed`, `excluded`, ...): only object values there are servers.
    lenient: bool,
}

fn auto_tables(doc: &Value) -> Result<Vec<Table<'_>>, ConfigErrorKind> {
    let mut tables = Vec::new();
    for key in [
        "mcpServers",
        "servers",
        "mcp.servers",
        "mcp_servers",
        "context_servers",
    ] {
        if let Some(value) = doc.get(key) {
            tables.push(strict_table(key, value)?);
        }
    }
    // A non-object `mcp` is no client's table of servers: ignored.
    if let Some(Value::Object(mcp)) = doc.get("mcp") {
        match mcp.get("servers") {
            Some(servers @ Value::Object(_)) => tables.push(strict_table("mcp.servers", servers)?),
            _ => tables.push(Table {
                entries: mcp,
                lenient: true,
            }),
        }
    }
    Ok(tables)
}

fn claude_project_table<'a>(
    doc: &'a Value,
    dir: &Path,
) -> Result<Option<Table<'a>>, ConfigErrorKind> {
    let Some(Value::Object(projects)) = doc.get("projects") else {
        return Ok(None);
    };
    let canonical = dir.canonicalize().ok();
    let project = [Some(dir), canonical.as_deref()]
        .into_iter()
        .flatten()
        .find_map(|d| projects.get(d.to_string_lossy().as_ref()));
    match project.and_then(|p| p.get("mcpServers")) {
        Some(value) => strict_table("projects.<cwd>.mcpServers", value).map(Some),
        None => Ok(None),
    }
}

fn strict_table<'a>(key: &str, value: &'a Value) -> Result<Table<'a>, ConfigErrorKind> {
    match value {
        Value::Object(entries) => Ok(Table {
            entries,
            lenient: false,
        }),
        other => Err(table_error(key, other)),
    }
}

fn table_error(key: &str, found: &Value) -> ConfigErrorKind {
    ConfigErrorKind::ServersTable {
        key: key.to_owned(),
        found: kind_of(found),
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
