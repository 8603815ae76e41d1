//! Bridge settings: every knob a user can turn, from CLI flags with the
//! reference bridge's `MCP_BRIDGE_*` variables as fallbacks (clap's `env`
//! makes a flag win over its variable).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

/// Which sandbox backend runs the guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RuntimeChoice {
    /// podman, then docker, then bubblewrap: the first that is installed.
    Auto,
    Podman,
    Docker,
    #[value(alias = "bwrap")]
    Bubblewrap,
}

/// How `run_python` renders its text content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputMode {
    Compact,
    Toon,
    Json,
}

/// Settings shared by every subcommand that runs code.
#[derive(Debug, Clone, Args)]
pub struct Settings {
    /// Sandbox backend.
    #[arg(long, env = "MCP_BRIDGE_RUNTIME", value_enum, default_value = "auto")]
    pub runtime: RuntimeChoice,
    /// Container image for podman/docker (default: the image matching this build).
    #[arg(long, env = "MCP_BRIDGE_IMAGE")]
    pub image: Option<String>,
    /// Which of codemode's images to run (podman/docker): `default`,
    /// `datascience`, or the name given to `codemode image build --variant
    /// NAME --requirements FILE`. `--image` overrides it.
    #[arg(long, env = "MCP_BRIDGE_VARIANT", default_value = "default")]
    pub variant: codemode_images::Variant,
    /// OCI runtime podman should use (e.g. runc). Default: runc when the
    /// host's cgroup layout is v1/hybrid (crun refuses it), else podman's own.
    #[arg(long, env = "MCP_BRIDGE_OCI_RUNTIME")]
    pub oci_runtime: Option<String>,
    /// Default cell timeout in seconds.
    #[arg(long, env = "MCP_BRIDGE_TIMEOUT", default_value_t = 30)]
    pub timeout: u64,
    /// Largest timeout a call may ask for, in seconds.
    #[arg(long, env = "MCP_BRIDGE_MAX_TIMEOUT", default_value_t = 120)]
    pub max_timeout: u64,
    /// Memory limit of a sandbox (e.g. 512m, 1g).
    #[arg(long, env = "MCP_BRIDGE_MEMORY", default_value = "512m")]
    pub memory: String,
    /// Process limit of a sandbox.
    #[arg(long, env = "MCP_BRIDGE_PIDS", default_value_t = 128)]
    pub pids: u32,
    /// CPUs' worth of time one sandbox may use (e.g. 0.5, 1.5); `none`
    /// for no quota. Enforced by the container engine, or by a cgroup for
    /// bubblewrap where codemode can create one (`codemode doctor` says).
    #[arg(long, env = "MCP_BRIDGE_CPUS", default_value = "1")]
    pub cpus: String,
    /// uid:gid the sandbox runs as.
    #[arg(long, env = "MCP_BRIDGE_CONTAINER_USER", default_value = "65534:65534")]
    pub container_user: String,
    /// Where codemode keeps saved tools and the approvals of project configs.
    #[arg(long, env = "MCP_BRIDGE_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// Text rendering of results.
    #[arg(
        long,
        env = "MCP_BRIDGE_OUTPUT_MODE",
        value_enum,
        default_value = "compact"
    )]
    pub output_mode: OutputMode,
    /// Log filter (error, warn, info, debug, trace, or a tracing filter).
    #[arg(long, env = "MCP_BRIDGE_LOG_LEVEL", default_value = "warn")]
    pub log_level: String,
    /// Extra server config file (repeatable); read before every other source.
    #[arg(long = "config", value_name = "FILE")]
    pub configs: Vec<PathBuf>,
    /// Give cells a host path: HOST:SANDBOX[:ro|rw] (read-only by default;
    /// repeatable; the variable takes a comma-separated list).
    #[arg(
        long = "mount",
        value_name = "HOST:SANDBOX[:ro|rw]",
        env = "MCP_BRIDGE_MOUNTS",
        value_delimiter = ','
    )]
    pub mounts: Vec<String>,
    /// Path of the guest binary for the bubblewrap backend
    /// (default: `codemode-guest` next to this executable).
    #[arg(long, env = "MCP_BRIDGE_GUEST")]
    pub guest: Option<PathBuf>,
    /// Started sandboxes kept ready for new sessions.
    #[arg(long, env = "MCP_BRIDGE_WARM_POOL", default_value_t = 1)]
    pub warm_pool: usize,
    /// Seconds before an idle session's sandbox is reaped.
    #[arg(long, env = "MCP_BRIDGE_SESSION_IDLE", default_value_t = 900)]
    pub session_idle: u64,
    /// Most sessions alive at once (the least recently used is reaped).
    #[arg(long, env = "MCP_BRIDGE_MAX_SESSIONS", default_value_t = 8)]
    pub max_sessions: usize,
    /// Bytes of stdout+stderr kept per cell (head and tail beyond it).
    #[arg(long, env = "MCP_BRIDGE_MAX_OUTPUT", default_value_t = 64 * 1024)]
    pub max_output_bytes: u64,
    /// Tool calls a single cell may make.
    #[arg(long, env = "MCP_BRIDGE_CALL_BUDGET", default_value_t = 5000)]
    pub call_budget: u32,
    /// Seconds a single proxied tool call may take.
    #[arg(long, env = "MCP_BRIDGE_CALL_TIMEOUT", default_value_t = 60)]
    pub call_timeout: u64,
    /// Only these servers may be loaded (comma-separated; default all).
    #[arg(long, env = "MCP_BRIDGE_ALLOW_SERVERS", value_delimiter = ',')]
    pub allow_servers: Vec<String>,
    /// These servers may never be loaded (comma-separated).
    #[arg(long, env = "MCP_BRIDGE_DENY_SERVERS", value_delimiter = ',')]
    pub deny_servers: Vec<String>,
    /// Tools cells may not call, as server.tool (comma-separated).
    #[arg(long, env = "MCP_BRIDGE_DENY_TOOLS", value_delimiter = ',')]
    pub deny_tools: Vec<String>,
    /// Write an audit log of every proxied call (JSON lines) to this file.
    #[arg(long, env = "MCP_BRIDGE_AUDIT_LOG")]
    pub audit_log: Option<PathBuf>,
    /// Allow server configs that would launch codemode itself.
    #[arg(long, env = "MCP_BRIDGE_ALLOW_SELF_SERVER")]
    pub allow_self_server: bool,
    /// Ignore server configs in the working directory (./.mcp.json,
    /// ./mcp-servers/, ...) altogether. Without this flag they are listed,
    /// but their servers start only once approved with `codemode trust`.
    #[arg(long, env = "MCP_BRIDGE_NO_PROJECT_CONFIGS")]
    pub no_project_configs: bool,
}

impl Settings {
    pub fn default_timeout(&self) -> Duration {
        Duration::from_secs(self.timeout.clamp(1, self.max_timeout.max(1)))
    }

    /// Clamps a requested timeout (seconds) to `1..=max_timeout`.
    pub fn clamp_timeout(&self, requested: Option<u64>) -> Duration {
        let secs = requested.unwrap_or(self.timeout);
        Duration::from_secs(secs.clamp(1, self.max_timeout.max(1)))
    }

    /// The state directory: `--state-dir`, else `$XDG_STATE_HOME/codemode`,
    /// else `~/.local/state/codemode`, else `./.codemode`.
    pub fn state_dir(&self) -> PathBuf {
        if let Some(dir) = &self.state_dir {
            return dir.clone();
        }
        if let Some(xdg) = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
            return PathBuf::from(xdg).join("codemode");
        }
        if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            return PathBuf::from(home).join(".local/state/codemode");
        }
        PathBuf::from(".codemode")
    }

    /// Where MCP server configs are looked for, per these settings.
    pub fn discovery_context(&self) -> crate::config::DiscoveryContext {
        let mut ctx = crate::config::DiscoveryContext::from_process(
            self.configs.clone(),
            self.allow_self_server,
        );
        ctx.scan_project_locations = !self.no_project_configs;
        ctx.trust = crate::config::TrustStore::load_or_distrust(&self.trust_file());
        ctx
    }

    /// Where approvals of project config files are kept (`codemode trust`).
    pub fn trust_file(&self) -> PathBuf {
        self.state_dir().join(crate::config::TRUST_FILE)
    }

    /// The command that approves `file` for this configuration, quoted for
    /// a shell; it names the state dir when one was chosen, since that is
    /// where the approval must land.
    pub fn trust_command(&self, file: &std::path::Path) -> String {
        let quote = crate::config::shell_quote;
        match &self.state_dir {
            Some(dir) => format!("codemode --state-dir {} trust {}", quote(dir), quote(file)),
            None => format!("codemode trust {}", quote(file)),
        }
    }

    /// Where saved tools live on the host.
    pub fn tools_dir(&self) -> PathBuf {
        self.state_dir().join("tools")
    }

    /// The CPU quota: `None` for `none` (or 0), else a positive number of CPUs.
    pub fn cpu_quota(&self) -> Result<Option<f64>, CpuError> {
        let t = self.cpus.trim();
        if t.eq_ignore_ascii_case("none") {
            return Ok(None);
        }
        match t.parse::<f64>() {
            Ok(0.0) => Ok(None),
            Ok(v) if v.is_finite() && v > 0.0 => Ok(Some(v)),
            _ => Err(CpuError(t.to_string())),
        }
    }

    /// Memory limit in bytes, parsed from forms like `512m`, `1g`, `1048576`.
    pub fn memory_bytes(&self) -> Result<u64, SizeError> {
        parse_size(&self.memory)
    }
}

/// A `--cpus` value that is not a positive number or `none`.
#[derive(Debug, thiserror::Error)]
#[error("--cpus: expected a positive number of CPUs such as 1 or 0.5, or none; got {0:?}")]
pub struct CpuError(String);

/// A size that is not a number of bytes with an optional k/m/g suffix.
#[derive(Debug, thiserror::Error)]
pub enum SizeError {
    #[error("expected a size like 512m or 1g, got {0:?}")]
    NotASize(String),
    #[error("size {0:?} is too large")]
    TooLarge(String),
}

/// Parses `512m`, `1g`, `64k`, `1024` (bytes) into bytes.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_suffix('b').unwrap_or(&t);
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let value: u64 = num
        .trim()
        .parse()
        .map_err(|_| SizeError::NotASize(text.to_string()))?;
    value
        .checked_mul(mult)
        .ok_or_else(|| SizeError::TooLarge(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("512m").unwrap(), 512 << 20);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("64k").unwrap(), 64 << 10);
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert!(parse_size("lots").unwrap_err().to_string().contains("512m"));
    }
}
