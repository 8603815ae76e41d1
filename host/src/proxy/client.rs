//! One proxied MCP server: an rmcp client over the stdio of a supervised
//! child ([`crate::child`]) with an explicit environment, its tool list
//! cached until the server says it changed, when it is listed again at once
//! so the tool index ([`crate::index`]) follows.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, Implementation, Tool};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::sync::Mutex;

use crate::child::{inherited, Child, Io, StderrLevel};
use crate::config::ServerConfig;
use crate::index::ToolIndex;

/// How long a server may take to start and answer `initialize`: npx may
/// download a package first, so this is generous.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// After closing its stdin, how long a server gets to exit on its own
/// before SIGTERM, then SIGKILL (server-everything takes ~0.4 s).
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How long a start-up error waits for the server's last stderr lines.
const STDERR_WAIT: Duration = Duration::from_millis(500);
/// How long listing the tools again after `tools/list_changed` may take;
/// a failure leaves the cache empty, so the next use lists them.
const RELIST_TIMEOUT: Duration = Duration::from_secs(30);

/// Variables passed through from codemode's own environment; everything
/// else a server needs must be in its config's `env`.
const BASE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TMPDIR", "TZ", "SHELL", "TERM",
];

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("server {server:?} is not configured (known: {known})")]
    Unknown { server: String, known: String },
    #[error("server {server:?} failed to start: {message}")]
    Start { server: String, message: String },
    #[error("server {server:?} did not finish {what} within {secs}s")]
    Timeout {
        server: String,
        what: &'static str,
        secs: u64,
    },
    #[error(
        "server {server:?} stopped responding ({message}); it will be restarted on the next call"
    )]
    Crashed { server: String, message: String },
    #[error("server {server:?} answered with an error: {message}")]
    Remote { server: String, message: String },
}

/// Client-side handler: records `tools/list_changed` and lists the tools
/// again in the background (the server is set once it is built).
#[derive(Clone)]
struct Listener {
    tools_changed: Arc<AtomicBool>,
    server: Arc<OnceLock<Weak<ProxiedServer>>>,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            Default::default(),
            Implementation::new("codemode", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::SeqCst);
        let Some(server) = self.server.get().and_then(Weak::upgrade) else {
            return;
        };
        tokio::spawn(async move {
            if let Err(e) = server.tools(RELIST_TIMEOUT).await {
                tracing::info!(server = %server.name, "listing tools after tools/list_changed failed: {e}");
            }
        });
    }
}

pub struct ProxiedServer {
    pub name: String,
    service: Mutex<Option<RunningService<RoleClient, Listener>>>,
    peer: rmcp::Peer<RoleClient>,
    tools: Mutex<Option<Arc<Vec<Tool>>>>,
    tools_changed: Arc<AtomicBool>,
    /// Where fresh tool lists are recorded, and this config's fingerprint.
    index: Arc<ToolIndex>,
    fingerprint: String,
    /// The server process; taken by `shutdown`, killed when dropped.
    child: Mutex<Option<Child>>,
    closed: AtomicBool,
}

impl ProxiedServer {
    pub async fn start(cfg: &ServerConfig, index: Arc<ToolIndex>) -> Result<Arc<Self>, ProxyError> {
        let mut env = inherited(BASE_ENV);
        env.extend(cfg.env.iter().map(|(k, v)| (k.into(), v.into())));
        let mut cmd = crate::child::command(&cfg.command, env);
        cmd.args(&cfg.args);
        if let Some(cwd) = &cfg.cwd {
            cmd.current_dir(cwd);
        }
        let start_err = |message: String| ProxyError::Start {
            server: cfg.name.clone(),
            message,
        };
        let label = format!("server {}", cfg.name);
        let mut child = Child::spawn(cmd, label, Io::Channel, StderrLevel::Info, libc::SIGKILL)
            .map_err(|e| start_err(format!("cannot run {:?}: {e}", cfg.command)))?;
        let (Some(stdout), Some(stdin)) = (child.take_stdout(), child.take_stdin()) else {
            return Err(start_err("its stdio could not be piped".into()));
        };
        let tools_changed = Arc::new(AtomicBool::new(false));
        let slot = Arc::new(OnceLock::new());
        let listener = Listener {
            tools_changed: tools_changed.clone(),
            server: slot.clone(),
        };
        let service =
            match tokio::time::timeout(START_TIMEOUT, listener.serve((stdout, stdin))).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    child.kill_now();
                    let tail = child.stderr_tail(STDERR_WAIT).await;
                    let detail = if tail.is_empty() {
                        String::new()
                    } else {
                        format!("; its stderr:\n{tail}")
                    };
                    return Err(start_err(format!("initialize failed: {e}{detail}")));
                }
                Err(_) => {
                    return Err(ProxyError::Timeout {
                        server: cfg.name.clone(),
                        what: "start-up",
                        secs: START_TIMEOUT.as_secs(),
                    });
                }
            };
        let server = Arc::new(Self {
            name: cfg.name.clone(),
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            tools: Mutex::new(None),
            tools_changed,
            index,
            fingerprint: crate::index::fingerprint(cfg),
            child: Mutex::new(Some(child)),
            closed: AtomicBool::new(false),
        });
        let _ = slot.set(Arc::downgrade(&server));
        Ok(server)
    }

    /// Whether the connection is gone (the server exited or crashed).
    pub fn is_dead(&self) -> bool {
        self.closed.load(Ordering::SeqCst) || self.peer.is_transport_closed()
    }

    fn crashed(&self, message: String) -> ProxyError {
        self.closed.store(true, Ordering::SeqCst);
        ProxyError::Crashed {
            server: self.name.clone(),
            message,
        }
    }

    /// The server's tools, cached until it sends `tools/list_changed`;
    /// each fresh list is recorded in the tool index.
    pub async fn tools(&self, timeout: Duration) -> Result<Arc<Vec<Tool>>, ProxyError> {
        let mut cached = self.tools.lock().await;
        if self.tools_changed.swap(false, Ordering::SeqCst) {
            cached.take();
        }
        if let Some(t) = cached.as_ref() {
            return Ok(t.clone());
        }
        let tools = match tokio::time::timeout(timeout, self.peer.list_all_tools()).await {
            Ok(Ok(t)) => Arc::new(t),
            Ok(Err(rmcp::service::ServiceError::McpError(e))) => {
                return Err(ProxyError::Remote {
                    server: self.name.clone(),
                    message: e.message.to_string(),
                })
            }
            Ok(Err(e)) => return Err(self.crashed(e.to_string())),
            Err(_) => {
                return Err(ProxyError::Timeout {
                    server: self.name.clone(),
                    what: "tools/list",
                    secs: timeout.as_secs(),
                })
            }
        };
        self.index.record(&self.name, &self.fingerprint, &tools);
        *cached = Some(tools.clone());
        Ok(tools)
    }

    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
    ) -> Result<CallToolResult, ProxyError> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        match tokio::time::timeout(timeout, self.peer.call_tool(params)).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(rmcp::service::ServiceError::McpError(e))) => Err(ProxyError::Remote {
                server: self.name.clone(),
                message: e.message.to_string(),
            }),
            Ok(Err(e)) => Err(self.crashed(e.to_string())),
            Err(_) => Err(ProxyError::Timeout {
                server: self.name.clone(),
                what: "the tool call",
                secs: timeout.as_secs(),
            }),
        }
    }

    /// Closes the connection (the server's stdin), then the escalating
    /// shutdown of [`Child::shutdown`].
    pub async fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if let Some(service) = self.service.lock().await.take() {
            let _ = tokio::time::timeout(EXIT_GRACE, service.cancel()).await;
        }
        if let Some(child) = self.child.lock().await.take() {
            child.shutdown(EXIT_GRACE).await;
        }
    }
}
