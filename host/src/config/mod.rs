//! MCP server config discovery: which servers codemode can proxy, read from
//! every place MCP clients keep their configs.
//!
//! # Precedence
//!
//! Sources are read in this order and **the first definition of a server
//! name wins**; a later definition of the same name is recorded in
//! [`Discovery::skipped`] as `shadowed by <path>`.
//!
//! 1. `--config FILE` files, in the order given.
//! 2. The file named by `MCP_SERVERS_CONFIG`.
//! 3. The default locations (unless `scan_default_locations` is off), in the reference bridge's
//!    order; `~` is `$HOME`, `./` is the working directory; on Linux each
//!    macOS `~/Library/Application Support/<App>` path is followed by its
//!    `~/.config/<app>` twin. The user-scope (`~`) locations are read first
//!    and the project-scope (`./`) ones after all of them, in this list's
//!    order (unless `scan_project_locations` is off): a project file never
//!    shadows a user-level definition.
//!    1. `~/MCPs/*.json`
//!    2. `~/.config/mcp/servers/*.json`
//!    3. `~/Library/Application Support/Claude Code/mcp/servers/*.json`,
//!       `~/.config/claude-code/mcp/servers/*.json`
//!    4. `~/Library/Application Support/Claude/mcp/servers/*.json`,
//!       `~/.config/Claude/mcp/servers/*.json`
//!    5. `./mcp-servers/*.json`
//!    6. Claude Code: `~/.claude.json` `projects.<cwd>.mcpServers` (local
//!       scope), `./.mcp.json` (project scope), `~/.claude.json`
//!       `mcpServers` (user scope)
//!    7. `~/Library/Application Support/Claude Code/claude_code_config.json`,
//!       `~/.config/claude-code/claude_code_config.json`
//!    8. `~/Library/Application Support/Claude/claude_code_config.json`,
//!       `~/.config/Claude/claude_code_config.json`
//!    9. Claude Desktop: `~/Library/Application Support/Claude/claude_desktop_config.json`,
//!       `~/.config/Claude/claude_desktop_config.json`
//!    10. `./claude_code_config.json`, `./claude_desktop_config.json`
//!    11. OpenCode: `~/.opencode.json`, `~/Library/Application Support/OpenCode/opencode_config.json`
//!        and its `~/.config/opencode/` twin, the same for
//!        `opencode_desktop_config.json`, `./opencode_config.json`,
//!        `./opencode_desktop_config.json`, `./opencode.json`, `./opencode.jsonc`,
//!        `~/.config/opencode/opencode.json`, `~/.config/opencode/opencode.jsonc`
//!    12. Gemini CLI: `./.gemini/settings.json`, `~/.gemini/settings.json`
//!    13. Codex: `./.codex/config.toml`, `~/.codex/config.toml`
//!    14. Cursor: `./.cursor/mcp.json`, `~/.cursor/mcp.json`
//!    15. Windsurf: `~/.codeium/windsurf/mcp_config.json`
//!    16. VS Code: `./.vscode/mcp.json`, then the user profile's `mcp.json`
//!        and `settings.json` (`mcp.servers`) under
//!        `~/Library/Application Support/Code/User/` and `~/.config/Code/User/`
//!    17. Antigravity: `~/.antigravity/settings.json`, `~/.antigravity/mcp.json`,
//!        `~/.gemini/antigravity/mcp_config.json`
//!    18. Zed: `./.zed/settings.json`, `~/.config/zed/settings.json` (`context_servers`)
//!
//! Only servers that load claim their name: a skipped or invalid entry
//! leaves it to the next source. A relative `--config` or
//! `MCP_SERVERS_CONFIG` path is relative to the working directory; a
//! `--config` directory is read like a folder source.
//!
//! # Trust
//!
//! A project-scope file is read with its exact bytes checked against the
//! [`TrustStore`] (`codemode trust`). Until the user approved those bytes,
//! its servers are [`Discovery::untrusted`]: listed, never in
//! [`Discovery::servers`] (so never started or offered to a sandbox), their
//! `${...}` never expanded, and they claim no name. `--config` and
//! `MCP_SERVERS_CONFIG` files and everything under `$HOME` (including
//! `~/.claude.json`'s table for this project, written by the client at the
//! user's request) are trusted as written.
//!
//! # Formats
//!
//! A folder source's `*.json`, `*.jsonc` and `*.toml` files are read in name
//! order. A file is TOML by its `.toml` extension, else JSON with comments
//! and trailing commas allowed (JSONC); files with another extension are
//! tried as JSON, then TOML. Its servers are found by key: `mcpServers`,
//! `servers` (VS Code), `mcp.servers` (VS Code settings), `mcp` (OpenCode),
//! `mcp_servers` (Codex) or `context_servers` (Zed). Each entry gives
//! `command`, `args`, `env`, `cwd` and `description` (the file's top-level
//! `description` otherwise). `${VAR}`, `${VAR:-default}`, `${env:VAR}`,
//! `${workspaceFolder}` and `${userHome}` in the command, args, env values
//! and cwd of trusted files expand from the host; unset or unknown ones
//! stay as written.
//!
//! # Failures
//!
//! A missing or broken `--config` / `MCP_SERVERS_CONFIG` file is a
//! [`ConfigProblem`]; a default location that does not exist is ignored, one
//! that exists but cannot be parsed is a problem. A server entry with a bad
//! shape is a problem naming the file and the server; the rest of the file
//! still loads. Remote (HTTP/SSE) entries, disabled entries and entries that
//! would launch codemode itself are [`SkippedServer`]s, not problems.
//! `discover` logs found servers at debug level and self-references at info;
//! reporting problems is the caller's job.

mod discover;
mod entry;
mod error;
mod expand;
mod jsonc;
mod parse;
mod self_ref;
mod sources;
#[cfg(test)]
mod tests;
mod trust;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

pub use discover::{config_locations, discover, project_files};
#[cfg(test)]
pub(crate) use parse::load_file_report;
pub use parse::load_file_report_as_written;
pub use self_ref::is_self_server;
pub use trust::{create_private_dir, shell_quote, TrustStatus, TrustStore, TRUST_FILE};
pub(crate) use trust::{sha256_hex, write_private_atomically};

/// Variable that keeps configs launching codemode itself (the reference
/// bridge's name, kept for compatibility): `1`, `true` or `yes`.
pub const ALLOW_SELF_ENV: &str = "MCP_BRIDGE_ALLOW_SELF_SERVER";
/// Variable naming one extra config file, read after `--config` files.
pub const SERVERS_CONFIG_ENV: &str = "MCP_SERVERS_CONFIG";

/// One stdio MCP server codemode can launch and proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    /// The entry's `description`, else the file's, else empty.
    pub description: String,
    /// The file the definition came from.
    pub source: PathBuf,
    /// Which client's location that file is, e.g. "Claude Desktop".
    pub source_name: String,
}

/// Everything discovery depends on, so tests can point it at a fake tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryContext {
    /// `$HOME`; `None` skips every home-relative location.
    pub home: Option<PathBuf>,
    /// Directory the project-local locations are relative to.
    pub cwd: PathBuf,
    /// `MCP_SERVERS_CONFIG`.
    pub env_config: Option<PathBuf>,
    /// `--config` files, in the order given.
    pub explicit: Vec<PathBuf>,
    /// Keep servers that would launch codemode itself.
    pub allow_self: bool,
    /// Read the default locations after the explicit files.
    pub scan_default_locations: bool,
    /// Include the default locations under `cwd` (`./.mcp.json`,
    /// `./mcp-servers/`, ...). Off for untrusted working directories: a
    /// config there names programs codemode would start.
    pub scan_project_locations: bool,
    /// The project files the user approved.
    pub trust: TrustStore,
}

impl DiscoveryContext {
    /// Context for this process: `HOME`, the current directory,
    /// `MCP_SERVERS_CONFIG`, and `MCP_BRIDGE_ALLOW_SELF_SERVER` (1/true/yes)
    /// or'ed with `allow_self`.
    pub fn from_process(explicit: Vec<PathBuf>, allow_self: bool) -> Self {
        let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let allow_env = std::env::var(ALLOW_SELF_ENV)
            .map(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
            .unwrap_or(false);
        Self {
            home: non_empty("HOME").map(PathBuf::from),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            env_config: non_empty(SERVERS_CONFIG_ENV).map(PathBuf::from),
            explicit,
            allow_self: allow_self || allow_env,
            scan_default_locations: true,
            scan_project_locations: true,
            trust: TrustStore::default(),
        }
    }
}

/// Result of [`discover`]: the servers, what could not be read, and what was
/// left out on purpose.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovery {
    pub servers: BTreeMap<String, ServerConfig>,
    pub problems: Vec<ConfigProblem>,
    pub skipped: Vec<SkippedServer>,
    /// Servers of project files the user has not approved (or that changed
    /// since): shown, never started.
    pub untrusted: Vec<UntrustedServer>,
}

/// A server defined in a project file that is not approved. It holds what
/// the file says, unexpanded, and no environment: it is for display and
/// cannot be handed to the pool (not a [`ServerConfig`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UntrustedServer {
    pub name: String,
    /// `command` and `args` as written.
    pub command: Vec<String>,
    pub description: String,
    /// The project file; `codemode trust <source>` approves it.
    pub source: PathBuf,
    pub source_name: String,
    /// Whether the file was approved once and has changed since.
    pub changed: bool,
}

impl fmt::Display for UntrustedServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.changed {
            "changed since it was approved"
        } else {
            "not approved"
        };
        write!(
            f,
            "server {:?} comes from the project file {:?}, which is {state}, so codemode does not start it",
            self.name,
            self.source
        )
    }
}

/// A file, or one entry in it, that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    pub path: PathBuf,
    pub message: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// A well-formed server entry that discovery did not keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedServer {
    pub name: String,
    pub source: PathBuf,
    pub source_name: String,
    pub reason: SkipReason,
}

/// Why a [`SkippedServer`] was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// An earlier source already defined this name.
    Shadowed { by: PathBuf },
    /// It would launch codemode (or the reference bridge) itself.
    SelfReference,
    /// It is reached over a network transport, which codemode does not proxy.
    NotStdio { transport: String },
    /// The client config marks it disabled.
    Disabled,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Shadowed { by } => write!(f, "shadowed by {}", by.display()),
            Self::SelfReference => write!(
                f,
                "would launch codemode itself (set {ALLOW_SELF_ENV}=1 to keep it)"
            ),
            Self::NotStdio { transport } => {
                write!(f, "not a stdio server (transport {transport})")
            }
            Self::Disabled => f.write_str("disabled in its config"),
        }
    }
}

impl fmt::Display for SkippedServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} in {}: {}",
            self.name,
            self.source.display(),
            self.reason
        )
    }
}
