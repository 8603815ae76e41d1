//! Helpers shared by the integration tests: where the binaries and the
//! installed third-party servers are, and an MCP client session against a
//! real `codemode serve`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use tempfile::TempDir;

/// `target/<profile>/` of this build: the test binary lives in `deps/` below it.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf()
}

pub fn codemode_bin() -> PathBuf {
    let p = target_dir().join("codemode");
    assert!(
        p.exists(),
        "{} missing: run scripts/test.sh (it builds the release binaries first)",
        p.display()
    );
    p
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where scripts/lib.sh installed the npm servers.
pub fn node_dir() -> PathBuf {
    std::env::var_os("CODEMODE_TEST_NODE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".codemode/node"))
}

pub fn venv() -> PathBuf {
    std::env::var_os("CODEMODE_TEST_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".codemode/venv"))
}

pub fn everything_js() -> PathBuf {
    let p = node_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        p.exists(),
        "{} missing: run scripts/test.sh to install the test servers",
        p.display()
    );
    p
}

/// A scratch directory with a servers config naming real third-party servers.
pub struct Fixture {
    pub dir: TempDir,
}

impl Fixture {
    pub fn new() -> Self {
        Self::with_servers(default_servers())
    }

    pub fn with_servers(servers: Value) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("servers.json"),
            json!({ "mcpServers": servers }).to_string(),
        )
        .expect("write config");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        Self { dir }
    }

    pub fn config(&self) -> PathBuf {
        self.dir.path().join("servers.json")
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// Arguments for `codemode` that isolate it from the machine's own configs.
    pub fn args(&self, runtime: &str) -> Vec<String> {
        vec![
            "--runtime".into(),
            runtime.into(),
            "--config".into(),
            self.config().display().to_string(),
            "--state-dir".into(),
            self.state().display().to_string(),
            "--log-level".into(),
            // Warnings only: a failing test still shows why, a passing run stays readable.
            "warn".into(),
        ]
    }

    /// A `tokio::process::Command` for codemode with a private HOME and cwd,
    /// so only this fixture's config is discovered.
    pub fn command(&self, runtime: &str, extra: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(codemode_bin());
        cmd.args(self.args(runtime));
        cmd.args(extra);
        cmd.env("HOME", self.dir.path().join("home"));
        cmd.env_remove("MCP_SERVERS_CONFIG");
        cmd.current_dir(self.dir.path());
        cmd.kill_on_drop(true);
        cmd
    }

    /// Starts `codemode serve` and connects a real rmcp client to it.
    pub async fn client(&self, runtime: &str, extra: &[&str]) -> Client {
        let mut args: Vec<&str> = extra.to_vec();
        args.push("serve");
        let transport =
            TokioChildProcess::new(self.command(runtime, &args)).expect("spawn codemode");
        let pid = transport.id().unwrap_or(0);
        let service = tokio::time::timeout(Duration::from_secs(60), ().serve(transport))
            .await
            .expect("initialize in time")
            .expect("initialize");
        Client { service, pid }
    }
}

pub fn default_servers() -> Value {
    json!({
        "everything": {
            "command": "node",
            "args": [everything_js().display().to_string(), "stdio"],
            "description": "reference server"
        },
        "time": {
            "command": venv().join("bin/mcp-server-time").display().to_string(),
            "args": ["--local-timezone", "UTC"],
            "description": "time server"
        }
    })
}

pub struct Client {
    pub service: RunningService<RoleClient, ()>,
    /// pid of the `codemode serve` process.
    pub pid: u32,
}

/// A `run_python` result, flattened for assertions.
#[derive(Debug)]
pub struct Run {
    pub text: String,
    pub structured: Value,
    pub is_error: bool,
}

impl Run {
    pub fn status(&self) -> &str {
        self.structured["status"].as_str().unwrap_or("")
    }
    pub fn stdout(&self) -> &str {
        self.structured["stdout"].as_str().unwrap_or("")
    }
}

impl Client {
    pub async fn call(&self, args: Value) -> Run {
        let map = match args {
            Value::Object(m) => m,
            _ => panic!("arguments must be an object"),
        };
        let params = CallToolRequestParams::new("run_python").with_arguments(map);
        let raw = tokio::time::timeout(Duration::from_secs(180), self.service.call_tool(params))
            .await
            .expect("run_python answered in time")
            .expect("run_python call");
        let text = raw
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        Run {
            text,
            structured: raw.structured_content.clone().unwrap_or(Value::Null),
            is_error: raw.is_error == Some(true),
        }
    }

    pub async fn run(&self, code: &str) -> Run {
        self.call(json!({ "code": code })).await
    }

    pub async fn run_with(&self, code: &str, servers: &[&str]) -> Run {
        self.call(json!({ "code": code, "servers": servers })).await
    }

    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}

/// Processes whose command line contains `needle` (for leak checks).
pub fn processes_matching(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|s| s.chars().all(|c| c.is_ascii_digit()))
        else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                out.push(format!("{pid}: {cmd}"));
            }
        }
    }
    out
}

/// Processes whose command line contains `needle` (every one for "") and
/// whose parent is `parent`. Sandboxes show no per-bridge path on their
/// command line, so their parent is how a test finds its own.
pub fn children_matching(parent: u32, needle: &str) -> Vec<i32> {
    processes_matching(needle)
        .iter()
        .filter_map(|l| l.split(':').next()?.parse().ok())
        .filter(|pid: &i32| {
            stat_fields(*pid).and_then(|f| f.get(1).cloned()) == Some(parent.to_string())
        })
        .collect()
}

/// Whether `pid` exists and is not a zombie waiting to be reaped.
pub fn is_running(pid: i32) -> bool {
    stat_fields(pid).is_some_and(|f| f.first().is_some_and(|state| state != "Z"))
}

/// The fields of /proc/PID/stat after the command name: state, ppid, ...
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit(')').next()?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}
