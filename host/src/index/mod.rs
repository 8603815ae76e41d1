//! The tool index: every configured server's tools as it last listed them
//! (name, description, input schema), so `search_tool_docs` can rank tools
//! of servers that are not started or not loaded. Filled when a server
//! lists its tools (at its start, and again after `tools/list_changed`),
//! kept in `tool-index.json` under the state dir so it survives restarts,
//! written atomically. A missing file is an empty index; an unreadable or
//! corrupt one is logged and rebuilt as servers start, never fatal.
//!
//! Entries carry a fingerprint of the server's command, arguments and
//! working directory: a server whose config changed is not searched until
//! it lists its tools again. Secrets (`env`) are not part of it.
//! [`bm25`] ranks; [`search`] turns the index into ranked hits.

pub mod bm25;
pub mod search;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::ServerConfig;

/// The index's file name in the state dir.
pub const INDEX_FILE: &str = "tool-index.json";
/// Bumped when the file's shape changes; another version is rebuilt.
const FORMAT_VERSION: u32 = 1;
/// A larger file is not read (and is rebuilt): 40 servers of 100 tools
/// with large schemas stay far below it.
const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// Tools kept per server, characters per description, bytes per schema
/// (a larger schema is kept as `null`: the tool stays searchable).
const MAX_TOOLS: usize = 2000;
const MAX_DESCRIPTION_CHARS: usize = 4096;
const MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// One tool as the index keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexedTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, rename = "inputSchema")]
    pub input_schema: Value,
}

/// One server's tools, and the config they were listed under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexedServer {
    pub fingerprint: String,
    /// Seconds since the epoch when the tools were listed.
    #[serde(rename = "indexedAt")]
    pub indexed_at: u64,
    pub tools: Vec<IndexedTool>,
}

/// The file: `servers` is the map when read, a borrow of it when written.
#[derive(Serialize, Deserialize)]
struct IndexFile<S> {
    version: u32,
    servers: S,
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("cannot read the tool index {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the tool index {path} is {len} bytes, more than the {max} it may be")]
    TooLarge { path: PathBuf, len: u64, max: u64 },
    #[error("the tool index {path} is not valid: {source}")]
    Corrupt {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "the tool index {path} has format version {found}, this codemode writes {FORMAT_VERSION}"
    )]
    Version { path: PathBuf, found: u32 },
    #[error("cannot write the tool index {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The index in memory, and the file behind it.
pub struct ToolIndex {
    file: PathBuf,
    servers: Mutex<BTreeMap<String, IndexedServer>>,
    /// Held while a record is merged with the file and written, so two
    /// records of this process never write over each other.
    writing: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The index holds plain data: a panic elsewhere leaves it usable.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ToolIndex {
    /// The index kept in `state_dir`, as its file holds it now.
    pub fn open(state_dir: &Path) -> Self {
        let file = state_dir.join(INDEX_FILE);
        let servers = match load(&file) {
            Ok(servers) => servers,
            Err(e) => {
                tracing::warn!("{e}; starting an empty tool index, rebuilt as servers start");
                BTreeMap::new()
            }
        };
        Self {
            file,
            servers: Mutex::new(servers),
            writing: Mutex::new(()),
        }
    }

    /// Every indexed server, as of now.
    pub fn snapshot(&self) -> BTreeMap<String, IndexedServer> {
        lock(&self.servers).clone()
    }

    /// Records `tools` as `server`'s tools under `fingerprint`, and writes
    /// the file (merged with what other codemode processes wrote to it
    /// meanwhile) unless nothing changed. A failed write is logged: the
    /// index in memory is still current.
    pub fn record(&self, server: &str, fingerprint: &str, tools: &[Tool]) {
        let entry = IndexedServer {
            fingerprint: fingerprint.to_string(),
            indexed_at: now_secs(),
            tools: tools.iter().take(MAX_TOOLS).map(indexed_tool).collect(),
        };
        let _writing = lock(&self.writing);
        let unchanged = lock(&self.servers)
            .get(server)
            .is_some_and(|old| old.fingerprint == entry.fingerprint && old.tools == entry.tools);
        if unchanged {
            return;
        }
        let mut merged = load(&self.file).unwrap_or_else(|_| self.snapshot());
        merged.insert(server.to_string(), entry);
        if let Err(e) = save(&self.file, &merged) {
            tracing::warn!("{e}; the tool index is kept in memory only");
        }
        *lock(&self.servers) = merged;
    }
}

/// What identifies a server's tool list besides its name: its command,
/// arguments and working directory (not `env`, which holds secrets).
pub fn fingerprint(config: &ServerConfig) -> String {
    let identity = serde_json::json!([config.command, config.args, config.cwd]);
    crate::config::sha256_hex(identity.to_string().as_bytes())
}

fn indexed_tool(tool: &Tool) -> IndexedTool {
    let schema = Value::Object((*tool.input_schema).clone());
    let small = serde_json::to_string(&schema).is_ok_and(|s| s.len() <= MAX_SCHEMA_BYTES);
    IndexedTool {
        name: tool.name.to_string(),
        description: tool
            .description
            .as_deref()
            .unwrap_or_default()
            .chars()
            .take(MAX_DESCRIPTION_CHARS)
            .collect(),
        input_schema: if small { schema } else { Value::Null },
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The servers the file holds; a missing file holds none.
fn load(file: &Path) -> Result<BTreeMap<String, IndexedServer>, IndexError> {
    let path = file.to_path_buf();
    let len = match std::fs::symlink_metadata(file) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(source) => return Err(IndexError::Read { path, source }),
    };
    if len > MAX_FILE_BYTES {
        return Err(IndexError::TooLarge {
            path,
            len,
            max: MAX_FILE_BYTES,
        });
    }
    let bytes = std::fs::read(file).map_err(|source| IndexError::Read {
        path: path.clone(),
        source,
    })?;
    let index: IndexFile<BTreeMap<String, IndexedServer>> = serde_json::from_slice(&bytes)
        .map_err(|source| IndexError::Corrupt {
            path: path.clone(),
            source,
        })?;
    if index.version != FORMAT_VERSION {
        return Err(IndexError::Version {
            path,
            found: index.version,
        });
    }
    Ok(index.servers)
}

fn save(file: &Path, servers: &BTreeMap<String, IndexedServer>) -> Result<(), IndexError> {
    let fail = |source| IndexError::Write {
        path: file.to_path_buf(),
        source,
    };
    let index = IndexFile {
        version: FORMAT_VERSION,
        servers,
    };
    let text = serde_json::to_vec(&index).map_err(|e| fail(std::io::Error::other(e)))?;
    crate::config::write_private_atomically(file, &text).map_err(fail)
}
