//! Which host user a sandbox runs as. The sandbox must never be host root:
//! under bubblewrap the sandbox uid maps to the uid that started bwrap, so
//! when codemode runs as root it starts bwrap as an unprivileged host user
//! (root-owned files in `/proc/sys` and setuid files on shared mounts were
//! the escapes this closes). Rootful podman maps `--user` one to one, so a
//! sandbox user of 0 is refused there.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The unprivileged host user bwrap runs as when codemode is root and the
/// configured sandbox user is root too.
pub const NOBODY: u32 = 65534;

/// A numeric `uid:gid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ids {
    pub uid: u32,
    pub gid: u32,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IdentityError {
    #[error("sandbox user {0:?}: expected numeric UID:GID, e.g. 65534:65534")]
    Shape(String),
    #[error("sandbox user {0:?} is root: under rootful podman/docker it would be host root; choose an unprivileged UID:GID such as 65534:65534")]
    Root(String),
}

impl Ids {
    /// Parses `uid:gid` (or a lone `uid`, whose gid is the same number).
    pub fn parse(text: &str) -> Result<Self, IdentityError> {
        let (u, g) = text.split_once(':').unwrap_or((text, text));
        let num = |s: &str| s.trim().parse::<u32>().ok();
        match (num(u), num(g)) {
            (Some(uid), Some(gid)) => Ok(Ids { uid, gid }),
            _ => Err(IdentityError::Shape(text.to_string())),
        }
    }
}

/// Whether this process runs as host root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The host user bubblewrap is started as: `None` keeps the caller's own
/// (an unprivileged caller already maps the sandbox to itself); as root,
/// the sandbox user when it is not root, else [`NOBODY`].
pub fn bwrap_host_ids(sandbox: Ids) -> Option<Ids> {
    if !is_root() {
        return None;
    }
    Some(if sandbox.uid == 0 {
        Ids {
            uid: NOBODY,
            gid: NOBODY,
        }
    } else {
        sandbox
    })
}

/// Checks the sandbox user of a container engine run as root.
pub fn check_oci_user(sandbox: Ids, text: &str) -> Result<(), IdentityError> {
    if sandbox.uid == 0 && is_root() {
        return Err(IdentityError::Root(text.to_string()));
    }
    Ok(())
}

/// Whether `ids` may reach `path` (every ancestor searchable) and has the
/// `want` permission bits on it (`0o4` read, `0o2` write, `0o1` execute),
/// judged by mode bits. bubblewrap resolves bind sources as the user it
/// runs as, so an unreachable source would fail every sandbox start.
pub fn reachable_by(path: &Path, ids: Ids, want: u32) -> bool {
    let allowed = |p: &Path, bits: u32| -> bool {
        let Ok(m) = std::fs::metadata(p) else {
            return false;
        };
        let mode = m.mode();
        let shift = if m.uid() == ids.uid {
            6
        } else if m.gid() == ids.gid {
            3
        } else {
            0
        };
        (mode >> shift) & bits == bits
    };
    let ancestors_ok = path
        .ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .all(|a| allowed(a, 0o1));
    ancestors_ok && allowed(path, want)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn parses_uid_gid_and_refuses_names() {
        assert_eq!(
            Ids::parse("65534:65534"),
            Ok(Ids {
                uid: 65534,
                gid: 65534
            })
        );
        assert_eq!(
            Ids::parse("1000"),
            Ok(Ids {
                uid: 1000,
                gid: 1000
            })
        );
        assert!(matches!(Ids::parse("nobody"), Err(IdentityError::Shape(_))));
    }

    #[test]
    fn reachability_follows_mode_bits() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner");
        std::fs::create_dir(&inner).unwrap();
        let file = inner.join("f");
        std::fs::write(&file, "x").unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let stranger = Ids {
            uid: 4_000_001,
            gid: 4_000_001,
        };
        assert!(reachable_by(&file, stranger, 0o4));
        assert!(!reachable_by(&file, stranger, 0o2));
        assert!(!reachable_by(&file, stranger, 0o1));
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(!reachable_by(&file, stranger, 0o4));
    }
}
