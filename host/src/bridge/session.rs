//! One session: a sandbox kept between calls (state persists like a
//! notebook), the servers installed in it, and the replacement of a
//! sandbox that died, with a note that its state was lost.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_proto::v1::{Display, Init, Limits as WireLimits};
use tokio_util::sync::CancellationToken;

use super::rpc::SessionRpc;
use super::{Bridge, RunOutcome, RunStatus, Shown};
use crate::sandbox::{CellRequest, OutputListener, Sandbox, SandboxError, Termination};

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
        let cell = sb.run_cell(req).await;
        self.last_used = Instant::now();
        if cell.termination.loses_sandbox() {
            if let Some(sb) = self.sandbox.take() {
                tokio::spawn(sb.shutdown());
            }
            self.lost = None;
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
        let (status, error) = ending(cell.termination, timeout, &mut notes);
        let shown = match status {
            RunStatus::Success => cell.display.and_then(shown),
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
            shown,
        }
    }
}

/// What the client sees of the guest's `Display`: nothing when it is
/// empty; its JSON only when it parses (the guest is untrusted).
fn shown(display: Display) -> Option<Shown> {
    let result = match display.result_json.as_str() {
        "" => None,
        json => serde_json::from_str(json)
            .inspect_err(|e| tracing::debug!("a cell's result is not valid JSON: {e}"))
            .ok(),
    };
    if display.text.is_empty() && result.is_none() {
        return None;
    }
    Some(Shown {
        text: display.text,
        result,
    })
}

/// The one place a cell's termination becomes the status and error a
/// client sees (and a note when the session's state is gone).
fn ending(
    termination: Termination,
    timeout: Duration,
    notes: &mut Vec<String>,
) -> (RunStatus, Option<String>) {
    let exceeded = || format!("execution exceeded {}s", timeout.as_secs());
    let cancelled = || "execution was cancelled".to_string();
    match termination {
        Termination::Success => (RunStatus::Success, None),
        Termination::Raised(e) => (RunStatus::Error, Some(format_py_error(&e))),
        Termination::Timeout(e) => (
            RunStatus::Timeout,
            Some(e.map_or_else(exceeded, |e| format_py_error(&e))),
        ),
        Termination::Cancelled(e) => (
            RunStatus::Cancelled,
            Some(e.map_or_else(cancelled, |e| format_py_error(&e))),
        ),
        Termination::SandboxLost {
            after,
            cancelled: by_cancel,
        } => {
            notes.push(format!(
                "note: the cell ignored the interrupt, so its sandbox was killed after {:.1}s; \
                 variables and imports from earlier calls are gone",
                after.as_secs_f64()
            ));
            if by_cancel {
                (RunStatus::Cancelled, Some(cancelled()))
            } else {
                (RunStatus::Timeout, Some(exceeded()))
            }
        }
        Termination::PeerGone(e) => {
            notes.push("note: the sandbox was discarded; the next call starts a fresh one without earlier state".into());
            (RunStatus::Error, Some(format!("sandbox failed: {e}")))
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
