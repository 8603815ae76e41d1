//! Walking the sources in precedence order and merging what they define:
//! first definition of a name wins, user scope before project scope,
//! project files only as approved; problems are collected, not fatal.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::error::{ConfigError, ConfigErrorKind};
use super::expand::Expander;
use super::parse::{extract, parse_document, read_bytes, FileReport, Select};
use super::sources::{default_sources, Kind, Scope};
use super::trust::TrustStatus;
use super::{
    is_self_server, ConfigProblem, Discovery, DiscoveryContext, SkipReason, SkippedServer,
    UntrustedServer, SERVERS_CONFIG_ENV,
};

/// Extensions read from a directory source.
const DIR_EXTENSIONS: &[&str] = &["json", "jsonc", "toml"];

/// Finds every server the context's sources define; see the module docs
/// for the order and what counts as a problem.
pub fn discover(ctx: &DiscoveryContext) -> Discovery {
    let host_env = |name: &str| std::env::var(name).ok();
    let mut walk = Walk {
        ctx,
        env: &host_env,
        out: Discovery::default(),
        visited: HashSet::new(),
    };
    if let Some(problem) = ctx.trust.problem() {
        walk.out.problems.push(ConfigProblem {
            path: PathBuf::from(super::TRUST_FILE),
            message: format!("{problem}; every project config is untrusted"),
        });
    }
    for path in &ctx.explicit {
        walk.source(
            &ctx.cwd.join(path),
            Kind::File,
            "--config",
            true,
            Scope::User,
        );
    }
    if let Some(path) = &ctx.env_config {
        let path = ctx.cwd.join(path);
        walk.source(&path, Kind::File, SERVERS_CONFIG_ENV, true, Scope::User);
    }
    if ctx.scan_default_locations {
        let sources = default_sources(
            ctx.home.as_deref(),
            ctx.scan_project_locations.then_some(ctx.cwd.as_path()),
        );
        // Every user-scope source before any project one: a project file
        // must not take a name the user defined, whatever the list order.
        for scope in [Scope::User, Scope::Project] {
            for source in sources.iter().filter(|s| s.scope == scope) {
                walk.source(&source.path, source.kind, source.name, false, scope);
            }
        }
    }
    tracing::debug!(
        servers = walk.out.servers.len(),
        problems = walk.out.problems.len(),
        skipped = walk.out.skipped.len(),
        untrusted = walk.out.untrusted.len(),
        "MCP server discovery done"
    );
    walk.out
}

/// Where configs are read from, for keeping writable mounts away.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigLocations {
    /// `--config`, `MCP_SERVERS_CONFIG` and the `$HOME` locations.
    pub user: Vec<PathBuf>,
    /// The working-directory locations (empty when they are not scanned).
    pub project: Vec<PathBuf>,
}

/// Every file or folder `discover` would read for `ctx`, existing or not.
pub fn config_locations(ctx: &DiscoveryContext) -> ConfigLocations {
    let mut out = ConfigLocations::default();
    out.user.extend(
        ctx.explicit
            .iter()
            .chain(&ctx.env_config)
            .map(|p| ctx.cwd.join(p)),
    );
    if ctx.scan_default_locations {
        let cwd = ctx.scan_project_locations.then_some(ctx.cwd.as_path());
        for source in default_sources(ctx.home.as_deref(), cwd) {
            let list = match source.scope {
                Scope::User => &mut out.user,
                Scope::Project => &mut out.project,
            };
            if !list.contains(&source.path) {
                list.push(source.path);
            }
        }
    }
    out
}

/// The project config files that exist under `cwd`, in precedence order.
pub fn project_files(cwd: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for source in default_sources(None, Some(cwd)) {
        match source.kind {
            Kind::Dir => files.extend(dir_files(&source.path).unwrap_or_default()),
            Kind::File | Kind::ClaudeProject if source.path.is_file() => files.push(source.path),
            Kind::File | Kind::ClaudeProject => {}
        }
    }
    files
}

/// A folder source's config files, in name order.
fn dir_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            DIR_EXTENSIONS.contains(&ext) && path.is_file()
        })
        .collect();
    files.sort();
    Ok(files)
}

struct Walk<'a> {
    ctx: &'a DiscoveryContext,
    env: &'a dyn Fn(&str) -> Option<String>,
    out: Discovery,
    /// Files already read with a given selection: the same file can be
    /// reached twice (`--config ~/.cursor/mcp.json`, or cwd == home), and
    /// reading it again would only report its servers as shadowing
    /// themselves and its errors twice.
    visited: HashSet<(PathBuf, bool)>,
}

impl Walk<'_> {
    /// `required` sources report a missing file or a file without servers.
    fn source(&mut self, path: &Path, kind: Kind, name: &str, required: bool, scope: Scope) {
        match kind {
            // `--config DIR` reads the directory like a default folder source.
            Kind::File if required && path.is_dir() => self.dir(path, name, scope),
            Kind::File => self.file(path, Select::Auto, name, required, scope),
            Kind::ClaudeProject => {
                let cwd = self.ctx.cwd.clone();
                self.file(path, Select::ClaudeProject(&cwd), name, required, scope);
            }
            Kind::Dir if path.is_dir() => self.dir(path, name, scope),
            Kind::Dir if required => self.problem(path, ConfigErrorKind::Missing),
            Kind::Dir => {}
        }
    }

    fn dir(&mut self, dir: &Path, name: &str, scope: Scope) {
        let files = match dir_files(dir) {
            Ok(files) => files,
            Err(e) => return self.problem(dir, ConfigErrorKind::Read(e)),
        };
        for file in files {
            let file_name = file.file_name().unwrap_or_default().to_string_lossy();
            let label = format!("{name} ({file_name})");
            self.file(&file, Select::Auto, &label, false, scope);
        }
    }

    fn file(&mut self, path: &Path, select: Select<'_>, name: &str, required: bool, scope: Scope) {
        let identity = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let project = matches!(select, Select::ClaudeProject(_));
        if !self.visited.insert((identity.clone(), project)) {
            return;
        }
        let bytes = match read_bytes(path) {
            Ok(bytes) => bytes,
            Err(ConfigError {
                kind: ConfigErrorKind::Missing,
                ..
            }) if !required => return,
            Err(e) => return self.problem(path, e.kind),
        };
        // Decided on the very bytes that are parsed next: a file swapped
        // after the check cannot slip in.
        let status = match scope {
            Scope::User => TrustStatus::Trusted,
            Scope::Project => self.ctx.trust.status(&identity, &bytes),
        };
        let doc = match parse_document(path, &bytes) {
            Ok(doc) => doc,
            Err(e) => return self.problem(path, e.kind),
        };
        let expander = match status {
            TrustStatus::Trusted => Expander::for_file(path, self.ctx.home.clone(), self.env),
            TrustStatus::Untrusted | TrustStatus::Changed => Expander::inert(),
        };
        match extract(path, &doc, select, name, &expander) {
            Ok(Some(report)) if status == TrustStatus::Trusted => self.merge(path, report),
            Ok(Some(report)) => self.hold(path, report, status == TrustStatus::Changed),
            Ok(None) if required => self.problem(path, ConfigErrorKind::NoServerTable),
            Ok(None) => {}
            Err(kind) => self.problem(path, kind),
        }
    }

    /// An unapproved file's servers: listed as untrusted, claiming no name.
    fn hold(&mut self, path: &Path, report: FileReport, changed: bool) {
        let FileReport {
            servers,
            invalid,
            skipped,
        } = report;
        // Bad entries and remote or disabled ones are reported as usual.
        let rest = FileReport {
            servers: Vec::new(),
            invalid,
            skipped,
        };
        self.merge(path, rest);
        for server in servers {
            if let Some(first) = self.out.servers.get(&server.name) {
                let by = first.source.clone();
                self.skip(SkippedServer {
                    name: server.name,
                    source: server.source,
                    source_name: server.source_name,
                    reason: SkipReason::Shadowed { by },
                });
                continue;
            }
            tracing::debug!(
                server = %server.name,
                source = %server.source.display(),
                "MCP server from an unapproved project file"
            );
            let mut command = vec![server.command];
            command.extend(server.args);
            self.out.untrusted.push(UntrustedServer {
                name: server.name,
                command,
                description: server.description,
                source: server.source,
                source_name: server.source_name,
                changed,
            });
        }
    }

    fn merge(&mut self, path: &Path, report: FileReport) {
        for bad in report.invalid {
            let kind = ConfigErrorKind::Entry {
                server: bad.server,
                error: bad.error,
            };
            self.problem(path, kind);
        }
        for skipped in report.skipped {
            self.skip(skipped);
        }
        for server in report.servers {
            let reason = if !self.ctx.allow_self && is_self_server(&server) {
                Some(SkipReason::SelfReference)
            } else {
                self.out
                    .servers
                    .get(&server.name)
                    .map(|first| SkipReason::Shadowed {
                        by: first.source.clone(),
                    })
            };
            if let Some(reason) = reason {
                self.skip(SkippedServer {
                    name: server.name,
                    source: server.source,
                    source_name: server.source_name,
                    reason,
                });
                continue;
            }
            tracing::debug!(
                server = %server.name,
                source = %server.source.display(),
                from = %server.source_name,
                "found MCP server"
            );
            self.out.servers.insert(server.name.clone(), server);
        }
    }

    fn skip(&mut self, skipped: SkippedServer) {
        if skipped.reason == SkipReason::SelfReference {
            tracing::info!("skipping MCP server {skipped}");
        } else {
            tracing::debug!("skipping MCP server {skipped}");
        }
        self.out.skipped.push(skipped);
    }

    fn problem(&mut self, path: &Path, kind: ConfigErrorKind) {
        self.out.problems.push(ConfigProblem {
            path: path.to_path_buf(),
            message: kind.to_string(),
        });
    }
}
