//! Started, handshaken sandboxes kept ready so a new session's first call
//! does not pay the runtime's start-up. Refilled in the background; all
//! shut down with the bridge.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{Mutex, Notify};

use crate::runtime::{Backend, LaunchSpec};
use crate::sandbox::{Sandbox, SandboxError, Started};

/// Where the pool's sandboxes come from.
#[derive(Clone)]
pub enum Launcher {
    /// A sandbox runtime: podman, docker or bubblewrap.
    Runtime(Backend),
    /// In-process guests on byte channels (the host core's unit tests).
    #[cfg(test)]
    InProcess(Arc<dyn Fn() -> GuestChannel + Send + Sync>),
}

/// The channel of an in-process guest, as the host sees it.
#[cfg(test)]
pub type GuestChannel = (
    tokio::io::ReadHalf<tokio::io::DuplexStream>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
);

pub struct WarmPool {
    launcher: Launcher,
    spec: LaunchSpec,
    max_frame: usize,
    target: usize,
    ready: Mutex<VecDeque<Sandbox<Started>>>,
    refilling: Mutex<()>,
    /// Woken when a refill adds a sandbox or stops.
    refilled: Notify,
    counter: AtomicU64,
    closed: std::sync::atomic::AtomicBool,
}

impl WarmPool {
    pub fn new(launcher: Launcher, spec: LaunchSpec, max_frame: usize, target: usize) -> Arc<Self> {
        Arc::new(Self {
            launcher,
            spec,
            max_frame,
            target,
            ready: Mutex::new(VecDeque::new()),
            refilling: Mutex::new(()),
            refilled: Notify::new(),
            counter: AtomicU64::new(0),
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn next_spec(&self) -> LaunchSpec {
        let n = self.counter.fetch_add(1, Ordering::SeqCst);
        let mut spec = self.spec.clone();
        spec.name = format!("codemode-{}-{n}", self.spec.instance);
        spec
    }

    /// Starts a fresh sandbox now.
    pub async fn start_one(&self) -> Result<Sandbox<Started>, SandboxError> {
        let spec = self.next_spec();
        match &self.launcher {
            Launcher::Runtime(backend) => Sandbox::start(backend, &spec, self.max_frame).await,
            #[cfg(test)]
            Launcher::InProcess(connect) => {
                let (from_guest, to_guest) = connect();
                Sandbox::over_channel(&spec.name, from_guest, to_guest, self.max_frame).await
            }
        }
    }

    /// A ready sandbox: from the pool when one is there; else the one a
    /// refill is starting (already partway, and a second start would only
    /// compete with it for the CPU); else started now. Triggers a
    /// background refill either way.
    pub async fn take(self: &Arc<Self>) -> Result<Sandbox<Started>, SandboxError> {
        let pooled = loop {
            // Registered before looking, so a push in between is not missed.
            let refilled = self.refilled.notified();
            if let Some(sb) = self.pop_alive().await {
                break Some(sb);
            }
            if self.refilling.try_lock().is_ok() || self.closed.load(Ordering::SeqCst) {
                // No refill in flight; one may have just finished.
                break self.pop_alive().await;
            }
            refilled.await;
        };
        self.spawn_refill();
        match pooled {
            Some(sb) => Ok(sb),
            None => self.start_one().await,
        }
    }

    /// The first pooled sandbox still alive (dead ones are shut down).
    async fn pop_alive(&self) -> Option<Sandbox<Started>> {
        loop {
            let mut sb = self.ready.lock().await.pop_front()?;
            if sb.is_alive() {
                return Some(sb);
            }
            sb.shutdown().await;
        }
    }

    pub fn spawn_refill(self: &Arc<Self>) {
        if self.target == 0 {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move { this.refill().await });
    }

    async fn refill(&self) {
        let Ok(guard) = self.refilling.try_lock() else {
            return;
        };
        self.fill().await;
        drop(guard);
        // Waiters re-check: a sandbox, or no refill any more.
        self.refilled.notify_waiters();
    }

    async fn fill(&self) {
        while !self.closed.load(Ordering::SeqCst) && self.ready.lock().await.len() < self.target {
            match self.start_one().await {
                Ok(sb) => {
                    if self.closed.load(Ordering::SeqCst) {
                        sb.shutdown().await;
                        return;
                    }
                    self.ready.lock().await.push_back(sb);
                    self.refilled.notify_waiters();
                }
                Err(e) => {
                    tracing::warn!("warm pool could not start a sandbox: {e}");
                    return;
                }
            }
        }
    }

    /// Sandboxes ready right now.
    pub async fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        // A refill in flight sees `closed` once its start completes and
        // shuts that sandbox down; wait for it, so nothing it started
        // outlives the bridge.
        let _refill_done = self.refilling.lock().await;
        let all: Vec<Sandbox<Started>> = self.ready.lock().await.drain(..).collect();
        futures::future::join_all(all.into_iter().map(Sandbox::shutdown)).await;
    }
}
