//! Turns inbox items into the plain Python values the driver dispatches on:
//! tuples whose first item names the message, dicts for server metadata.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use codemode_proto::v1::{rpc_response, ErrorKind, Init, RpcResponse, ServerInfo};

use crate::session::Inbound;

pub fn inbound<'py>(py: Python<'py>, item: Inbound) -> PyResult<Bound<'py, PyTuple>> {
    match item {
        Inbound::Init(init) => ("init", init_dict(py, &init)?).into_pyobject(py),
        Inbound::Execute { id, code } => ("execute", id, code).into_pyobject(py),
        Inbound::AddServers(servers) => {
            ("add_servers", servers_list(py, &servers)?).into_pyobject(py)
        }
        Inbound::Rpc(response) => {
            let id = response.id;
            let (ok_json, kind, message) = rpc_answer(response);
            ("rpc", id, ok_json, kind, message).into_pyobject(py)
        }
    }
}

/// An RPC answer as Python sees it: `(ok_json, None, None)` or
/// `(None, error_kind, message)`.
pub type RpcAnswer = (Option<String>, Option<&'static str>, Option<String>);

pub fn rpc_answer(response: RpcResponse) -> RpcAnswer {
    match response.result {
        Some(rpc_response::Result::OkJson(json)) => (Some(json), None, None),
        Some(rpc_response::Result::Error(error)) => {
            (None, Some(error_kind(error.kind)), Some(error.message))
        }
        // The reader refuses responses without a result.
        None => (None, Some("internal"), Some(String::new())),
    }
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

fn init_dict<'py>(py: Python<'py>, init: &Init) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("servers", servers_list(py, &init.servers)?)?;
    let discovered = PyList::empty(py);
    for server in &init.discovered {
        let entry = PyDict::new(py);
        entry.set_item("name", &server.name)?;
        entry.set_item("description", &server.description)?;
        discovered.append(entry)?;
    }
    dict.set_item("discovered", discovered)?;
    Ok(dict)
}

fn servers_list<'py>(py: Python<'py>, servers: &[ServerInfo]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for server in servers {
        let entry = PyDict::new(py);
        entry.set_item("name", &server.name)?;
        entry.set_item("alias", &server.alias)?;
        entry.set_item("description", &server.description)?;
        entry.set_item("cwd", &server.cwd)?;
        let tools = PyList::empty(py);
        for tool in &server.tools {
            let t = PyDict::new(py);
            t.set_item("name", &tool.name)?;
            t.set_item("alias", &tool.alias)?;
            t.set_item("description", &tool.description)?;
            t.set_item("input_schema_json", &tool.input_schema_json)?;
            tools.append(t)?;
        }
        entry.set_item("tools", tools)?;
        list.append(entry)?;
    }
    Ok(list)
}
