//! The MCP server a client launches: one tool, `run_python`, a capability
//! resource with the sandbox manual, and the mapping of MCP progress and
//! cancellation onto cells. All bridge logic lives in [`crate::bridge`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use codemode_proto::v1::Stream;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;

use crate::bridge::{Bridge, RunOutcome, RunStatus};
use crate::render::render;
use crate::sandbox::OutputListener;

pub const MANUAL: &str = include_str!("manual.md");
pub const MANUAL_URI: &str = "resource://codemode/manual";

mod args;
pub(crate) mod describe;
pub use args::RunPythonArgs;
pub use describe::{server_info, tool_definition, TOOL_NAME};
static CONNECTIONS: AtomicU64 = AtomicU64::new(1);

/// One client connection.
#[derive(Clone)]
pub struct CodemodeServer {
    bridge: Arc<Bridge>,
    connection: u64,
}

impl CodemodeServer {
    pub fn new(bridge: Arc<Bridge>) -> Self {
        Self {
            bridge,
            connection: CONNECTIONS.fetch_add(1, Ordering::SeqCst),
        }
    }
}

/// Progress notifications one call may send at most.
const MAX_PROGRESS_NOTIFICATIONS: u64 = 1000;
/// The shortest gap between two progress notifications: output that
/// arrives faster is joined into the next one (at most 20 a second).
const PROGRESS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);
/// Bytes of output one progress notification carries at most.
const MAX_PROGRESS_MESSAGE: usize = 16 * 1024;

/// Streams cell output as MCP progress notifications.
/// The guest caps what it streams, but it is untrusted: the host stops
/// forwarding after this budget of bytes and of chunks (the full capped
/// output is still in the result), and the forwarder joins chunks so the
/// client sees at most [`MAX_PROGRESS_NOTIFICATIONS`], 20 a second.
struct ProgressListener {
    tx: tokio::sync::mpsc::UnboundedSender<String>,
    budget: usize,
    chunks_left: u32,
}

impl OutputListener for ProgressListener {
    fn chunk(&mut self, stream: Stream, data: &[u8]) {
        if self.budget == 0 || data.is_empty() {
            return;
        }
        if self.chunks_left == 0 || data.len() > self.budget {
            self.budget = 0;
            let _ = self
                .tx
                .send("[... further output is in the result ...]".into());
            return;
        }
        self.chunks_left -= 1;
        self.budget -= data.len();
        let text = String::from_utf8_lossy(data);
        let msg = if stream == Stream::Stderr {
            format!("stderr: {text}")
        } else {
            text.into_owned()
        };
        let _ = self.tx.send(msg);
    }
}

impl ServerHandler for CodemodeServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(server_info())
        .with_instructions(describe::instructions(
            self.bridge.pool.configs(),
            &self
                .bridge
                .discovery
                .untrusted
                .iter()
                .map(|u| u.name.clone())
                .collect::<Vec<_>>(),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let s = &self.bridge.settings;
        Ok(ListToolsResult::with_all_items(vec![tool_definition(
            s.max_timeout,
            s.timeout,
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mode = self.bridge.settings.output_mode;
        if request.name != TOOL_NAME {
            let out = RunOutcome::failed(
                RunStatus::ValidationError,
                format!(
                    "unknown tool {:?}; the only tool is {TOOL_NAME}",
                    request.name
                ),
                vec![],
            );
            return Ok(render(&out, mode).into());
        }
        let default_session = format!("connection-{}", self.connection);
        let req = match RunPythonArgs::parse(request.arguments) {
            Ok(args) => args.into_request(&default_session),
            Err(err) => {
                return Ok(render(
                    &RunOutcome::failed(RunStatus::ValidationError, err.to_string(), vec![]),
                    mode,
                )
                .into())
            }
        };
        // rmcp cancels this token on `notifications/cancelled` for the request.
        let cancel = context.ct.child_token();
        let result = match context.meta.get_progress_token() {
            Some(token) => {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
                let peer = context.peer.clone();
                let forward = tokio::spawn(async move {
                    let mut n = 0u64;
                    let mut last: Option<tokio::time::Instant> = None;
                    while let Some(mut message) = rx.recv().await {
                        if let Some(at) = last {
                            tokio::time::sleep_until(at + PROGRESS_INTERVAL).await;
                        }
                        while message.len() < MAX_PROGRESS_MESSAGE {
                            match rx.try_recv() {
                                Ok(more) => message.push_str(&more),
                                Err(_) => break,
                            }
                        }
                        n += 1;
                        last = Some(tokio::time::Instant::now());
                        let mut p = ProgressNotificationParam::new(token.clone(), n as f64);
                        p.message = Some(message);
                        if n > MAX_PROGRESS_NOTIFICATIONS || peer.notify_progress(p).await.is_err()
                        {
                            // Drain the rest: the result has the output.
                            while rx.recv().await.is_some() {}
                            break;
                        }
                    }
                });
                let budget = usize::try_from(self.bridge.settings.max_output_bytes)
                    .unwrap_or(usize::MAX)
                    .saturating_mul(2);
                let mut listener = ProgressListener {
                    tx,
                    budget,
                    chunks_left: 10_000,
                };
                let out = self.bridge.run(req, &mut listener, cancel).await;
                drop(listener);
                let _ = forward.await;
                out
            }
            None => {
                self.bridge
                    .run(req, &mut crate::sandbox::NoListener, cancel)
                    .await
            }
        };
        Ok(render(&result, mode).into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let resource: Resource = serde_json::from_value(json!({
            "uri": MANUAL_URI,
            "name": "codemode-manual",
            "title": "codemode sandbox manual",
            "description": "How to discover, call and combine MCP tools from Python inside the sandbox.",
            "mimeType": "text/markdown",
            "size": MANUAL.len(),
        }))
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(ListResourcesResult::with_all_items(vec![resource]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if request.uri != MANUAL_URI {
            return Err(McpError::invalid_params(
                format!(
                    "unknown resource {:?}; the only resource is {MANUAL_URI}",
                    request.uri
                ),
                None,
            ));
        }
        let mut contents = ResourceContents::text(MANUAL, MANUAL_URI);
        if let ResourceContents::TextResourceContents { mime_type, .. } = &mut contents {
            *mime_type = Some("text/markdown".into());
        }
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A guest that streams a flood of tiny chunks gets a bounded number of
    /// progress messages; empty chunks send none.
    #[test]
    fn progress_is_bounded_by_chunks_as_well_as_bytes() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut listener = ProgressListener {
            tx,
            budget: usize::MAX,
            chunks_left: 100,
        };
        for _ in 0..1000 {
            listener.chunk(Stream::Stdout, b"");
        }
        for _ in 0..10_000 {
            listener.chunk(Stream::Stdout, b"x");
        }
        drop(listener);
        let mut sent = Vec::new();
        while let Ok(m) = rx.try_recv() {
            sent.push(m);
        }
        assert_eq!(sent.len(), 101, "100 chunks and one notice");
        assert_eq!(
            sent.last().map(String::as_str),
            Some("[... further output is in the result ...]")
        );
    }
}
