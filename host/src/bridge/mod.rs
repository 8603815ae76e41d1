//! The bridge: owns the settings, the sandbox backend, the proxied-server
//! pool and the sessions, and runs one `run_python` request end to end.
//! The MCP server and the CLI are thin layers over [`Bridge::run`].

mod policy;
mod rpc;
mod rpc_saved;
mod session;
#[cfg(test)]
mod tests;
mod warm;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use codemode_proto::v1::{DiscoveredServer, RichOutput};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

pub use policy::Policy;
pub use rpc::AuditLog;
pub use session::Session;
pub use warm::WarmPool;

use crate::config::Discovery;
use crate::index::ToolIndex;
use crate::proxy::ServerPool;
use crate::runtime::{self, parse_mount, LaunchSpec, Limits, MountGuard};
use crate::sandbox::OutputListener;
use crate::saved::{SavedError, SavedTools, Store};
use crate::settings::Settings;
use warm::Launcher;

/// Largest frame either side sends; the guest reads with the same default.
pub const MAX_FRAME_BYTES: usize = codemode_proto::DEFAULT_MAX_FRAME_BYTES;
/// How often idle sessions are looked for, at most (short idle limits are
/// checked at half their length).
const REAP_INTERVAL: Duration = Duration::from_secs(30);
/// Size of each sandbox tmpfs (`/tmp`, `/workspace`).
const TMPFS_BYTES: u64 = 256 * 1024 * 1024;
/// CPU seconds a bubblewrap sandbox may burn over its whole life.
const BWRAP_CPU_SECONDS: u64 = 3600;
/// How long shutdown waits for one session's running cell to stop.
const SESSION_CLOSE_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(transparent)]
    Runtime(#[from] runtime::RuntimeError),
    #[error(transparent)]
    Mount(#[from] runtime::MountError),
    #[error("invalid --memory: {0}")]
    Memory(#[from] crate::settings::SizeError),
    #[error(transparent)]
    Cpus(#[from] crate::settings::CpuError),
    #[error("cannot prepare the state directory {path}: {source}")]
    StateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot prepare the saved-tools directory: {0}")]
    SavedTools(#[from] SavedError),
}

/// Final status of a `run_python` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Success,
    Error,
    Timeout,
    Cancelled,
    ValidationError,
}

impl RunStatus {
    /// Every status, in the order the output schema lists them.
    pub const ALL: [RunStatus; 5] = [
        RunStatus::Success,
        RunStatus::Error,
        RunStatus::Timeout,
        RunStatus::Cancelled,
        RunStatus::ValidationError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Success => "success",
            RunStatus::Error => "error",
            RunStatus::Timeout => "timeout",
            RunStatus::Cancelled => "cancelled",
            RunStatus::ValidationError => "validation_error",
        }
    }
}

#[derive(Debug, Clone)]
pub struct RunRequest {
    pub code: String,
    pub servers: Vec<String>,
    pub timeout: Option<u64>,
    pub session: String,
}

/// A cell's last value, as a notebook shows it (`Out`).
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    /// Its repr, a DataFrame's table, or a note saying why there is none.
    pub text: String,
    /// The value itself, when it is plain data (JSON-serialisable).
    pub result: Option<serde_json::Value>,
}

#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub stdout: String,
    pub stderr: String,
    /// One-line error (with traceback when there is one).
    pub error: Option<String>,
    pub servers: Vec<String>,
    pub duration: Duration,
    pub rich: Vec<RichOutput>,
    /// Things the model should know: state lost, sandbox replaced...
    pub notes: Vec<String>,
    pub timeout_secs: u64,
    /// The value of the cell's last expression (successful cells only).
    pub shown: Option<Shown>,
}

impl RunOutcome {
    pub fn failed(status: RunStatus, error: impl Into<String>, servers: Vec<String>) -> Self {
        Self {
            status,
            stdout: String::new(),
            stderr: String::new(),
            error: Some(error.into()),
            servers,
            duration: Duration::ZERO,
            rich: Vec::new(),
            notes: Vec::new(),
            timeout_secs: 0,
            shown: None,
        }
    }
}

pub struct Bridge {
    pub settings: Settings,
    pub pool: Arc<ServerPool>,
    pub discovery: Discovery,
    pub policy: Policy,
    warm: Arc<WarmPool>,
    sessions: Mutex<HashMap<String, Arc<Mutex<Session>>>>,
    audit: Option<Arc<AuditLog>>,
    saved: Arc<SavedTools>,
    shutdown: CancellationToken,
}

/// The limits every sandbox of these settings gets.
pub fn sandbox_limits(settings: &Settings) -> Result<Limits, BridgeError> {
    Ok(Limits {
        memory_bytes: settings.memory_bytes()?,
        pids: settings.pids,
        cpus: settings.cpu_quota()?,
        user: settings.container_user.clone(),
        tmpfs_bytes: TMPFS_BYTES,
        cpu_seconds: BWRAP_CPU_SECONDS,
    })
}

impl Bridge {
    /// Discovers servers, selects the runtime and prepares the state dir.
    /// Starts nothing yet except (with a warm pool) background sandboxes.
    pub async fn new(settings: Settings) -> Result<Arc<Self>, BridgeError> {
        let ctx = settings.discovery_context();
        let discovery = crate::config::discover(&ctx);
        for problem in &discovery.problems {
            tracing::warn!("config: {problem}");
        }
        let mut choice = runtime::select_backend(&settings).await?;
        tracing::info!(
            runtime = choice.backend.name(),
            "sandbox runtime: {}",
            choice.reason
        );

        let (state, saved) = prepare_state(&settings)?;

        if let runtime::Backend::Oci(oci) = &mut choice.backend {
            oci.write_seccomp_profile(&state)
                .map_err(|source| BridgeError::StateDir {
                    path: state.clone(),
                    source,
                })?;
        }
        let mut protected = vec![state.clone()];
        if let Ok(exe) = std::env::current_exe() {
            protected.push(exe);
        }
        // A cell that can write where configs are read could plant a server
        // that codemode (or the user's client) starts on the host.
        let configs = crate::config::config_locations(&ctx);
        let guard = MountGuard {
            protected,
            user_configs: configs.user,
            project_configs: configs.project,
        };
        let mounts = settings
            .mounts
            .iter()
            .map(|m| parse_mount(m, &guard))
            .collect::<Result<Vec<_>, _>>()?;
        match &choice.backend {
            runtime::Backend::Bubblewrap(bw) => {
                bw.check_mounts(&settings.container_user, &mounts)?
            }
            runtime::Backend::Oci(_) => {
                let ids = runtime::identity::Ids::parse(&settings.container_user)
                    .map_err(runtime::RuntimeError::from)?;
                runtime::identity::check_oci_user(ids, &settings.container_user)
                    .map_err(runtime::RuntimeError::from)?;
            }
        }
        let limits = sandbox_limits(&settings)?;
        // Names this bridge's sandboxes: pid plus clock nanos, so two bridges
        // started in the same second do not collide.
        let instance = format!("{:x}{:08x}", std::process::id(), clock_nanos());
        let spec = LaunchSpec {
            limits,
            mounts,
            instance,
            name: String::new(),
        };

        if let runtime::Backend::Oci(oci) = &choice.backend {
            // In the background: listing containers takes a podman client's
            // start-up (0.1-0.2 s), which the warm pool's first sandbox must
            // not wait for. It only removes containers whose owner is gone.
            let oci = oci.clone();
            tokio::spawn(async move {
                let removed = runtime::sweep_stale_containers(&oci).await;
                if removed > 0 {
                    tracing::info!("removed {removed} containers left by earlier bridges");
                }
            });
        } else {
            let removed = runtime::sweep_stale_cgroups();
            if removed > 0 {
                tracing::info!("removed {removed} sandbox cgroups left by earlier bridges");
            }
        }

        Self::assemble(
            settings,
            discovery,
            Launcher::Runtime(choice.backend),
            spec,
            saved,
        )
    }

    /// The bridge around a discovery, a launcher and a launch spec.
    fn assemble(
        settings: Settings,
        discovery: Discovery,
        launcher: Launcher,
        spec: LaunchSpec,
        saved: Arc<SavedTools>,
    ) -> Result<Arc<Self>, BridgeError> {
        let policy = Policy::from_settings(&settings);
        let allowed: BTreeMap<_, _> = discovery
            .servers
            .iter()
            .filter(|(name, _)| policy.server_allowed(name))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let pool = Arc::new(ServerPool::new(
            allowed,
            Duration::from_secs(settings.call_timeout.max(1)),
            Arc::new(ToolIndex::open(&settings.state_dir())),
        ));
        let audit = match &settings.audit_log {
            Some(path) => Some(Arc::new(AuditLog::open(path).map_err(|source| {
                BridgeError::StateDir {
                    path: path.clone(),
                    source,
                }
            })?)),
            None => None,
        };
        let warm = WarmPool::new(launcher, spec, MAX_FRAME_BYTES, settings.warm_pool);
        warm.spawn_refill();
        let bridge = Arc::new(Self {
            policy,
            settings,
            pool,
            discovery,
            warm,
            sessions: Mutex::new(HashMap::new()),
            audit,
            saved,
            shutdown: CancellationToken::new(),
        });
        bridge.spawn_reaper();
        Ok(bridge)
    }

    /// A bridge whose sandboxes are in-process guests from `connect`, with
    /// the servers of `discovery` (never started unless a cell loads one)
    /// and no runtime: the host core's unit tests.
    #[cfg(test)]
    pub(crate) fn in_process(
        settings: Settings,
        discovery: Discovery,
        connect: Arc<dyn Fn() -> warm::GuestChannel + Send + Sync>,
    ) -> Result<Arc<Self>, BridgeError> {
        let (_, saved) = prepare_state(&settings)?;
        let spec = LaunchSpec {
            limits: sandbox_limits(&settings)?,
            mounts: Vec::new(),
            instance: "test".into(),
            name: String::new(),
        };
        Self::assemble(
            settings,
            discovery,
            Launcher::InProcess(connect),
            spec,
            saved,
        )
    }

    pub fn warm_pool(&self) -> &Arc<WarmPool> {
        &self.warm
    }

    /// Names and descriptions of every server a session may load.
    pub fn discovered(&self) -> Vec<DiscoveredServer> {
        self.pool
            .configs()
            .values()
            .map(|c| DiscoveredServer {
                name: c.name.clone(),
                description: c.description.clone(),
            })
            .collect()
    }

    fn spawn_reaper(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let stop = self.shutdown.clone();
        let idle = Duration::from_secs(self.settings.session_idle.max(1));
        let interval = REAP_INTERVAL.min(idle / 2);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(interval) => {}
                }
                let Some(bridge) = weak.upgrade() else { return };
                bridge.reap_idle().await;
                runtime::remove_leftover_cgroups().await;
            }
        });
    }

    async fn reap_idle(&self) {
        let idle = Duration::from_secs(self.settings.session_idle.max(1));
        let mut victims = Vec::new();
        {
            let mut sessions = self.sessions.lock().await;
            let mut keep = HashMap::new();
            for (id, s) in sessions.drain() {
                let expired = match s.try_lock() {
                    Ok(guard) => guard.last_used.elapsed() > idle,
                    Err(_) => false,
                };
                if expired {
                    victims.push((id, s));
                } else {
                    keep.insert(id, s);
                }
            }
            *sessions = keep;
        }
        for (id, s) in victims {
            tracing::info!(session = %id, "reaping idle session");
            s.lock().await.close().await;
        }
    }

    /// Finds or creates the session, evicting the least recently used idle
    /// one when the cap is reached.
    async fn session(&self, id: &str) -> Arc<Mutex<Session>> {
        let mut sessions = self.sessions.lock().await;
        if let Some(s) = sessions.get(id) {
            return s.clone();
        }
        if sessions.len() >= self.settings.max_sessions.max(1) {
            let oldest = sessions
                .iter()
                .filter_map(|(k, s)| s.try_lock().ok().map(|g| (k.clone(), g.last_used)))
                .min_by_key(|(_, t)| *t)
                .map(|(k, _)| k);
            if let Some(k) = oldest {
                if let Some(s) = sessions.remove(&k) {
                    tracing::info!(session = %k, "session cap reached; closing the least recently used session");
                    tokio::spawn(async move { s.lock().await.close().await });
                }
            }
        }
        let s = Arc::new(Mutex::new(Session::new(id.to_string())));
        sessions.insert(id.to_string(), s.clone());
        s
    }

    /// Runs one `run_python` request.
    pub async fn run(
        self: &Arc<Self>,
        req: RunRequest,
        listener: &mut dyn OutputListener,
        cancel: CancellationToken,
    ) -> RunOutcome {
        let servers: Vec<String> = {
            let mut seen = BTreeSet::new();
            req.servers
                .iter()
                .filter(|s| seen.insert((*s).clone()))
                .cloned()
                .collect()
        };
        for s in &servers {
            if self.pool.configs().contains_key(s) {
                continue;
            }
            if let Some(untrusted) = self.discovery.untrusted.iter().find(|u| &u.name == s) {
                let approve = self.settings.trust_command(&untrusted.source);
                return RunOutcome::failed(
                    RunStatus::ValidationError,
                    format!("{untrusted}; the user can approve the file with `{approve}`"),
                    servers,
                );
            }
            let known: Vec<&str> = self.pool.configs().keys().map(String::as_str).collect();
            let why = if self.discovery.servers.contains_key(s) {
                " (denied by the bridge's policy)"
            } else {
                ""
            };
            return RunOutcome::failed(
                RunStatus::ValidationError,
                format!(
                    "unknown server {s:?}{why}; available: {}",
                    if known.is_empty() {
                        "none configured".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
                servers,
            );
        }
        let timeout = self.settings.clamp_timeout(req.timeout);
        let session = self.session(&req.session).await;
        let mut session = session.lock().await;
        // The cell stops for the client's cancel and for the bridge's
        // shutdown alike, so a shutdown never waits on a running cell.
        let cell_cancel = self.shutdown.child_token();
        let relay = cell_cancel.clone();
        let run = session.run(self, &req.code, &servers, timeout, listener, cell_cancel);
        tokio::pin!(run);
        tokio::select! {
            out = &mut run => out,
            _ = cancel.cancelled() => {
                relay.cancel();
                run.await
            }
        }
    }

    /// Closes every session, the warm pool and the proxied servers.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        let sessions: Vec<_> = self.sessions.lock().await.drain().map(|(_, s)| s).collect();
        for s in sessions {
            // A running cell was just cancelled and ends within its grace;
            // past this bound its sandbox is killed when dropped instead.
            match tokio::time::timeout(SESSION_CLOSE_WAIT, s.lock()).await {
                Ok(mut session) => session.close().await,
                Err(_) => tracing::warn!("a session did not stop in time; its sandbox is killed"),
            }
        }
        self.warm.shutdown().await;
        runtime::remove_leftover_cgroups().await;
        self.pool.shutdown_all().await;
    }

    pub(crate) fn audit(&self) -> Option<Arc<AuditLog>> {
        self.audit.clone()
    }

    pub(crate) fn saved(&self) -> Arc<SavedTools> {
        self.saved.clone()
    }
}

/// Creates the state directory (private when codemode creates it: it holds
/// the approvals of project configs and the saved tools) and opens the
/// saved-tools store in it. Sandboxes never see this directory: saved
/// tools go through RPCs.
fn prepare_state(settings: &Settings) -> Result<(PathBuf, Arc<SavedTools>), BridgeError> {
    let state = settings.state_dir();
    crate::config::create_private_dir(&state).map_err(|source| BridgeError::StateDir {
        path: state.clone(),
        source,
    })?;
    let saved = Arc::new(SavedTools::new(Store::prepare(
        &state,
        settings.tools_dir(),
    )?));
    Ok((state, saved))
}

fn clock_nanos() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
}
