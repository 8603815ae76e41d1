//! The saved-tools directory on the host: `<name>.py` files, one per tool.
//!
//! Earlier versions let sandboxes write here, so anything may be found in
//! it: links, FIFOs, odd names. Nothing here follows a link or opens what
//! is not a regular file: entries are examined with `lstat`, files are
//! opened with `O_NOFOLLOW` and checked again on the open descriptor, and
//! new files are created with `O_CREAT|O_EXCL|O_NOFOLLOW` under a temporary
//! name, then linked or renamed into place. Permissions are only ever
//! changed on a descriptor, never through a path.

use std::ffi::OsString;
use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::validate::{check_name, MAX_SOURCE_BYTES};
use super::SavedError;
use crate::terminal::sanitize_for_terminal;

/// The state directory holds saved tools and logs: its owner's only.
const STATE_DIR_MODE: u32 = 0o700;
/// Readable by every sandbox backend's user and the CLI; writable by codemode.
const TOOLS_DIR_MODE: u32 = 0o755;
const TOOL_FILE_MODE: u32 = 0o644;

/// Distinguishes this process's temporary files from each other.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A file's identity: tells whether a tool's file is still the one a
/// session wrote. Device and inode alone are not enough: a removed file's
/// inode number is reused at once by the next file created, so the
/// status-change time and the size are part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
    ctime: i64,
    ctime_nsec: i64,
    len: u64,
}

impl FileId {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
            len: meta.len(),
        }
    }
}

/// One saved tool as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub bytes: u64,
}

/// A listing: the tools, and what was skipped (file name, why).
#[derive(Debug, Default)]
pub struct Scan {
    pub entries: Vec<Entry>,
    pub ignored: Vec<(OsString, &'static str)>,
}

impl Scan {
    /// Logs one warning per skipped entry, names escaped.
    pub fn warn_ignored(&self, dir: &Path) {
        for (name, why) in &self.ignored {
            tracing::warn!(
                "saved tools: ignoring {}/{}: {why}",
                sanitize_for_terminal(&dir.display().to_string()),
                sanitize_for_terminal(&name.to_string_lossy())
            );
        }
    }
}

#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SavedError {
    let path = path.to_path_buf();
    move |source| SavedError::Io {
        action,
        path,
        source,
    }
}

impl Store {
    /// A store over `dir`, which need not exist (the CLI only reads).
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// Creates `state` (0700) and `tools` (0755) when missing, and takes
    /// write access away from group and others on an existing tools
    /// directory (earlier versions made it 0777 for the sandbox).
    pub fn prepare(state: &Path, tools: PathBuf) -> Result<Self, SavedError> {
        if std::fs::symlink_metadata(state).is_err() {
            DirBuilder::new()
                .recursive(true)
                .mode(STATE_DIR_MODE)
                .create(state)
                .map_err(io("create", state))?;
        }
        match std::fs::symlink_metadata(&tools) {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                DirBuilder::new()
                    .mode(TOOLS_DIR_MODE)
                    .create(&tools)
                    .map_err(io("create", &tools))?;
            }
            Err(e) => return Err(io("inspect", &tools)(e)),
            // The user's own link: used, but its target's mode is theirs.
            Ok(meta) if meta.file_type().is_symlink() => {
                tracing::warn!(
                    "saved tools: {} is a link; codemode uses it but leaves its permissions alone",
                    sanitize_for_terminal(&tools.display().to_string())
                );
            }
            Ok(meta) if !meta.is_dir() => {
                return Err(SavedError::NotADirectory { path: tools });
            }
            // Not fatal: nothing there runs by itself and links are never
            // followed, so a directory codemode cannot fix (another user's)
            // is reported and used.
            Ok(meta) if meta.mode() & 0o022 != 0 => {
                if let Err(e) = tighten_dir(&tools) {
                    tracing::warn!(
                        "saved tools: {} is writable by others and stays so: {}",
                        sanitize_for_terminal(&tools.display().to_string()),
                        sanitize_for_terminal(&e.to_string())
                    );
                }
            }
            Ok(_) => {}
        }
        let store = Self::new(tools);
        store.scan()?.warn_ignored(&store.dir);
        Ok(store)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.py"))
    }

    /// The saved tools: regular `<name>.py` files with a valid name, sorted.
    /// Links, FIFOs, directories and badly named `.py` files are reported
    /// in `ignored`; dot files (temporaries) and other files are skipped.
    /// A missing directory holds no tools.
    pub fn scan(&self) -> Result<Scan, SavedError> {
        let mut scan = Scan::default();
        let dir = match std::fs::read_dir(&self.dir) {
            Ok(dir) => dir,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(scan),
            Err(e) => return Err(io("list", &self.dir)(e)),
        };
        for entry in dir {
            let entry = entry.map_err(io("list", &self.dir))?;
            let file_name = entry.file_name();
            let Some(name) = file_name.to_str().and_then(|n| n.strip_suffix(".py")) else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            if check_name(name).is_err() {
                scan.ignored.push((file_name, "not a valid tool name"));
                continue;
            }
            // DirEntry::metadata is lstat: a link is seen as a link.
            let meta = entry.metadata().map_err(io("inspect", &entry.path()))?;
            if !meta.file_type().is_file() {
                scan.ignored
                    .push((file_name, "not a regular file (a link, FIFO or directory)"));
                continue;
            }
            scan.entries.push(Entry {
                name: name.to_string(),
                bytes: meta.len(),
            });
        }
        scan.entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(scan)
    }

    /// What is stored under `name` right now, whatever its kind (a link
    /// counts: it occupies the name).
    pub fn file_id(&self, name: &str) -> Result<Option<FileId>, SavedError> {
        let path = self.path(name);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) => Ok(Some(FileId::of(&meta))),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io("inspect", &path)(e)),
        }
    }

    /// The source saved as `name` (whose validity the caller checked).
    pub fn read(&self, name: &str) -> Result<String, SavedError> {
        let path = self.path(name);
        let not_found = || SavedError::NotFound {
            name: name.to_string(),
        };
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == ErrorKind::NotFound => return Err(not_found()),
            Err(e) => return Err(io("inspect", &path)(e)),
            Ok(meta) if !meta.file_type().is_file() => {
                return Err(SavedError::NotRegular { path });
            }
            Ok(_) => {}
        }
        // O_NONBLOCK: should a FIFO replace the file after the check above,
        // opening it must not wait for a writer; the fstat below refuses it.
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ENOENT) => not_found(),
                Some(libc::ELOOP) => SavedError::NotRegular { path: path.clone() },
                _ => io("open", &path)(e),
            })?;
        let meta = file.metadata().map_err(io("inspect", &path))?;
        if !meta.is_file() {
            return Err(SavedError::NotRegular { path });
        }
        let mut bytes = Vec::new();
        file.take(MAX_SOURCE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(io("read", &path))?;
        if bytes.len() > MAX_SOURCE_BYTES {
            return Err(SavedError::BadSource {
                name: name.to_string(),
                why: format!("the stored file is larger than {MAX_SOURCE_BYTES} bytes"),
            });
        }
        String::from_utf8(bytes).map_err(|_| SavedError::BadSource {
            name: name.to_string(),
            why: "the stored file is not UTF-8".into(),
        })
    }

    /// Writes `source` as `name`: a fresh file (`replace` false: fails if
    /// anything holds the name) or a replacement, atomically either way.
    pub fn write(&self, name: &str, source: &str, replace: bool) -> Result<FileId, SavedError> {
        let dest = self.path(name);
        let tmp = self.dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = write_new_file(&tmp, source.as_bytes());
        let placed = written.and_then(|file| {
            if replace {
                std::fs::rename(&tmp, &dest).map_err(io("replace", &dest))?;
            } else {
                // link(2) never replaces: if another writer took the name
                // since the caller looked, this fails instead.
                std::fs::hard_link(&tmp, &dest).map_err(|e| {
                    if e.kind() == ErrorKind::AlreadyExists {
                        SavedError::NotOwner {
                            name: name.to_string(),
                        }
                    } else {
                        io("create", &dest)(e)
                    }
                })?;
                std::fs::remove_file(&tmp).map_err(io("remove", &tmp))?;
            }
            // Read through the open file, after linking and renaming (both
            // change its status-change time), so the identity is final.
            let meta = file.metadata().map_err(io("inspect", &dest))?;
            Ok(FileId::of(&meta))
        });
        if placed.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        placed
    }

    /// Removes `name` (the user's command). Unlinking never follows a link:
    /// a planted link goes, its target stays.
    pub fn remove(&self, name: &str) -> Result<(), SavedError> {
        check_name(name)?;
        let path = self.path(name);
        std::fs::remove_file(&path).map_err(|e| match e.kind() {
            ErrorKind::NotFound => SavedError::NotFound {
                name: name.to_string(),
            },
            _ => io("remove", &path)(e),
        })
    }
}

/// Creates `path` (which must not exist, not even as a link), writes
/// `bytes`, makes it 0644 whatever the umask, and flushes it to disk.
fn write_new_file(path: &Path, bytes: &[u8]) -> Result<std::fs::File, SavedError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(TOOL_FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(io("create", path))?;
    file.set_permissions(Permissions::from_mode(TOOL_FILE_MODE))
        .map_err(io("set the mode of", path))?;
    file.write_all(bytes).map_err(io("write", path))?;
    file.sync_all().map_err(io("write", path))?;
    Ok(file)
}

/// Sets an existing tools directory to 0755 through a descriptor opened
/// without following links, so a link swapped in cannot redirect it.
fn tighten_dir(dir: &Path) -> Result<(), SavedError> {
    let handle: File = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(dir)
        .map_err(io("open", dir))?;
    handle
        .set_permissions(Permissions::from_mode(TOOLS_DIR_MODE))
        .map_err(io("set the mode of", dir))?;
    tracing::info!(
        "saved tools: {} was writable by others; it is 0755 now",
        sanitize_for_terminal(&dir.display().to_string())
    );
    Ok(())
}
