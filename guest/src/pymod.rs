//! `_codemode`: the built-in module through which the guest's Python code
//! reaches the Rust side (inbox, output capture, RPC frames, cell life
//! cycle), and the record classes the inbox hands out (see `records`).
//! `guest/python/_codemode.pyi` declares all of it for the type checker.
//! Registered with `append_to_inittab!` before the interpreter
//! starts. Calls that may block on the channel release the GIL.

use std::borrow::Cow;
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};

use codemode_proto::v1::{
    guest_message::Kind, rpc_request::Call, CallTool, Detail, Display, ListSavedTools, ListServers,
    ListTools, LoadSavedTool, QueryToolDocs, RpcRequest, SaveTool, SearchToolDocs, Status,
};

use crate::cell::{self, CellFailure};
use crate::channel::{in_fork_child, lock};
use crate::fds;
use crate::output::StreamId;
use crate::records::{self, RpcAnswer};
use crate::session::{self, Session};

fn session() -> PyResult<&'static Session> {
    session::get()
        .ok_or_else(|| PyRuntimeError::new_err("the codemode guest session is not set up"))
}

/// How often a blocked caller looks for an interrupt: Cancel and the
/// cell's timeout arrive as SIGINT, which only Python's handler (run by
/// `check_signals`) turns into KeyboardInterrupt.
const INTERRUPT_POLL: Duration = Duration::from_millis(50);

/// Sends one RPC request and returns its id; the answer arrives in the inbox.
fn send_rpc(py: Python<'_>, call: Call) -> PyResult<u64> {
    send_rpc_routed(py, call, false)
}

/// Sends one RPC request and blocks until its answer, for callers that
/// cannot await (`from mcp.saved import x` runs inside a synchronous
/// import; the `_sync` helpers). The event loop stays blocked meanwhile; other answers wait in
/// the inbox. An interrupt abandons the request.
fn request_blocking(py: Python<'_>, call: Call) -> PyResult<RpcAnswer> {
    let session = session()?;
    let id = send_rpc_routed(py, call, true)?;
    loop {
        if let Some(answer) = py.detach(|| session.wait_answer(id, INTERRUPT_POLL)) {
            return Ok(records::rpc_answer(answer));
        }
        if let Err(interrupt) = py.check_signals() {
            session.forget_answer(id);
            return Err(interrupt);
        }
    }
}

/// `blocking`: the answer goes to [`Session::wait_answer`], not the inbox.
fn send_rpc_routed(py: Python<'_>, call: Call, blocking: bool) -> PyResult<u64> {
    let session = session()?;
    if in_fork_child() {
        return Err(PyRuntimeError::new_err(
            "MCP calls are not available in a process forked from a cell",
        ));
    }
    let (id, execution_id) = {
        let mut control = lock(&session.control);
        let id = control.next_rpc;
        control.next_rpc += 1;
        // Registered before sending: the answer may come back at once.
        control.pending_rpcs.insert(id);
        if blocking {
            session.expect_answer(id);
        }
        let execution_id = control.cell.as_ref().map_or(control.last_cell, |c| c.id);
        (id, execution_id)
    };
    let request = RpcRequest {
        id,
        execution_id,
        call: Some(call),
    };
    let sent = py.detach(|| session.channel.send(Kind::RpcRequest(request)));
    if let Err(err) = sent {
        lock(&session.control).pending_rpcs.remove(&id);
        session.forget_answer(id);
        return Err(PyRuntimeError::new_err(format!(
            "cannot send the request to the host: {err}"
        )));
    }
    Ok(id)
}

fn detail(full: bool) -> i32 {
    if full {
        Detail::Full as i32
    } else {
        Detail::Summary as i32
    }
}

fn search(query: String, limit: u32, full: bool) -> Call {
    Call::SearchToolDocs(SearchToolDocs {
        query,
        limit,
        detail: detail(full),
    })
}

#[pymodule]
pub mod _codemode {
    use super::*;

    #[pymodule_export]
    use crate::records::{
        AddServers, DiscoveredServer, EmbeddedModule, Execute, Init, RpcAnswer, ServerInfo,
        ToolInfo,
    };

    /// Whether this guest is the fully static flavour, which cannot load C
    /// extension modules or shared libraries.
    #[pyfunction]
    fn is_static() -> bool {
        cfg!(target_feature = "crt-static")
    }

    /// The zipped time-zone database (the `tzdata` package), or empty.
    #[pyfunction]
    fn tzdata(py: Python<'_>) -> Bound<'_, PyBytes> {
        PyBytes::new(py, crate::frozen::TZDATA)
    }

    /// Takes every queued host message, as records (see `records`).
    #[pyfunction]
    fn take_inbox(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyAny>>> {
        let items: Vec<_> = lock(&session()?.inbox).drain(..).collect();
        items
            .into_iter()
            .map(|item| records::inbound(py, item))
            .collect()
    }

    /// The fd that becomes readable when the inbox has work.
    #[pyfunction]
    fn wake_fd() -> PyResult<i32> {
        Ok(session()?.wake.read_fd())
    }

    /// Makes the wake fd readable (used after handling an interrupt).
    #[pyfunction]
    fn wake() -> PyResult<()> {
        session()?.wake.wake();
        Ok(())
    }

    /// Starts cell `id`; returns "cancelled"/"timeout" if it was already interrupted.
    #[pyfunction]
    fn start_cell(py: Python<'_>, id: u64) -> PyResult<Option<&'static str>> {
        let session = session()?;
        let early = py
            .detach(|| cell::start(session, id))
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(early.map(|i| i.as_str()))
    }

    /// "cancelled"/"timeout" if cell `id` is running and was asked to stop.
    #[pyfunction]
    fn interrupt_reason(id: u64) -> PyResult<Option<&'static str>> {
        Ok(cell::interrupt_reason(session()?, id).map(|i| i.as_str()))
    }

    /// Flushes cell `id`'s output and sends its Finished; `display` is the
    /// cell's shown value: (text, JSON text or "").
    #[pyfunction]
    #[pyo3(signature = (id, status, error=None, display=None))]
    fn finish(
        py: Python<'_>,
        id: u64,
        status: &str,
        error: Option<(String, String, String)>,
        display: Option<(String, String)>,
    ) -> PyResult<()> {
        let session = session()?;
        let status = match status {
            "success" => Status::Success,
            "error" => Status::Error,
            "cancelled" => Status::Cancelled,
            "timeout" => Status::Timeout,
            other => {
                return Err(PyValueError::new_err(format!(
                    "status must be success, error, cancelled or timeout, not {other:?}"
                )))
            }
        };
        let failure = error.map(|(type_name, message, traceback)| CellFailure {
            type_name,
            message,
            traceback,
        });
        let display = display.map(|(text, result_json)| Display { text, result_json });
        py.detach(|| cell::finish(session, id, status, failure, display))
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// A write to sys.stdout (1) or sys.stderr (2): str or bytes-like.
    #[pyfunction]
    fn write_output(py: Python<'_>, stream: u8, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let stream = match stream {
            1 => StreamId::Stdout,
            2 => StreamId::Stderr,
            other => {
                return Err(PyValueError::new_err(format!(
                    "stream must be 1 or 2, not {other}"
                )))
            }
        };
        let bytes: Cow<'_, [u8]> = if let Ok(text) = data.cast::<PyString>() {
            match text.to_str() {
                Ok(s) => Cow::Borrowed(s.as_bytes()),
                // Lone surrogates cannot be UTF-8; show them replaced.
                Err(_) => Cow::Owned(text.to_string_lossy().into_owned().into_bytes()),
            }
        } else if let Ok(bytes) = data.cast::<PyBytes>() {
            Cow::Borrowed(bytes.as_bytes())
        } else if let Ok(array) = data.cast::<PyByteArray>() {
            Cow::Owned(array.to_vec())
        } else {
            return Err(PyTypeError::new_err(format!(
                "write() argument must be str or bytes, not {}",
                data.get_type().name()?
            )));
        };
        if in_fork_child() {
            // The child's copies of the guest's locks are unusable; the
            // capture pipes still reach the parent.
            return fds::write_raw(i32::from(stream as u8 + 1), &bytes)
                .map_err(|e| PyRuntimeError::new_err(e.to_string()));
        }
        let session = session()?;
        py.detach(|| session.output.write(&session.channel, stream, &bytes));
        Ok(())
    }

    /// Attaches an image (or other rich output) to the running cell's result.
    #[pyfunction]
    fn add_rich(mime_type: String, data: &Bound<'_, PyBytes>) -> PyResult<()> {
        session()?
            .output
            .add_rich(mime_type, data.as_bytes().to_vec())
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    #[pyfunction]
    fn call_tool(
        py: Python<'_>,
        server: String,
        tool: String,
        arguments_json: String,
    ) -> PyResult<u64> {
        send_rpc(
            py,
            Call::CallTool(CallTool {
                server,
                tool,
                arguments_json,
            }),
        )
    }

    #[pyfunction]
    fn list_tools(py: Python<'_>, server: String) -> PyResult<u64> {
        send_rpc(py, Call::ListTools(ListTools { server }))
    }

    #[pyfunction]
    fn list_servers(py: Python<'_>) -> PyResult<u64> {
        send_rpc(py, Call::ListServers(ListServers {}))
    }

    #[pyfunction]
    fn query_tool_docs(py: Python<'_>, server: String, tool: String, full: bool) -> PyResult<u64> {
        send_rpc(
            py,
            Call::QueryToolDocs(QueryToolDocs {
                server,
                tool,
                detail: detail(full),
            }),
        )
    }

    #[pyfunction]
    fn search_tool_docs(py: Python<'_>, query: String, limit: u32, full: bool) -> PyResult<u64> {
        send_rpc(py, search(query, limit, full))
    }

    /// `search_tool_docs`, blocking for the answer: the `_sync` form (the
    /// host ranks the tool index, which only it has).
    #[pyfunction]
    fn search_tool_docs_blocking(
        py: Python<'_>,
        query: String,
        limit: u32,
        full: bool,
    ) -> PyResult<RpcAnswer> {
        request_blocking(py, search(query, limit, full))
    }

    /// Saves a tool on the host; blocks for the answer (see `request_blocking`).
    #[pyfunction]
    fn save_tool(py: Python<'_>, name: String, source: String) -> PyResult<RpcAnswer> {
        request_blocking(py, Call::SaveTool(SaveTool { name, source }))
    }

    /// The saved tools' names and sizes; blocks for the answer.
    #[pyfunction]
    fn list_saved_tools(py: Python<'_>) -> PyResult<RpcAnswer> {
        request_blocking(py, Call::ListSavedTools(ListSavedTools {}))
    }

    /// A saved tool's source; blocks for the answer.
    #[pyfunction]
    fn load_saved_tool(py: Python<'_>, name: String) -> PyResult<RpcAnswer> {
        request_blocking(py, Call::LoadSavedTool(LoadSavedTool { name }))
    }

    /// Whether processes a cell leaves running survive its end (see `procs`);
    /// returns the previous setting.
    #[pyfunction]
    fn keep_processes(keep: bool) -> bool {
        crate::procs::set_keep(keep)
    }

    /// Writes a line to the guest's real stderr (host-side logs).
    #[pyfunction]
    fn diag(message: &str) -> PyResult<()> {
        session()?.channel.diag(message);
        Ok(())
    }
}
