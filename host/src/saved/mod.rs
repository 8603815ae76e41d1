//! Saved tools: functions a cell keeps with `save_tool(func)` and a later
//! session loads explicitly with `from mcp.saved import name`.
//!
//! The sandbox never sees the directory they live in: saving, listing and
//! loading are RPCs answered here, and the host alone writes the files.
//! This module owns that directory (`<state>/tools`, see [`store`]), the
//! rules a name and a source must follow ([`validate`]), and which session
//! may replace which tool ([`SavedTools`]). Nothing here runs a saved tool.

mod store;
mod validate;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

pub use store::{Entry, FileId, Store};
pub use validate::{check_name, check_source, MAX_TOOLS, MAX_TOTAL_BYTES};

/// Why a saved tool could not be saved, listed or read.
#[derive(Debug, thiserror::Error)]
pub enum SavedError {
    #[error("{name:?} is not a valid tool name: {why}")]
    BadName { name: String, why: &'static str },
    #[error("cannot save {name:?}: {why}")]
    BadSource { name: String, why: String },
    #[error("the saved tool {name:?} was saved by another session; save yours under another name (the user frees this one with `codemode tools remove {name}`)")]
    NotOwner { name: String },
    #[error("cannot save {name:?}: {why} (the user removes saved tools with `codemode tools remove NAME`)")]
    Quota { name: String, why: String },
    #[error("no saved tool named {name:?}")]
    NotFound { name: String },
    #[error("{path} is not a regular file, so codemode ignores it")]
    NotRegular { path: PathBuf },
    #[error("{path} is not a directory")]
    NotADirectory { path: PathBuf },
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A name from outside, fit for an error message: bounded and without
/// control characters.
fn shown(name: &str) -> String {
    const MAX: usize = 80;
    let cut: String = name.chars().take(MAX).collect();
    let more = if cut.len() < name.len() { "..." } else { "" };
    format!("{}{more}", crate::terminal::sanitize_for_terminal(&cut))
}

/// What a successful save did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    pub name: String,
    pub bytes: u64,
    /// An earlier version (saved by the same session) was replaced.
    pub replaced: bool,
}

/// Which session saved a tool during this bridge's life, and the file it
/// wrote: a file changed since (by the user or another bridge) is no
/// longer that session's to replace.
#[derive(Debug, Clone)]
struct Owner {
    session: String,
    file: FileId,
}

/// The bridge's saved tools: the store plus who may replace what.
#[derive(Debug)]
pub struct SavedTools {
    store: Store,
    owners: Mutex<HashMap<String, Owner>>,
}

impl SavedTools {
    pub fn new(store: Store) -> Self {
        Self {
            store,
            owners: Mutex::new(HashMap::new()),
        }
    }

    /// Saves `source` as `name` for `session`. A new name is taken by
    /// whoever saves it first; an existing one only by the session that
    /// saved it during this bridge's life. Quotas count every tool stored.
    pub fn save(&self, session: &str, name: &str, source: &str) -> Result<Saved, SavedError> {
        check_name(name)?;
        check_source(name, source)?;
        // Held across the write so two sessions cannot both take a new name.
        let mut owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        let replaced = match (self.store.file_id(name)?, owners.get(name)) {
            (None, _) => false,
            (Some(on_disk), Some(owner)) if owner.session == session && owner.file == on_disk => {
                true
            }
            (Some(_), _) => {
                return Err(SavedError::NotOwner {
                    name: name.to_string(),
                })
            }
        };
        self.check_quota(name, source.len() as u64)?;
        let file = self.store.write(name, source, replaced)?;
        owners.insert(
            name.to_string(),
            Owner {
                session: session.to_string(),
                file,
            },
        );
        Ok(Saved {
            name: name.to_string(),
            bytes: source.len() as u64,
            replaced,
        })
    }

    fn check_quota(&self, name: &str, bytes: u64) -> Result<(), SavedError> {
        let others: Vec<Entry> = self
            .store
            .scan()?
            .entries
            .into_iter()
            .filter(|e| e.name != name)
            .collect();
        let quota = |why: String| SavedError::Quota {
            name: name.to_string(),
            why,
        };
        if others.len() >= MAX_TOOLS {
            return Err(quota(format!(
                "{MAX_TOOLS} tools are saved already, the most codemode keeps"
            )));
        }
        let total = others.iter().map(|e| e.bytes).sum::<u64>() + bytes;
        if total > MAX_TOTAL_BYTES {
            return Err(quota(format!(
                "saved tools would take {total} bytes, more than the {MAX_TOTAL_BYTES}-byte limit"
            )));
        }
        Ok(())
    }

    /// Saved tools, by name.
    pub fn list(&self) -> Result<Vec<Entry>, SavedError> {
        Ok(self.store.scan()?.entries)
    }

    /// The source of `name`. What is not a regular file is not a tool:
    /// the log says why, the caller only hears that there is none.
    pub fn load(&self, name: &str) -> Result<String, SavedError> {
        check_name(name)?;
        self.store.read(name).map_err(|e| match e {
            SavedError::NotRegular { .. } => {
                tracing::warn!("saved tools: {e}");
                SavedError::NotFound {
                    name: name.to_string(),
                }
            }
            other => other,
        })
    }
}
