//! The pool of proxied MCP servers: started on first use, kept warm,
//! restarted after a crash, all shut down with the bridge. Also turns each
//! server's tool list into the metadata the guest installs as modules.

pub(crate) mod alias;
mod client;
mod docs;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use codemode_proto::v1::{ServerInfo, ToolInfo};
use rmcp::model::{CallToolResult, Tool};
use tokio::sync::Mutex;

pub use alias::{assign as assign_aliases, sanitize};
pub use client::{ProxiedServer, ProxyError};
pub use docs::{format_doc, Detail};

use crate::config::ServerConfig;
use crate::index::ToolIndex;

pub struct ServerPool {
    configs: BTreeMap<String, ServerConfig>,
    aliases: BTreeMap<String, String>,
    running: Mutex<HashMap<String, Arc<ProxiedServer>>>,
    start_locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    call_timeout: Duration,
    /// Every server's tools as last listed, for search (see [`crate::index`]).
    index: Arc<ToolIndex>,
}

impl ServerPool {
    pub fn new(
        configs: BTreeMap<String, ServerConfig>,
        call_timeout: Duration,
        index: Arc<ToolIndex>,
    ) -> Self {
        let names: Vec<String> = configs.keys().cloned().collect();
        let aliases = names
            .iter()
            .cloned()
            .zip(alias::assign(&names, "server"))
            .collect();
        Self {
            configs,
            aliases,
            running: Mutex::new(HashMap::new()),
            start_locks: Mutex::new(HashMap::new()),
            call_timeout,
            index,
        }
    }

    pub fn configs(&self) -> &BTreeMap<String, ServerConfig> {
        &self.configs
    }

    pub fn index(&self) -> &ToolIndex {
        &self.index
    }

    pub fn alias(&self, name: &str) -> String {
        self.aliases
            .get(name)
            .cloned()
            .unwrap_or_else(|| sanitize(name, "server"))
    }

    fn unknown(&self, server: &str) -> ProxyError {
        let known: Vec<&str> = self.configs.keys().map(String::as_str).collect();
        ProxyError::Unknown {
            server: server.to_string(),
            known: if known.is_empty() {
                "none configured".into()
            } else {
                known.join(", ")
            },
        }
    }

    /// The running client for `name`, started (or restarted) as needed.
    pub async fn get(&self, name: &str) -> Result<Arc<ProxiedServer>, ProxyError> {
        let cfg = self.configs.get(name).ok_or_else(|| self.unknown(name))?;
        let lock = {
            let mut locks = self.start_locks.lock().await;
            locks.entry(name.to_string()).or_default().clone()
        };
        let _starting = lock.lock().await;
        if let Some(server) = self.running.lock().await.get(name) {
            if !server.is_dead() {
                return Ok(server.clone());
            }
        }
        if let Some(old) = self.running.lock().await.remove(name) {
            tracing::warn!(server = name, "server connection is gone; restarting it");
            old.shutdown().await;
        }
        let server = ProxiedServer::start(cfg, self.index.clone()).await?;
        tracing::info!(server = name, "started proxied server");
        self.running
            .lock()
            .await
            .insert(name.to_string(), server.clone());
        Ok(server)
    }

    pub async fn tools(&self, name: &str) -> Result<Arc<Vec<Tool>>, ProxyError> {
        self.get(name).await?.tools(self.call_timeout).await
    }

    /// The metadata the guest needs to install `name` as a module.
    pub async fn server_info(&self, name: &str) -> Result<ServerInfo, ProxyError> {
        let tools = self.tools(name).await?;
        let cfg = self.configs.get(name).ok_or_else(|| self.unknown(name))?;
        let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        let aliases = alias::assign(&names, "tool");
        Ok(ServerInfo {
            name: name.to_string(),
            alias: self.alias(name),
            description: cfg.description.clone(),
            cwd: cfg
                .cwd
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            tools: tools
                .iter()
                .zip(aliases)
                .map(|(t, alias)| ToolInfo {
                    name: t.name.to_string(),
                    alias,
                    description: t.description.as_deref().unwrap_or_default().to_string(),
                    input_schema_json: serde_json::to_string(&*t.input_schema)
                        .unwrap_or_else(|_| "{}".into()),
                })
                .collect(),
        })
    }

    /// [`Self::server_info`] for each name, in order.
    pub async fn server_infos<'a>(
        &self,
        names: impl IntoIterator<Item = &'a String>,
    ) -> Result<Vec<ServerInfo>, ProxyError> {
        let mut out = Vec::new();
        for name in names {
            out.push(self.server_info(name).await?);
        }
        Ok(out)
    }

    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallToolResult, ProxyError> {
        let client = self.get(server).await?;
        let result = client.call(tool, arguments, self.call_timeout).await;
        if let Err(ProxyError::Crashed { .. }) = &result {
            if let Some(dead) = self.running.lock().await.remove(server) {
                dead.shutdown().await;
            }
        }
        result
    }

    /// Names of servers currently running (for `doctor` and tests).
    pub async fn shutdown_all(&self) {
        let servers: Vec<Arc<ProxiedServer>> =
            self.running.lock().await.drain().map(|(_, s)| s).collect();
        futures::future::join_all(servers.iter().map(|s| s.shutdown())).await;
    }
}
