//! User-chosen mounts (`--mount HOST:SANDBOX[:ro|rw]`). Only the person who
//! starts codemode picks them; the model cannot. Paths are validated so a
//! mount cannot expose the whole host or codemode's own state, and so a
//! cell cannot write where MCP server configs are read: a config it planted
//! there would name a program started on the host.

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
    #[error(
        "mount {spec:?}: refusing to mount {path} writable: it covers {covered}, {what}; \
         a cell could plant a server config there. Mount it ro{alternative}"
    )]
    CoversConfig {
        spec: String,
        path: PathBuf,
        covered: PathBuf,
        what: &'static str,
        alternative: &'static str,
    },
}

/// Host paths mounts must keep clear of.
#[derive(Debug, Clone, Default)]
pub struct MountGuard {
    /// codemode's state and binaries: not mounted at all, nor anything
    /// inside or around them.
    pub protected: Vec<PathBuf>,
    /// Config locations of the user (`--config`, `$HOME`'s): no writable
    /// mount may cover them.
    pub user_configs: Vec<PathBuf>,
    /// Config locations in the working directory (none when project configs
    /// are ignored): no writable mount may cover them.
    pub project_configs: Vec<PathBuf>,
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

/// Parses and validates one `--mount` value against `guard`.
pub fn parse_mount(spec: &str, guard: &MountGuard) -> Result<Mount, MountError> {
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
    for p in &guard.protected {
        let p = p.canonicalize().unwrap_or_else(|_| p.clone());
        if host.starts_with(&p) || p.starts_with(&host) {
            return Err(MountError::Refused {
                spec: spec.to_string(),
                path: host,
                why: "it contains or is inside codemode's own state or binaries",
            });
        }
    }
    if writable {
        let kinds = [
            (
                &guard.project_configs,
                "a project config location",
                ", or run codemode with --no-project-configs",
            ),
            (
                &guard.user_configs,
                "an MCP config location of the user",
                "",
            ),
        ];
        for (locations, what, alternative) in kinds {
            let covered: Vec<PathBuf> = locations
                .iter()
                .map(|l| resolve(l))
                .filter(|l| covers(&host, l))
                .collect();
            // Name a config that is there, when one is: that is the one the
            // user will recognize.
            let shown = covered.iter().find(|l| l.exists()).or(covered.first());
            if let Some(covered) = shown.cloned() {
                return Err(MountError::CoversConfig {
                    spec: spec.to_string(),
                    path: host,
                    covered,
                    what,
                    alternative,
                });
            }
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

/// Whether a writable mount of `host` lets a cell write `location`: it is
/// the location, holds it, or lies inside a config folder.
fn covers(host: &Path, location: &Path) -> bool {
    location.starts_with(host) || host.starts_with(location)
}

/// `path` with its longest existing prefix resolved (symlinks followed),
/// so a location that does not exist yet, but that a cell could create,
/// still compares equal to the canonical mount path above it.
fn resolve(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(found) = existing.canonicalize() {
            return missing.iter().rev().fold(found, |acc, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name);
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> MountGuard {
        MountGuard::default()
    }

    fn protecting(state: PathBuf) -> MountGuard {
        MountGuard {
            protected: vec![state],
            ..MountGuard::default()
        }
    }

    /// A project directory holding `.mcp.json`, and a home with a config folder.
    fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let project = root.join("project");
        std::fs::create_dir_all(project.join("src")).unwrap();
        std::fs::write(project.join(".mcp.json"), "{}").unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        (dir, project, home)
    }

    #[test]
    fn a_writable_mount_covering_project_configs_is_refused() {
        let (_dir, project, home) = tree();
        let guard = MountGuard {
            project_configs: vec![project.join(".mcp.json"), project.join("mcp-servers")],
            user_configs: vec![home.join(".cursor/mcp.json")],
            ..MountGuard::default()
        };
        let rw = format!("{}:/work:rw", project.display());
        let err = parse_mount(&rw, &guard).unwrap_err();
        assert!(matches!(err, MountError::CoversConfig { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&project.join(".mcp.json").display().to_string()),
            "{text}"
        );
        assert!(text.contains("Mount it ro"), "{text}");
        assert!(text.contains("--no-project-configs"), "{text}");
        // A location that does not exist yet is covered all the same.
        let folder = format!("{}:/w:rw", project.join("mcp-servers").display());
        std::fs::create_dir(project.join("mcp-servers")).unwrap();
        assert!(parse_mount(&folder, &guard).is_err());
        // Read-only stays allowed, and so does a sibling that covers nothing.
        assert!(
            !parse_mount(&format!("{}:/work", project.display()), &guard)
                .unwrap()
                .writable
        );
        let src = format!("{}:/src:rw", project.join("src").display());
        assert!(parse_mount(&src, &guard).unwrap().writable);
    }

    #[test]
    fn without_project_configs_the_project_may_be_mounted_writable() {
        let (_dir, project, home) = tree();
        let guard = MountGuard {
            project_configs: Vec::new(),
            user_configs: vec![home.join(".cursor/mcp.json")],
            ..MountGuard::default()
        };
        let rw = format!("{}:/work:rw", project.display());
        assert!(parse_mount(&rw, &guard).unwrap().writable);
    }

    #[test]
    fn a_writable_mount_covering_user_configs_is_refused() {
        let (_dir, _project, home) = tree();
        let guard = MountGuard {
            user_configs: vec![home.join(".cursor/mcp.json")],
            ..MountGuard::default()
        };
        let err = parse_mount(&format!("{}:/h:rw", home.display()), &guard).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(".cursor/mcp.json"), "{text}");
        assert!(!text.contains("--no-project-configs"), "{text}");
        assert!(parse_mount(&format!("{}:/h", home.display()), &guard).is_ok());
    }

    #[test]
    fn any_mount_covering_the_state_dir_is_refused() {
        let (_dir, project, _home) = tree();
        let state = project.join("src/state");
        std::fs::create_dir(&state).unwrap();
        for mode in ["ro", "rw"] {
            let spec = format!("{}:/x:{mode}", project.join("src").display());
            assert!(matches!(
                parse_mount(&spec, &protecting(state.clone())),
                Err(MountError::Refused { .. })
            ));
        }
    }

    #[test]
    fn read_only_by_default_and_rw_on_request() {
        let dir = tempfile::tempdir().unwrap();
        let spec = format!("{}:/data", dir.path().display());
        let m = parse_mount(&spec, &none()).unwrap();
        assert!(!m.writable);
        assert_eq!(m.sandbox, PathBuf::from("/data"));
        let m = parse_mount(&format!("{spec}:rw"), &none()).unwrap();
        assert!(m.writable);
    }

    #[test]
    fn refuses_root_state_dir_reserved_and_bad_shapes() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            parse_mount("/:/host", &none()),
            Err(MountError::Refused { .. })
        ));
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        let spec = format!("{}:/x", dir.path().display());
        assert!(matches!(
            parse_mount(&spec, &protecting(state)),
            Err(MountError::Refused { .. })
        ));
        let spec = format!("{}:/usr", dir.path().display());
        assert!(matches!(
            parse_mount(&spec, &none()),
            Err(MountError::Refused { .. })
        ));
        assert!(matches!(
            parse_mount("justone", &none()),
            Err(MountError::Shape(_))
        ));
        let spec = format!("{}:/x:rx", dir.path().display());
        assert!(matches!(
            parse_mount(&spec, &none()),
            Err(MountError::Mode { .. })
        ));
        assert!(matches!(
            parse_mount("/nonexistent-xyz:/x", &none()),
            Err(MountError::Missing { .. })
        ));
        let spec = format!("{}:rel", dir.path().display());
        assert!(matches!(
            parse_mount(&spec, &none()),
            Err(MountError::Relative { .. })
        ));
    }
}
