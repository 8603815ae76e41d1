//! Answers one session's guest RPCs. The guest is untrusted: every request
//! is checked against the session's servers and the policy here, on the
//! host, whatever the guest's own modules claim.

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use codemode_proto::v1::{
    rpc_request::Call, Detail as WireDetail, ErrorKind, RpcError, SearchToolDocs, ServerInfo,
};
use serde_json::{json, Value};

use super::policy::Policy;
use crate::index::search::{self, Catalog};
use crate::proxy::{format_doc, Detail, ProxyError, ServerPool};
use crate::sandbox::{RpcFuture, RpcHandler};
use crate::saved::SavedTools;

/// Appends one JSON line per proxied call.
pub struct AuditLog {
    file: Mutex<std::fs::File>,
}

impl AuditLog {
    pub fn open(path: &std::path::Path) -> std::io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Self {
            file: Mutex::new(file),
        })
    }

    pub(super) fn record(&self, entry: Value) {
        if let Ok(mut f) = self.file.lock() {
            let _ = writeln!(f, "{entry}");
        }
    }
}

pub struct SessionRpc {
    pub pool: Arc<ServerPool>,
    pub session: String,
    pub servers: BTreeSet<String>,
    pub policy: Policy,
    pub audit: Option<Arc<AuditLog>>,
    pub saved: Arc<SavedTools>,
}

pub(super) fn err(kind: ErrorKind, message: impl Into<String>) -> RpcError {
    RpcError {
        kind: kind as i32,
        message: message.into(),
    }
}

fn proxy_err(e: ProxyError) -> RpcError {
    let kind = match &e {
        ProxyError::Unknown { .. } => ErrorKind::NotFound,
        ProxyError::Timeout { .. } => ErrorKind::Timeout,
        _ => ErrorKind::ServerError,
    };
    err(kind, e.to_string())
}

fn detail(d: i32) -> Detail {
    if d == WireDetail::Full as i32 {
        Detail::Full
    } else {
        Detail::Summary
    }
}

impl SessionRpc {
    fn check_server(&self, server: &str) -> Result<(), RpcError> {
        if self.servers.contains(server) {
            return Ok(());
        }
        let loaded: Vec<&str> = self.servers.iter().map(String::as_str).collect();
        Err(err(
            ErrorKind::NotAllowed,
            format!(
                "server {server:?} is not loaded in this session (loaded: {}); pass it in run_python's `servers` argument",
                if loaded.is_empty() { "none".to_string() } else { loaded.join(", ") }
            ),
        ))
    }

    /// The metadata of a server this session has loaded.
    async fn loaded_info(&self, server: &str) -> Result<ServerInfo, RpcError> {
        self.check_server(server)?;
        self.pool.server_info(server).await.map_err(proxy_err)
    }

    async fn answer(self: Arc<Self>, call: Call) -> Result<String, RpcError> {
        let value = match call {
            Call::ListServers(_) => json!(self.servers.iter().collect::<Vec<_>>()),
            Call::ListTools(req) => {
                let info = self.loaded_info(&req.server).await?;
                Value::Array(
                    info.tools
                        .iter()
                        .map(|t| {
                            json!({
                                "name": t.name, "alias": t.alias, "description": t.description,
                                "inputSchema": serde_json::from_str::<Value>(&t.input_schema_json).unwrap_or(Value::Null),
                            })
                        })
                        .collect(),
                )
            }
            Call::QueryToolDocs(req) => {
                let info = self.loaded_info(&req.server).await?;
                let d = detail(req.detail);
                if req.tool.is_empty() {
                    Value::Array(info.tools.iter().map(|t| format_doc(&info, t, d)).collect())
                } else {
                    let want = req.tool.to_lowercase();
                    let tool = info
                        .tools
                        .iter()
                        .find(|t| t.name.to_lowercase() == want || t.alias.to_lowercase() == want)
                        .ok_or_else(|| {
                            err(
                                ErrorKind::NotFound,
                                format!("tool {:?} not found on server {:?}", req.tool, req.server),
                            )
                        })?;
                    format_doc(&info, tool, d)
                }
            }
            Call::SearchToolDocs(req) => Value::Array(self.search(&req)),
            Call::CallTool(req) => return self.call_tool(req).await,
            Call::SaveTool(req) => return self.save_tool(req).await,
            Call::ListSavedTools(_) => return self.list_saved_tools().await,
            Call::LoadSavedTool(req) => return self.load_saved_tool(req).await,
        };
        Ok(value.to_string())
    }

    /// Ranks the indexed tools of every server this session may load
    /// (loaded or not, started or not), without the tools the policy
    /// denies; a server whose config changed since it was indexed is left
    /// out until it lists its tools again.
    fn search(&self, req: &SearchToolDocs) -> Vec<Value> {
        let indexed = self.pool.index().snapshot();
        let catalog: Vec<Catalog<'_>> = self
            .pool
            .configs()
            .iter()
            .filter_map(|(name, config)| {
                let entry = indexed
                    .get(name)
                    .filter(|e| e.fingerprint == crate::index::fingerprint(config))?;
                let names: Vec<String> = entry.tools.iter().map(|t| t.name.clone()).collect();
                let aliases = crate::proxy::assign_aliases(&names, "tool");
                let tools = entry
                    .tools
                    .iter()
                    .zip(aliases)
                    .filter(|(tool, _)| self.policy.tool_allowed(name, &tool.name))
                    .collect();
                Some(Catalog {
                    name,
                    alias: self.pool.alias(name),
                    description: &config.description,
                    tools,
                })
            })
            .collect();
        search::hits(
            &catalog,
            &req.query,
            req.limit,
            detail(req.detail),
            &self.servers,
        )
    }

    /// The server's own name for `wanted`: the guest resolves aliases and
    /// case itself, but it is untrusted, so the policy is checked against
    /// the name the server will run, found here.
    async fn canonical_tool(&self, server: &str, wanted: &str) -> Result<String, RpcError> {
        let tools = self.pool.tools(server).await.map_err(proxy_err)?;
        if tools.iter().any(|t| t.name == wanted) {
            return Ok(wanted.to_string());
        }
        let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        let aliases = crate::proxy::assign_aliases(&names, "tool");
        let want = wanted.to_lowercase();
        let matches: Vec<&String> = names
            .iter()
            .zip(&aliases)
            .filter(|(n, a)| n.to_lowercase() == want || **a == want)
            .map(|(n, _)| n)
            .collect();
        match matches.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(err(
                ErrorKind::NotFound,
                format!(
                    "tool {wanted:?} not found on server {server:?}; its tools: {}",
                    names.join(", ")
                ),
            )),
            many => Err(err(
                ErrorKind::InvalidArguments,
                format!(
                    "tool {wanted:?} is ambiguous on server {server:?}: {}",
                    many.iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    async fn call_tool(&self, mut req: codemode_proto::v1::CallTool) -> Result<String, RpcError> {
        self.check_server(&req.server)?;
        req.tool = self.canonical_tool(&req.server, &req.tool).await?;
        if !self.policy.tool_allowed(&req.server, &req.tool) {
            return Err(err(
                ErrorKind::NotAllowed,
                format!(
                    "tool {}.{} is denied by the bridge's policy",
                    req.server, req.tool
                ),
            ));
        }
        let args = if req.arguments_json.trim().is_empty() {
            serde_json::Map::new()
        } else {
            match serde_json::from_str::<Value>(&req.arguments_json) {
                Ok(Value::Object(m)) => m,
                Ok(other) => {
                    return Err(err(
                        ErrorKind::InvalidArguments,
                        format!(
                            "tool arguments must be a JSON object, got {}",
                            type_name(&other)
                        ),
                    ))
                }
                Err(e) => {
                    return Err(err(
                        ErrorKind::InvalidArguments,
                        format!("tool arguments are not valid JSON: {e}"),
                    ))
                }
            }
        };
        let started = Instant::now();
        let result = self.pool.call_tool(&req.server, &req.tool, args).await;
        let (status, answer) = match result {
            Ok(r) => {
                let text = serde_json::to_string(&r)
                    .map_err(|e| err(ErrorKind::Internal, e.to_string()))?;
                (
                    if r.is_error == Some(true) {
                        "tool_error"
                    } else {
                        "ok"
                    },
                    Ok(text),
                )
            }
            Err(e) => ("failed", Err(proxy_err(e))),
        };
        if let Some(audit) = &self.audit {
            audit.record(json!({
                "time": chrono_like_now(),
                "session": self.session,
                "server": req.server,
                "tool": req.tool,
                "duration_ms": started.elapsed().as_millis() as u64,
                "status": status,
                "request_bytes": req.arguments_json.len(),
                "response_bytes": answer.as_ref().map(|s| s.len()).unwrap_or(0),
            }));
        }
        answer
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Seconds since the epoch with milliseconds, for log lines.
pub(super) fn chrono_like_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl RpcHandler for Arc<SessionRpc> {
    fn call(&self, call: Call) -> RpcFuture {
        let this = self.clone();
        Box::pin(async move { this.answer(call).await })
    }
}
