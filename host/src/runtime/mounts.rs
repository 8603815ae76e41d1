//! User-chosen mounts (`--mount HOST:SANDBOX[:ro|rw]`). Only the person who
//! starts codemode picks them; the model cannot. Paths are validated so a
//! mount cannot expose the whole host or codemode's own state.

use std::path::{Path, PathBuf};

/// A host path visible inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub host: PathBuf,
    pub sandbox: PathBuf,
    pub writable: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MountError {
    #[error("mount {0:?}: expected HOST:SANDBOX[:ro|rw]")]
    Shape(String),
    #[error("mount {spec:?}: mode must be ro or rw, got {mode:?}")]
    Mode { spec: String, mode: String },
    #[error("mount {spec:?}: host path {path} does not exist")]
    Missing { spec: String, path: PathBuf },
    #[error("mount {spec:?}: sandbox path must be absolute, got {path}")]
    Relative { spec: String, path: PathBuf },
    #[error("mount {spec:?}: refusing to mount {path}: {why}")]
    Refused {
        spec: String,
        path: PathBuf,
        why: &'static str,
    },
}

/// Sandbox paths the sandbox itself needs; a user mount may not cover them.
const RESERVED_SANDBOX: &[&str] = &[
    "/",
    "/usr",
    "/lib",
    "/lib64",
    "/bin",
    "/etc",
    "/proc",
    "/dev",
    "/tmp",
    "/tools",
    "/opt/codemode",
];

/// Parses and validates one `--mount` value. `protected` lists host paths
/// (state dir, codemode's binaries) that may not be mounted or contain a mount.
pub fn parse_mount(spec: &str, protected: &[PathBuf]) -> Result<Mount, MountError> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (host, sandbox, mode) = match parts.as_slice() {
        [h, s] => (*h, *s, "ro"),
        [h, s, m] => (*h, *s, *m),
        _ => return Err(MountError::Shape(spec.to_string())),
    };
    if host.is_empty() || sandbox.is_empty() {
        return Err(MountError::Shape(spec.to_string()));
    }
    let writable = match mode {
        "ro" => false,
        "rw" => true,
        other => {
            return Err(MountError::Mode {
                spec: spec.to_string(),
                mode: other.to_string(),
            })
        }
    };
    let host = Path::new(host)
        .canonicalize()
        .map_err(|_| MountError::Missing {
            spec: spec.to_string(),
            path: PathBuf::from(host),
        })?;
    let sandbox = PathBuf::from(sandbox);
    if !sandbox.is_absolute() {
        return Err(MountError::Relative {
            spec: spec.to_string(),
            path: sandbox,
        });
    }
    if host == Path::new("/") {
        return Err(MountError::Refused {
            spec: spec.to_string(),
            path: host,
            why: "the host's root would expose every file",
        });
    }
    for p in protected {
        let p = p.canonicalize().unwrap_or_else(|_| p.clone());
        if host.starts_with(&p) || p.starts_with(&host) {
            return Err(MountError::Refused {
                spec: spec.to_string(),
                path: host,
                why: "it contains or is inside codemode's own state or binaries",
            });
        }
    }
    if RESERVED_SANDBOX.iter().any(|r| sandbox == Path::new(r)) {
        return Err(MountError::Refused {
            spec: spec.to_string(),
            path: sandbox,
            why: "that sandbox path is reserved",
        });
    }
    Ok(Mount {
        host,
        sandbox,
        writable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_by_default_and_rw_on_request() {
        let dir = tempfile::tempdir().unwrap();
        let spec = format!("{}:/data", dir.path().display());
        let m = parse_mount(&spec, &[]).unwrap();
        assert!(!m.writable);
        assert_eq!(m.sandbox, PathBuf::from("/data"));
        let m = parse_mount(&format!("{spec}:rw"), &[]).unwrap();
        assert!(m.writable);
    }

    #[test]
    fn refuses_root_state_dir_reserved_and_bad_shapes() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            parse_mount("/:/host", &[]),
            Err(MountError::Refused { .. })
        ));
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        let spec = format!("{}:/x", dir.path().display());
        assert!(matches!(
            parse_mount(&spec, &[state]),
            Err(MountError::Refused { .. })
        ));
        let spec = format!("{}:/usr", dir.path().display());
        assert!(matches!(
            parse_mount(&spec, &[]),
            Err(MountError::Refused { .. })
        ));
        assert!(matches!(
            parse_mount("justone", &[]),
            Err(MountError::Shape(_))
        ));
        let spec = format!("{}:/x:rx", dir.path().display());
        assert!(matches!(
            parse_mount(&spec, &[]),
            Err(MountError::Mode { .. })
        ));
        assert!(matches!(
            parse_mount("/nonexistent-xyz:/x", &[]),
            Err(MountError::Missing { .. })
        ));
        let spec = format!("{}:rel", dir.path().display());
        assert!(matches!(
            parse_mount(&spec, &[]),
            Err(MountError::Relative { .. })
        ));
    }
}
