//! The typed records the Rust side hands to the guest's Python: one frozen
//! class per inbox message (`Init`, `Execute`, `AddServers`, `RpcAnswer`),
//! the server metadata they carry, and the embedded module table. Python
//! dispatches on the class and reads named attributes; `_codemode.pyi`
//! declares the same shapes for the type checker, so a field renamed here
//! must be renamed there.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use codemode_proto::v1::{self, rpc_response, ErrorKind, RpcResponse};

use crate::embedded;
use crate::session::Inbound;

/// The session's start: the servers to install and every server the host knows.
#[pyclass(frozen, get_all, module = "_codemode")]
pub struct Init {
    /// `tuple[ServerInfo, ...]`
    servers: Py<PyTuple>,
    /// `tuple[DiscoveredServer, ...]`
    discovered: Py<PyTuple>,
}

/// Run `code` as cell `id`.
#[pyclass(frozen, get_all, module = "_codemode")]
pub struct Execute {
    id: u64,
    code: String,
}

/// More servers to install (one already loaded is replaced).
#[pyclass(frozen, get_all, module = "_codemode")]
pub struct AddServers {
    /// `tuple[ServerInfo, ...]`
    servers: Py<PyTuple>,
}

/// The host's answer to RPC `id`: `ok_json` on success; otherwise `None`
/// there and the error in `error_kind` (the spelling of
/// `mcp.runtime.MCPError.kind`) and `error_message`, both empty on success.
#[pyclass(frozen, get_all, module = "_codemode")]
pub struct RpcAnswer {
    id: u64,
    ok_json: Option<String>,
    error_kind: &'static str,
    error_message: String,
}

#[pyclass(frozen, get_all, module = "_codemode")]
pub struct ServerInfo {
    name: String,
    alias: String,
    description: String,
    /// The server's working directory on the host; empty when not configured.
    cwd: String,
    /// `tuple[ToolInfo, ...]`
    tools: Py<PyTuple>,
}

#[pyclass(frozen, get_all, module = "_codemode")]
pub struct ToolInfo {
    name: String,
    alias: String,
    description: String,
    /// The tool's JSON Schema as the host sent it, unparsed.
    input_schema_json: String,
}

#[pyclass(frozen, get_all, module = "_codemode")]
pub struct DiscoveredServer {
    name: String,
    description: String,
}

/// One module of the guest's embedded Python, for `_codemode_boot`.
#[pyclass(frozen, get_all, module = "_codemode")]
pub struct EmbeddedModule {
    /// Path under `guest/python/`.
    path: &'static str,
    source: &'static str,
    /// The compiled module (`marshal` format of this CPython).
    code: &'static [u8],
    is_package: bool,
}

/// An inbox item as the Python dispatcher receives it.
pub fn inbound(py: Python<'_>, item: Inbound) -> PyResult<Bound<'_, PyAny>> {
    Ok(match item {
        Inbound::Init(init) => {
            let discovered = init.discovered.into_iter().map(|d| DiscoveredServer {
                name: d.name,
                description: d.description,
            });
            let record = Init {
                servers: servers(py, init.servers)?,
                discovered: tuple_of(py, discovered)?,
            };
            Bound::new(py, record)?.into_any()
        }
        Inbound::Execute { id, code } => Bound::new(py, Execute { id, code })?.into_any(),
        Inbound::AddServers(list) => {
            let record = AddServers {
                servers: servers(py, list)?,
            };
            Bound::new(py, record)?.into_any()
        }
        Inbound::Rpc(response) => Bound::new(py, rpc_answer(response))?.into_any(),
    })
}

pub fn rpc_answer(response: RpcResponse) -> RpcAnswer {
    let id = response.id;
    let (ok_json, error_kind, error_message) = match response.result {
        Some(rpc_response::Result::OkJson(json)) => (Some(json), "", String::new()),
        Some(rpc_response::Result::Error(error)) => (None, error_kind(error.kind), error.message),
        // The reader refuses responses without a result.
        None => (None, "internal", String::new()),
    };
    RpcAnswer {
        id,
        ok_json,
        error_kind,
        error_message,
    }
}

/// The embedded module table `_codemode_boot.install` takes: name -> module.
pub fn module_table(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let table = PyDict::new(py);
    for module in embedded::MODULES {
        let record = EmbeddedModule {
            path: module.path,
            source: module.text,
            code: module.code,
            is_package: module.is_package,
        };
        table.set_item(module.name, Bound::new(py, record)?)?;
    }
    Ok(table)
}

/// The Python spelling of an RPC error kind (`mcp.runtime.MCPError.kind`).
fn error_kind(kind: i32) -> &'static str {
    match ErrorKind::try_from(kind) {
        Ok(ErrorKind::NotAllowed) => "not_allowed",
        Ok(ErrorKind::NotFound) => "not_found",
        Ok(ErrorKind::InvalidArguments) => "invalid_arguments",
        Ok(ErrorKind::ServerError) => "server_error",
        Ok(ErrorKind::Timeout) => "timeout",
        Ok(ErrorKind::BudgetExceeded) => "budget_exceeded",
        Ok(ErrorKind::Internal) => "internal",
        Ok(ErrorKind::Unspecified) | Err(_) => "unspecified",
    }
}

fn servers(py: Python<'_>, list: Vec<v1::ServerInfo>) -> PyResult<Py<PyTuple>> {
    let mut records = Vec::with_capacity(list.len());
    for server in list {
        let tools = server.tools.into_iter().map(|tool| ToolInfo {
            name: tool.name,
            alias: tool.alias,
            description: tool.description,
            input_schema_json: tool.input_schema_json,
        });
        records.push(ServerInfo {
            name: server.name,
            alias: server.alias,
            description: server.description,
            cwd: server.cwd,
            tools: tuple_of(py, tools)?,
        });
    }
    tuple_of(py, records)
}

/// A tuple of new instances of a record class: tuples, so Python cannot
/// change what the host sent by accident.
fn tuple_of<T>(py: Python<'_>, items: impl IntoIterator<Item = T>) -> PyResult<Py<PyTuple>>
where
    T: pyo3::PyClass + Into<pyo3::PyClassInitializer<T>>,
{
    let objects = items
        .into_iter()
        .map(|item| Bound::new(py, item))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(py, objects)?.unbind())
}
