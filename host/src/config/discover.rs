//! Walking the sources in precedence order and merging what they define:
//! first definition of a name wins, problems are collected, not fatal.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::error::{ConfigError, ConfigErrorKind};
use super::expand::Expander;
use super::parse::{extract, read_document, FileReport, Select};
use super::sources::{default_sources, Kind};
use super::{
    is_self_server, ConfigProblem, Discovery, DiscoveryContext, SkipReason, SkippedServer,
    SERVERS_CONFIG_ENV,
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
    for path in &ctx.explicit {
        walk.source(&ctx.cwd.join(path), Kind::File, "--config", true);
    }
    if let Some(path) = &ctx.env_config {
        walk.source(&ctx.cwd.join(path), Kind::File, SERVERS_CONFIG_ENV, true);
    }
    if ctx.scan_default_locations {
        for source in default_sources(
            ctx.home.as_deref(),
            ctx.scan_project_locations.then_some(ctx.cwd.as_path()),
        ) {
            walk.source(&source.path, source.kind, source.name, false);
        }
    }
    tracing::debug!(
        servers = walk.out.servers.len(),
        problems = walk.out.problems.len(),
        skipped = walk.out.skipped.len(),
        "MCP server discovery done"
    );
    walk.out
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
    fn source(&mut self, path: &Path, kind: Kind, name: &str, required: bool) {
        match kind {
            // `--config DIR` reads the directory like a default folder source.
            Kind::File if required && path.is_dir() => self.dir(path, name),
            Kind::File => self.file(path, Select::Auto, name, required),
            Kind::ClaudeProject => {
                let cwd = self.ctx.cwd.clone();
                self.file(path, Select::ClaudeProject(&cwd), name, required);
            }
            Kind::Dir if path.is_dir() => self.dir(path, name),
            Kind::Dir if required => self.problem(path, ConfigErrorKind::Missing),
            Kind::Dir => {}
        }
    }

    fn dir(&mut self, dir: &Path, name: &str) {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => return self.problem(dir, ConfigErrorKind::Read(e)),
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| {
                let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                DIR_EXTENSIONS.contains(&ext) && path.is_file()
            })
            .collect();
        files.sort();
        for file in files {
            let file_name = file.file_name().unwrap_or_default().to_string_lossy();
            let label = format!("{name} ({file_name})");
            self.file(&file, Select::Auto, &label, false);
        }
    }

    fn file(&mut self, path: &Path, select: Select<'_>, name: &str, required: bool) {
        let identity = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let project = matches!(select, Select::ClaudeProject(_));
        if !self.visited.insert((identity, project)) {
            return;
        }
        let doc = match read_document(path) {
            Ok(doc) => doc,
            Err(ConfigError {
                kind: ConfigErrorKind::Missing,
                ..
            }) if !required => return,
            Err(e) => return self.problem(path, e.kind),
        };
        let expander = Expander::for_file(path, self.ctx.home.clone(), self.env);
        match extract(path, &doc, select, name, &expander) {
            Ok(Some(report)) => self.merge(path, report),
            Ok(None) if required => self.problem(path, ConfigErrorKind::NoServerTable),
            Ok(None) => {}
            Err(kind) => self.problem(path, kind),
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
