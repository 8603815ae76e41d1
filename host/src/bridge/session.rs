//! One session: a sandbox kept between calls (state persists like a
//! notebook), the servers installed in it, and the replacement of a
//! sandbox that died, with a note that its state was lost.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_proto::v1::{Init, Limits as WireLimits};
use tokio_util::sync::CancellationToken;

use super::rpc::SessionRpc;
use super::{Bridge, RunOutcome, RunStatus};
use crate::sandbox::{CellRequest, CellStatus, OutputListener, Sandbox, SandboxError};

/// Total bytes of images one cell may return: they travel in the Finished
/// frame, which must fit the guest frame limit.
const MAX_RICH_BYTES: u64 = 3 * 1024 * 1024;

pub struct Session {
    pub id: String,
    sandbox: Option<Sandbox>,
    servers: BTreeSet<String>,
    pub last_used: Instant,
    /// Set when the previous sandbox died: told to the model on the next call.
    lost: Option<String>,
}

impl Session {
    pub fn new(id: String) -> Self {
        Self {
            id,
            sandbox: None,
            servers: BTreeSet::new(),
            last_used: Instant::now(),
            lost: None,
        }
    }

    pub async fn close(&mut self) {
        if let Some(sb) = self.sandbox.take() {
            sb.shutdown().await;
        }
    }

    /// Makes sure a live, initialized sandbox with `wanted` servers exists.
    async fn prepare(
        &mut self,
        bridge: &Arc<Bridge>,
        wanted: &[String],
        notes: &mut Vec<String>,
    ) -> Result<(), PrepareError> {
        if let Some(sb) = self.sandbox.as_mut() {
            if !sb.is_alive() {
                self.sandbox = None;
                self.lost
                    .get_or_insert_with(|| "the sandbox exited (out of memory or killed)".into());
            }
        }
        if let Some(why) = self.lost.take() {
            notes.push(format!("note: {why}; this call runs in a fresh sandbox and earlier variables and imports are gone"));
        }
        let new: BTreeSet<String> = wanted
            .iter()
            .filter(|s| !self.servers.contains(*s))
            .cloned()
            .collect();
        if self.sandbox.is_none() {
            let mut all = self.servers.clone();
            all.extend(new.iter().cloned());
            let infos = bridge.pool.server_infos(&all).await?;
            let sb = bridge
                .warm_pool()
                .take()
                .await
                .map_err(PrepareError::start)?;
            let init = Init {
                protocol_major: codemode_proto::PROTOCOL_MAJOR,
                protocol_minor: codemode_proto::PROTOCOL_MINOR,
                servers: infos,
                discovered: bridge.discovered(),
                limits: Some(WireLimits {
                    max_output_bytes: bridge.settings.max_output_bytes,
                    max_frame_bytes: crate::sandbox::GUEST_FRAME_MAX as u32,
                    max_rich_bytes: MAX_RICH_BYTES,
                }),
                ..Init::default()
            };
            self.sandbox = Some(sb.init(init).await.map_err(PrepareError::Init)?);
            self.servers = all;
        } else if !new.is_empty() {
            let infos = bridge.pool.server_infos(&new).await?;
            if let Some(sb) = self.sandbox.as_mut() {
                sb.add_servers(infos)
                    .await
                    .map_err(PrepareError::AddServers)?;
            }
            self.servers.extend(new);
        }
        Ok(())
    }

    pub async fn run(
        &mut self,
        bridge: &Arc<Bridge>,
        code: &str,
        wanted: &[String],
        timeout: Duration,
        listener: &mut dyn OutputListener,
        cancel: CancellationToken,
    ) -> RunOutcome {
        self.last_used = Instant::now();
        let mut notes = Vec::new();
        if let Err(e) = self.prepare(bridge, wanted, &mut notes).await {
            let mut out = RunOutcome::failed(RunStatus::Error, e.to_string(), wanted.to_vec());
            out.notes = notes;
            return out;
        }
        let handler = Arc::new(SessionRpc {
            pool: bridge.pool.clone(),
            session: self.id.clone(),
            servers: self.servers.clone(),
            policy: bridge.policy.clone(),
            audit: bridge.audit(),
            saved: bridge.saved(),
        });
        let Some(sb) = self.sandbox.as_mut() else {
            return RunOutcome::failed(
                RunStatus::Error,
                "internal: no sandbox after prepare",
                wanted.to_vec(),
            );
        };
        let req = CellRequest {
            code: code.to_string(),
            timeout,
            max_output_bytes: usize::try_from(bridge.settings.max_output_bytes)
                .unwrap_or(usize::MAX),
            call_budget: bridge.settings.call_budget,
            handler: Arc::new(handler),
            listener,
            cancel,
        };
        let servers: Vec<String> = self.servers.iter().cloned().collect();
        let result = sb.run_cell(req).await;
        self.last_used = Instant::now();
        match result {
            Ok(cell) => {
                if let Some(lost) = &cell.sandbox_lost {
                    notes.push(format!("note: {lost}"));
                    if let Some(sb) = self.sandbox.take() {
                        tokio::spawn(sb.shutdown());
                    }
                }
                if cell.dropped_rich > 0 {
                    notes.push(format!(
                        "note: {} images were dropped: a cell returns at most {} images, {} MiB in all",
                        cell.dropped_rich,
                        crate::sandbox::MAX_RICH_OUTPUTS,
                        crate::sandbox::MAX_RICH_BYTES >> 20
                    ));
                }
                if cell.ended_processes > 0 {
                    notes.push(ended_note(cell.ended_processes));
                }
                if cell.running_processes > 0 {
                    notes.push(running_note(cell.running_processes));
                }
                let status = match cell.status {
                    CellStatus::Success => RunStatus::Success,
                    CellStatus::Error => RunStatus::Error,
                    CellStatus::Timeout => RunStatus::Timeout,
                    CellStatus::Cancelled => RunStatus::Cancelled,
                };
                let error = match (&cell.error, status) {
                    (Some(e), _) => Some(format_py_error(e)),
                    (None, RunStatus::Timeout) => {
                        Some(format!("execution exceeded {}s", timeout.as_secs()))
                    }
                    (None, RunStatus::Cancelled) => Some("execution was cancelled".into()),
                    _ => None,
                };
                RunOutcome {
                    status,
                    stdout: cell.stdout.text(),
                    stderr: cell.stderr.text(),
                    error,
                    servers,
                    duration: cell.duration,
                    rich: cell.rich,
                    notes,
                    timeout_secs: timeout.as_secs(),
                }
            }
            Err(e) => {
                if let Some(sb) = self.sandbox.take() {
                    tokio::spawn(sb.shutdown());
                }
                self.lost = None;
                notes.push("note: the sandbox was discarded; the next call starts a fresh one without earlier state".into());
                let mut out =
                    RunOutcome::failed(RunStatus::Error, format!("sandbox failed: {e}"), servers);
                out.notes = notes;
                out
            }
        }
    }
}

/// Tells the model that processes it started outlive the cell.
fn running_note(n: u32) -> String {
    let what = if n == 1 {
        "1 process started in this session is".to_string()
    } else {
        format!("{n} processes started in this session are")
    };
    format!("note: {what} still running after the cell (runtime.keep_processes() is on); they keep using this sandbox's CPU, memory and process allowance until they exit or the session ends")
}

fn ended_note(n: u32) -> String {
    let what = if n == 1 {
        "1 process this cell left running was".to_string()
    } else {
        format!("{n} processes this cell left running were")
    };
    format!("note: {what} ended when the cell finished; to keep processes running between cells, call runtime.keep_processes() before starting them")
}

/// Why a session could not get a sandbox ready for a call.
#[derive(Debug, thiserror::Error)]
enum PrepareError {
    #[error(transparent)]
    Servers(#[from] crate::proxy::ProxyError),
    #[error("could not start a sandbox: {source}{hint}")]
    Start {
        source: SandboxError,
        hint: &'static str,
    },
    #[error("could not initialize the sandbox: {0}")]
    Init(SandboxError),
    #[error("could not add servers to the sandbox: {0}")]
    AddServers(SandboxError),
}

impl PrepareError {
    /// A start failure, with a hint when the image is missing.
    fn start(source: SandboxError) -> Self {
        let text = source.to_string();
        let missing_image = text.contains("image not known")
            || text.contains("No such image")
            || text.contains("Unable to find image");
        let hint = if missing_image {
            "; build it with `codemode image build` (or run with --runtime bubblewrap)"
        } else {
            ""
        };
        Self::Start { source, hint }
    }
}

fn format_py_error(e: &codemode_proto::v1::PyError) -> String {
    let head = if e.message.is_empty() {
        e.r#type.clone()
    } else {
        format!("{}: {}", e.r#type, e.message)
    };
    if e.traceback.trim().is_empty() {
        head
    } else {
        let tb = e.traceback.trim_end();
        if tb.ends_with(&head) {
            tb.to_string()
        } else {
            format!("{tb}\n{head}")
        }
    }
}
