//! A staging tree that mirrors chosen host paths at the same absolute paths.
//!
//! Every symlink met while resolving a host path (including directory links
//! such as Debian's `/lib -> usr/lib`) is recreated as a symlink and its
//! target staged too, so the loader and Python find files under the names
//! they ask for. Files keep their permission bits, minus setuid/setgid.

use std::collections::{BTreeSet, VecDeque};
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use super::elf::is_elf;
use super::error::ImageError;

/// Symlinks followed while resolving one path before giving up (Linux uses 40).
const MAX_SYMLINKS: usize = 40;
/// No setuid, setgid or sticky bits come from the host.
const MODE_MASK: u32 = 0o777;

/// The staging tree (`rootfs/`) and what has gone into it.
pub(crate) struct Rootfs {
    root: PathBuf,
    /// Regular files and symlinks created, for the build summary.
    entries: usize,
    /// Real host paths of the ELF files copied so far, for `ldd`.
    elves: BTreeSet<PathBuf>,
}

impl Rootfs {
    /// Creates `root` (mode 0755: `COPY rootfs/ /` carries it onto `/`).
    pub(crate) fn create(root: &Path) -> Result<Self, ImageError> {
        fs::create_dir_all(root).map_err(ImageError::io("create", root))?;
        set_mode(root, 0o755)?;
        Ok(Self {
            root: root.to_path_buf(),
            entries: 0,
            elves: BTreeSet::new(),
        })
    }

    /// Files and symlinks staged.
    pub(crate) fn entries(&self) -> usize {
        self.entries
    }

    /// Real host paths of every ELF file staged.
    pub(crate) fn elves(&self) -> &BTreeSet<PathBuf> {
        &self.elves
    }

    /// Where the absolute path `abs` lands in the staging tree.
    pub(crate) fn dest(&self, abs: &Path) -> PathBuf {
        self.root.join(abs.strip_prefix("/").unwrap_or(abs))
    }

    /// Stages one host path (a file, or a directory without its contents)
    /// with all symlinks on the way; returns its real host path.
    pub(crate) fn stage_path(&mut self, abs: &Path) -> Result<PathBuf, ImageError> {
        let mut pending: VecDeque<OsString> = normal_components(abs);
        let mut real = PathBuf::from("/");
        let mut links = 0;
        while let Some(name) = pending.pop_front() {
            if name == ".." {
                real.pop();
                continue;
            }
            let candidate = real.join(&name);
            let meta = fs::symlink_metadata(&candidate)
                .map_err(ImageError::io("inspect", candidate.clone()))?;
            if meta.file_type().is_symlink() {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(ImageError::SymlinkLoop {
                        path: abs.to_path_buf(),
                    });
                }
                let target = fs::read_link(&candidate)
                    .map_err(ImageError::io("read the symlink", candidate.clone()))?;
                self.add_symlink(&candidate, &target)?;
                if target.is_absolute() {
                    real = PathBuf::from("/");
                }
                for part in normal_components(&target).into_iter().rev() {
                    pending.push_front(part);
                }
            } else if meta.is_dir() {
                self.add_dir(&candidate, meta.permissions().mode())?;
                real = candidate;
            } else if pending.is_empty() && meta.is_file() {
                self.add_file(&candidate, meta.permissions().mode())?;
                real = candidate;
            } else {
                let what = if pending.is_empty() {
                    "regular file"
                } else {
                    "directory"
                };
                return Err(ImageError::Io {
                    action: "stage",
                    path: abs.to_path_buf(),
                    source: std::io::Error::other(format!(
                        "{} is not a {what}",
                        candidate.display()
                    )),
                });
            }
        }
        Ok(real)
    }

    /// Creates a directory in the tree with an explicit mode (e.g. 1777 for /tmp).
    pub(crate) fn add_dir_with_mode(&mut self, abs: &Path, mode: u32) -> Result<(), ImageError> {
        let dest = self.dest(abs);
        fs::create_dir_all(&dest).map_err(ImageError::io("create", dest.clone()))?;
        set_mode(&dest, mode)
    }

    /// Writes a generated file into the tree.
    pub(crate) fn write_file(&mut self, abs: &Path, contents: &[u8]) -> Result<(), ImageError> {
        let dest = self.dest(abs);
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent).map_err(ImageError::io("create", parent))?;
        }
        fs::write(&dest, contents).map_err(ImageError::io("write", dest.clone()))?;
        set_mode(&dest, 0o644)?;
        self.entries += 1;
        Ok(())
    }

    /// Copies a host file to an arbitrary path in the tree (the guest binary).
    pub(crate) fn copy_to(&mut self, host: &Path, abs: &Path, mode: u32) -> Result<(), ImageError> {
        let dest = self.dest(abs);
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent).map_err(ImageError::io("create", parent))?;
        }
        copy_file(host, &dest, mode)?;
        self.entries += 1;
        if is_elf(host) {
            let real = fs::canonicalize(host).map_err(ImageError::io("resolve", host))?;
            self.elves.insert(real);
        }
        Ok(())
    }

    /// Takes in a tree something else wrote straight into the staging tree
    /// at `abs` (pip): counts its files and records its ELF files, which
    /// are already in place (their own libraries may be too).
    pub(crate) fn adopt_tree(&mut self, abs: &Path) -> Result<(), ImageError> {
        let mut pending = vec![self.dest(abs)];
        while let Some(dir) = pending.pop() {
            let entries = fs::read_dir(&dir).map_err(ImageError::io("list", dir.clone()))?;
            for entry in entries {
                let entry = entry.map_err(ImageError::io("list", dir.clone()))?;
                let kind = entry
                    .file_type()
                    .map_err(ImageError::io("inspect", entry.path()))?;
                if kind.is_dir() {
                    pending.push(entry.path());
                } else {
                    self.entries += 1;
                    if kind.is_file() && is_elf(&entry.path()) {
                        self.elves.insert(entry.path());
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether `path` lies inside the staging tree itself.
    pub(crate) fn holds(&self, path: &Path) -> bool {
        path.starts_with(&self.root)
    }

    fn add_dir(&mut self, host: &Path, mode: u32) -> Result<(), ImageError> {
        let dest = self.dest(host);
        if fs::symlink_metadata(&dest).is_ok() {
            return Ok(());
        }
        fs::create_dir(&dest).map_err(ImageError::io("create", dest.clone()))?;
        // At least owner-writable so staging can fill it; 0755 for the image.
        set_mode(&dest, (mode & MODE_MASK) | 0o700)
    }

    fn add_file(&mut self, host: &Path, mode: u32) -> Result<(), ImageError> {
        let dest = self.dest(host);
        if fs::symlink_metadata(&dest).is_ok() {
            return Ok(());
        }
        copy_file(host, &dest, mode & MODE_MASK)?;
        self.entries += 1;
        if is_elf(&dest) {
            self.elves.insert(host.to_path_buf());
        }
        Ok(())
    }

    fn add_symlink(&mut self, host: &Path, target: &Path) -> Result<(), ImageError> {
        let dest = self.dest(host);
        if fs::symlink_metadata(&dest).is_ok() {
            return Ok(());
        }
        symlink(target, &dest).map_err(ImageError::io("create the symlink", dest.clone()))?;
        self.entries += 1;
        Ok(())
    }
}

/// The path's components as names, `..` kept for lexical resolution.
fn normal_components(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// Copies contents, sets `mode` and keeps the modification time: CPython
/// trusts a `__pycache__` entry only while its source's mtime matches, and on
/// a read-only root a stale cache means recompiling on every import.
fn copy_file(host: &Path, dest: &Path, mode: u32) -> Result<(), ImageError> {
    let modified = fs::metadata(host)
        .and_then(|meta| meta.modified())
        .map_err(ImageError::io("read the mtime of", host))?;
    fs::copy(host, dest).map_err(ImageError::io("copy", host))?;
    fs::File::options()
        .write(true)
        .open(dest)
        .and_then(|file| file.set_times(fs::FileTimes::new().set_modified(modified)))
        .map_err(ImageError::io("set the mtime of", dest))?;
    set_mode(dest, mode)
}

fn set_mode(path: &Path, mode: u32) -> Result<(), ImageError> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(ImageError::io("set the mode of", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_on_the_way_are_recreated_and_their_targets_staged() {
        let host = tempfile::tempdir().unwrap();
        let h = host.path();
        fs::create_dir_all(h.join("usr/lib/real")).unwrap();
        fs::write(h.join("usr/lib/real/libx.so.1.2"), b"x").unwrap();
        symlink("libx.so.1.2", h.join("usr/lib/real/libx.so.1")).unwrap();
        symlink("usr/lib", h.join("lib")).unwrap();
        symlink(h.join("usr/lib/real"), h.join("usr/lib/alias")).unwrap();

        let out = tempfile::tempdir().unwrap();
        let mut rootfs = Rootfs::create(&out.path().join("rootfs")).unwrap();
        let real = rootfs.stage_path(&h.join("lib/alias/libx.so.1")).unwrap();
        assert_eq!(real, h.join("usr/lib/real/libx.so.1.2"));

        let d = |p: &str| rootfs.dest(&h.join(p));
        assert_eq!(fs::read_link(d("lib")).unwrap(), Path::new("usr/lib"));
        assert_eq!(
            fs::read_link(d("usr/lib/alias")).unwrap(),
            h.join("usr/lib/real")
        );
        assert_eq!(
            fs::read_link(d("usr/lib/real/libx.so.1")).unwrap(),
            Path::new("libx.so.1.2")
        );
        assert_eq!(fs::read(d("usr/lib/real/libx.so.1.2")).unwrap(), b"x");
        // Three symlinks and one file.
        assert_eq!(rootfs.entries(), 4);
    }

    #[test]
    fn an_adopted_tree_is_counted_and_its_elf_files_recorded() {
        let out = tempfile::tempdir().unwrap();
        let mut rootfs = Rootfs::create(&out.path().join("rootfs")).unwrap();
        let site = Path::new("/usr/lib/codemode/site-packages");
        let dir = rootfs.dest(&site.join("pkg"));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("m.py"), b"m").unwrap();
        fs::write(dir.join("_ext.so"), b"\x7fELF rest").unwrap();
        rootfs.adopt_tree(site).unwrap();
        assert_eq!(rootfs.entries(), 2);
        assert!(rootfs.elves().contains(&dir.join("_ext.so")));
        assert!(rootfs.holds(&dir.join("_ext.so")));
        assert!(!rootfs.holds(Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6")));
    }

    #[test]
    fn symlink_loops_are_an_error_not_a_hang() {
        let host = tempfile::tempdir().unwrap();
        let h = host.path();
        symlink("b", h.join("a")).unwrap();
        symlink("a", h.join("b")).unwrap();
        let out = tempfile::tempdir().unwrap();
        let mut rootfs = Rootfs::create(&out.path().join("rootfs")).unwrap();
        let err = rootfs.stage_path(&h.join("a")).unwrap_err();
        assert!(matches!(err, ImageError::SymlinkLoop { .. }), "{err}");
    }
}
