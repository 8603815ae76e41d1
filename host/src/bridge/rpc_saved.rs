//! The guest's saved-tool RPCs: save, list, load. The checks live in
//! [`crate::saved`]; this maps their outcome onto RPC answers and keeps host
//! paths and I/O details out of what the sandbox is told (they go to the
//! log instead).

use codemode_proto::v1::{ErrorKind, LoadSavedTool, RpcError, SaveTool};
use serde_json::json;

use super::rpc::{chrono_like_now, err, SessionRpc};
use crate::saved::SavedError;

/// What the sandbox learns about a failure (`load` already turned a
/// non-regular file into NotFound).
fn saved_err(e: SavedError) -> RpcError {
    match e {
        SavedError::BadName { .. } | SavedError::BadSource { .. } => {
            err(ErrorKind::InvalidArguments, e.to_string())
        }
        SavedError::NotOwner { .. } | SavedError::Quota { .. } => {
            err(ErrorKind::NotAllowed, e.to_string())
        }
        SavedError::NotFound { .. } => err(ErrorKind::NotFound, e.to_string()),
        SavedError::NotRegular { .. }
        | SavedError::NotADirectory { .. }
        | SavedError::Io { .. } => {
            tracing::warn!("saved tools: {e}");
            err(
                ErrorKind::Internal,
                "the host could not access its saved tools (details are in codemode's log)",
            )
        }
    }
}

/// Runs filesystem work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, SavedError> + Send + 'static,
) -> Result<T, RpcError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| err(ErrorKind::Internal, format!("saved tools: {e}")))?
        .map_err(saved_err)
}

impl SessionRpc {
    pub(super) async fn save_tool(&self, req: SaveTool) -> Result<String, RpcError> {
        let saved = self.saved.clone();
        let session = self.session.clone();
        let name = req.name.clone();
        let result = blocking(move || saved.save(&session, &req.name, &req.source)).await;
        if let Some(audit) = &self.audit {
            // The name is only logged once it is known to be an identifier.
            let valid = crate::saved::check_name(&name).is_ok();
            audit.record(json!({
                "time": chrono_like_now(),
                "session": self.session,
                "saved_tool": if valid { name.as_str() } else { "(invalid name)" },
                "status": if result.is_ok() { "saved" } else { "refused" },
            }));
        }
        let done = result?;
        Ok(json!({"name": done.name, "bytes": done.bytes, "replaced": done.replaced}).to_string())
    }

    pub(super) async fn list_saved_tools(&self) -> Result<String, RpcError> {
        let saved = self.saved.clone();
        let entries = blocking(move || saved.list()).await?;
        let list: Vec<_> = entries
            .iter()
            .map(|e| json!({"name": e.name, "bytes": e.bytes}))
            .collect();
        Ok(json!(list).to_string())
    }

    pub(super) async fn load_saved_tool(&self, req: LoadSavedTool) -> Result<String, RpcError> {
        let saved = self.saved.clone();
        let name = req.name.clone();
        let source = blocking(move || saved.load(&req.name)).await?;
        Ok(json!({"name": name, "source": source}).to_string())
    }
}
