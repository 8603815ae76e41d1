//! Which project config files the user has approved: `codemode trust`
//! records each file's SHA-256 in the state dir, and discovery starts a
//! project file's servers only while its bytes still match.
//!
//! A project file (one found relative to the working directory) comes with
//! whatever repository was cloned there, and names programs codemode would
//! start, so it is untrusted until approved, like Claude Code's and VS
//! Code's workspace servers. The store is keyed by canonical path: the same
//! bytes elsewhere (relative commands resolve differently) need their own
//! approval. A store that cannot be read trusts nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// File name of the store inside the state dir.
pub const TRUST_FILE: &str = "trusted-configs.json";
/// On-disk format version; another version is refused, not guessed at.
const FORMAT_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read the trust store {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the trust store {path} is not valid (fix or delete it): {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot write the trust store {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Config {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: expected a file, found a directory (name the config files inside)")]
    Directory { path: PathBuf },
    #[error("{path}: only UTF-8 paths can be recorded")]
    NotUtf8 { path: PathBuf },
}

/// What the store says about one file's current bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustStatus {
    Trusted,
    /// Never approved (or approval revoked).
    Untrusted,
    /// Approved once, but its bytes differ now.
    Changed,
}

/// Approved files: canonical path to the hex SHA-256 of the approved bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustStore {
    approved: BTreeMap<PathBuf, String>,
    /// Why the store on disk could not be used; such a store trusts nothing.
    unreadable: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    version: u32,
    files: BTreeMap<String, Approval>,
}

#[derive(Serialize, Deserialize)]
struct Approval {
    sha256: String,
}

impl TrustStore {
    /// Reads the store; a missing file is an empty store.
    pub fn load(file: &Path) -> Result<Self, TrustError> {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(TrustError::Read {
                    path: file.to_path_buf(),
                    source,
                })
            }
        };
        let invalid = |message: String| TrustError::Invalid {
            path: file.to_path_buf(),
            message,
        };
        let disk: OnDisk = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        if disk.version != FORMAT_VERSION {
            return Err(invalid(format!(
                "expected version {FORMAT_VERSION}, found {}",
                disk.version
            )));
        }
        let approved = disk
            .files
            .into_iter()
            .map(|(path, a)| (PathBuf::from(path), a.sha256))
            .collect();
        Ok(Self {
            approved,
            unreadable: None,
        })
    }

    /// [`Self::load`], or a store that trusts nothing and says why.
    pub fn load_or_distrust(file: &Path) -> Self {
        Self::load(file).unwrap_or_else(|e| Self {
            approved: BTreeMap::new(),
            unreadable: Some(e.to_string()),
        })
    }

    /// Why the store could not be read, when it could not.
    pub fn problem(&self) -> Option<&str> {
        self.unreadable.as_deref()
    }

    /// Writes the store atomically (a temporary file renamed over it),
    /// creating the state dir private (0700) when it is missing.
    pub fn save(&self, file: &Path) -> Result<(), TrustError> {
        let fail = |source| TrustError::Write {
            path: file.to_path_buf(),
            source,
        };
        let mut files = BTreeMap::new();
        for (path, sha256) in &self.approved {
            let Some(key) = path.to_str() else { continue };
            let sha256 = sha256.clone();
            files.insert(key.to_owned(), Approval { sha256 });
        }
        let disk = OnDisk {
            version: FORMAT_VERSION,
            files,
        };
        let mut text = serde_json::to_string_pretty(&disk)
            .map_err(|e| fail(std::io::Error::other(e.to_string())))?;
        text.push('\n');
        write_private_atomically(file, text.as_bytes()).map_err(fail)
    }

    /// Approves `path`'s current bytes; returns its canonical path and digest.
    pub fn approve(&mut self, path: &Path) -> Result<(PathBuf, String), TrustError> {
        let config = |source| TrustError::Config {
            path: path.to_path_buf(),
            source,
        };
        let canonical = path.canonicalize().map_err(config)?;
        if canonical.is_dir() {
            return Err(TrustError::Directory { path: canonical });
        }
        if canonical.to_str().is_none() {
            return Err(TrustError::NotUtf8 { path: canonical });
        }
        let bytes = std::fs::read(&canonical).map_err(config)?;
        let digest = sha256_hex(&bytes);
        self.approved.insert(canonical.clone(), digest.clone());
        Ok((canonical, digest))
    }

    /// Removes the approval of `path` (which may no longer exist); false
    /// when it had none.
    pub fn revoke(&mut self, path: &Path) -> bool {
        let key = path.canonicalize().unwrap_or_else(|_| absolute(path));
        self.approved.remove(&key).is_some()
    }

    /// Whether `bytes`, read from the file at canonical path `path`, are
    /// the bytes the user approved.
    pub fn status(&self, path: &Path, bytes: &[u8]) -> TrustStatus {
        match self.approved.get(path) {
            None => TrustStatus::Untrusted,
            Some(digest) if *digest == sha256_hex(bytes) => TrustStatus::Trusted,
            Some(_) => TrustStatus::Changed,
        }
    }
}

/// Creates `dir` (and missing parents) readable by its owner only; an
/// existing directory keeps its mode.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Writes `file` whole or not at all: a temporary file (0600, in the same
/// directory, so the rename is atomic) synced and renamed over it. Creates
/// the directory private (0700) when it is missing.
pub(crate) fn write_private_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(digest.len() * 2);
    for byte in digest {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `path` quoted for a POSIX shell, so a command printed for the user to
/// paste cannot run anything a hostile file name smuggles in.
pub fn shell_quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        return text.into_owned();
    }
    let escaped: String = text
        .chars()
        .flat_map(|c| -> Vec<char> {
            match c {
                '\'' => "'\\''".chars().collect(),
                // Control characters stay visible and inert, never raw.
                c if c.is_control() => c.escape_default().collect(),
                c => vec![c],
            }
        })
        .collect();
    format!("'{escaped}'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_holds_until_the_bytes_change_or_it_is_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join(".mcp.json");
        std::fs::write(&config, "{}").unwrap();
        let canonical = config.canonicalize().unwrap();
        let mut store = TrustStore::default();
        assert_eq!(store.status(&canonical, b"{}"), TrustStatus::Untrusted);
        let (path, digest) = store.approve(&config).unwrap();
        assert_eq!(path, canonical);
        assert_eq!(digest, sha256_hex(b"{}"));
        assert_eq!(store.status(&canonical, b"{}"), TrustStatus::Trusted);
        assert_eq!(store.status(&canonical, b"{ }"), TrustStatus::Changed);
        // Saved and loaded again, atomically, in a private state dir.
        let file = dir.path().join("state/sub").join(TRUST_FILE);
        store.save(&file).unwrap();
        let mode = |p: &Path| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(p).unwrap().permissions().mode() & 0o777
        };
        assert_eq!(mode(&dir.path().join("state")), 0o700);
        assert_eq!(mode(&file), 0o600);
        let mut loaded = TrustStore::load(&file).unwrap();
        assert_eq!(loaded, store);
        assert!(loaded.revoke(&config));
        assert!(!loaded.revoke(&config));
        assert_eq!(loaded.status(&canonical, b"{}"), TrustStatus::Untrusted);
    }

    #[test]
    fn an_unreadable_store_trusts_nothing_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(TRUST_FILE);
        assert_eq!(TrustStore::load(&file).unwrap(), TrustStore::default());
        std::fs::write(&file, "not json").unwrap();
        let store = TrustStore::load_or_distrust(&file);
        assert!(store.problem().unwrap().contains("not valid"));
        std::fs::write(&file, r#"{"version": 9, "files": {}}"#).unwrap();
        assert!(matches!(
            TrustStore::load(&file),
            Err(TrustError::Invalid { .. })
        ));
        assert!(matches!(
            TrustStore::default().approve(dir.path()),
            Err(TrustError::Directory { .. })
        ));
    }

    #[test]
    fn printed_commands_quote_hostile_names() {
        assert_eq!(shell_quote(Path::new("/p/.mcp.json")), "/p/.mcp.json");
        assert_eq!(
            shell_quote(Path::new("/p/mcp-servers/$(rm -rf ~)'.json")),
            r"'/p/mcp-servers/$(rm -rf ~)'\''.json'"
        );
        assert_eq!(shell_quote(Path::new("/p/a\u{1b}[2J")), r"'/p/a\u{1b}[2J'");
    }
}
