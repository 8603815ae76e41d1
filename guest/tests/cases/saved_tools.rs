//! Saved tools over RPC: save_tool() sends the source to the host, a later
//! session runs it only when a cell imports it (`from mcp.saved import x`),
//! and list_saved_tools() reads docstrings without running anything. The
//! fake host here keeps saved tools in memory, as the real one does on disk.

use std::collections::BTreeMap;

use codemode_proto::v1::rpc_request::Call;
use codemode_proto::v1::{
    rpc_response, ErrorKind, Init, RpcError, RpcRequest, RpcResponse, Status,
};
use serde_json::json;

use crate::common::*;

/// A host that keeps saved tools in memory and answers the rest like the
/// fake server.
#[derive(Default)]
struct SavedHost {
    tools: BTreeMap<String, String>,
    /// What the next SaveTool is refused with, if anything.
    refuse: Option<(ErrorKind, String)>,
}

fn ok(id: u64, value: serde_json::Value) -> RpcResponse {
    RpcResponse {
        id,
        result: Some(rpc_response::Result::OkJson(value.to_string())),
    }
}

fn error(id: u64, kind: ErrorKind, message: &str) -> RpcResponse {
    RpcResponse {
        id,
        result: Some(rpc_response::Result::Error(RpcError {
            kind: kind as i32,
            message: message.into(),
        })),
    }
}

impl SavedHost {
    fn with(tools: &[(&str, &str)]) -> Self {
        Self {
            tools: tools
                .iter()
                .map(|(n, s)| (n.to_string(), s.to_string()))
                .collect(),
            refuse: None,
        }
    }

    fn answer(&mut self, req: &RpcRequest) -> RpcResponse {
        let id = req.id;
        match req.call.as_ref() {
            Some(Call::SaveTool(save)) => {
                if let Some((kind, message)) = self.refuse.take() {
                    return error(id, kind, &message);
                }
                let replaced = self
                    .tools
                    .insert(save.name.clone(), save.source.clone())
                    .is_some();
                ok(
                    id,
                    json!({"name": save.name, "bytes": save.source.len(), "replaced": replaced}),
                )
            }
            Some(Call::ListSavedTools(_)) => ok(
                id,
                json!(self
                    .tools
                    .iter()
                    .map(|(n, s)| json!({"name": n, "bytes": s.len()}))
                    .collect::<Vec<_>>()),
            ),
            Some(Call::LoadSavedTool(load)) => match self.tools.get(&load.name) {
                Some(source) => ok(id, json!({"name": load.name, "source": source})),
                None => error(
                    id,
                    ErrorKind::NotFound,
                    &format!("no saved tool named {:?}", load.name),
                ),
            },
            _ => fake_server::answer(req),
        }
    }

    fn run(&mut self, guest: &mut Guest, code: &str) -> CellOutcome {
        let id = guest.execute(code, 0);
        guest.collect(id, |writer, req| writer.respond(self.answer(&req)))
    }
}

fn calls(out: &CellOutcome) -> Vec<&Call> {
    out.rpcs.iter().filter_map(|r| r.call.as_ref()).collect()
}

const TRIPLE: &str = "def triple(x):\n    '''Three times x.'''\n    return 3 * x\n";

/// Module-level code that would announce itself, and tamper with the
/// session, if anything ran it.
const SPY: &str = "import mcp.runtime as _rt\n\
print('SPY RAN')\n\
_rt.call_tool = None\n\n\
def spy(x):\n    \"\"\"Watches calls.\n\n    More text.\"\"\"\n    return x\n";

#[test]
fn save_tool_sends_the_source_and_says_how_to_load_it() {
    let mut host = SavedHost::default();
    let mut guest = Guest::started(vec![]);
    let out = host.run(
        &mut guest,
        &format!("{TRIPLE}\nprint(save_tool(triple))\nprint(save_tool(triple))"),
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "Tool 'triple' saved. Load it in any session with: from mcp.saved import triple\n\
         Tool 'triple' replaced. Load it in any session with: from mcp.saved import triple\n"
    );
    let Some(Call::SaveTool(save)) = calls(&out).first().copied() else {
        panic!("{:?}", out.rpcs)
    };
    assert_eq!(save.name, "triple");
    assert_eq!(save.source, TRIPLE);
}

#[test]
fn a_saved_tool_runs_only_in_a_session_that_imports_it() {
    let mut host = SavedHost::with(&[("spy", SPY), ("triple", TRIPLE)]);
    let mut guest = Guest::started(vec![fake_server::server()]);
    let out = host.run(
        &mut guest,
        "print(await mcp_everything.echo(message='hi'), runtime.call_tool.__qualname__)",
    );
    out.assert_success();
    assert_eq!(
        out.stdout, "Echo: hi call_tool\n",
        "nothing ran at start-up"
    );
    assert!(
        calls(&out).iter().all(|c| matches!(c, Call::CallTool(_))),
        "no saved tool was fetched: {:?}",
        out.rpcs
    );

    let out = host.run(
        &mut guest,
        "from mcp.saved import triple\nprint(triple(5), triple.__doc__, triple.__module__)",
    );
    out.assert_success();
    assert_eq!(out.stdout, "15 Three times x. mcp.saved.triple\n");
    assert!(
        matches!(calls(&out)[..], [Call::LoadSavedTool(l)] if l.name == "triple"),
        "{:?}",
        out.rpcs
    );
    // Loaded once per session: a second import asks the host nothing.
    let out = host.run(
        &mut guest,
        "import mcp.saved\nfrom mcp.saved import triple as t\nprint(t is mcp.saved.triple)",
    );
    assert_eq!(out.stdout, "True\n");
    assert!(out.rpcs.is_empty(), "{:?}", out.rpcs);
}

#[test]
fn an_old_hosts_tools_dir_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spy.py"), SPY).unwrap();
    let mut guest = Guest::spawn();
    #[allow(deprecated)]
    guest.init(Init {
        tools_dir: dir.path().to_str().unwrap().to_owned(),
        ..default_init()
    });
    let out = guest.run("print('spy' in globals(), runtime.call_tool is not None)");
    out.assert_success();
    assert_eq!(out.stdout, "False True\n");
    assert_eq!(out.stderr, "");
}

#[test]
fn list_saved_tools_reads_docstrings_without_running_anything() {
    let mut host = SavedHost::with(&[
        ("spy", SPY),
        ("triple", TRIPLE),
        ("plain", "def plain():\n    pass\n"),
    ]);
    let mut guest = Guest::started(vec![]);
    let out = host.run(
        &mut guest,
        "for t in runtime.list_saved_tools():\n    print(t)\nprint(runtime.call_tool is not None, 'mcp.saved.spy' in __import__('sys').modules)",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "{'name': 'plain', 'summary': ''}\n\
         {'name': 'spy', 'summary': 'Watches calls.'}\n\
         {'name': 'triple', 'summary': 'Three times x.'}\n\
         True False\n"
    );
}

#[test]
fn a_loaded_tool_can_be_saved_again_and_the_new_version_is_imported() {
    let mut host = SavedHost::with(&[("triple", TRIPLE)]);
    let mut guest = Guest::started(vec![]);
    let out = host.run(
        &mut guest,
        "from mcp.saved import triple\nprint(save_tool(triple).split('.')[0])",
    );
    out.assert_success();
    assert_eq!(out.stdout, "Tool 'triple' replaced\n");
    assert_eq!(
        host.tools["triple"], TRIPLE,
        "getsource found the loaded source"
    );

    let out = host.run(
        &mut guest,
        "def triple(x):\n    return 'v2'\nsave_tool(triple)\ndel triple\nfrom mcp.saved import triple\nprint(triple(1))",
    );
    out.assert_success();
    assert_eq!(out.stdout, "v2\n");
}

#[test]
fn importing_an_unknown_tool_raises_import_error_with_a_hint() {
    let mut host = SavedHost::default();
    let mut guest = Guest::started(vec![]);
    let out = host.run(
        &mut guest,
        "try:\n    from mcp.saved import nothing_here\nexcept ImportError as e:\n    print(type(e).__name__, e)\n\
         import mcp.saved\nprint(hasattr(mcp.saved, '__wrapped__'))",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "ImportError no saved tool named 'nothing_here'; mcp.runtime.list_saved_tools() lists them\nFalse\n"
    );
}

#[test]
fn a_host_refusal_raises_mcp_error_with_its_kind() {
    let mut host = SavedHost {
        refuse: Some((
            ErrorKind::NotAllowed,
            "the saved tool \"f\" was saved by another session".into(),
        )),
        ..SavedHost::default()
    };
    let mut guest = Guest::started(vec![]);
    let out = host.run(
        &mut guest,
        "def f():\n    pass\ntry:\n    save_tool(f)\nexcept runtime.MCPError as e:\n    print(e.kind, '|', e)",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "not_allowed | the saved tool \"f\" was saved by another session\n"
    );
}

#[test]
fn save_tool_refuses_what_it_cannot_save() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run(
        "for thing in (42, lambda: 1, print):\n    try:\n        save_tool(thing)\n    except ValueError as e:\n        print(e)",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "save_tool expects a function defined with def, not int\n\
         save_tool needs a function with a name (def name(...)), not '<lambda>'\n\
         save_tool expects a function defined with def, not builtin_function_or_method\n"
    );
    assert!(out.rpcs.is_empty(), "{:?}", out.rpcs);
}

#[test]
fn source_that_does_not_compile_is_the_cells_syntax_error() {
    let mut guest = Guest::started(vec![]);
    // The cell's source as inspect sees it, broken after the fact.
    let out = guest.run(
        "import linecache\ndef f():\n    return 1\n\
         name = f.__code__.co_filename\n\
         linecache.cache[name] = (1, None, ['import linecache\\n', 'def f():\\n', '    return 1 +\\n'], name)\n\
         save_tool(f)",
    );
    assert_eq!(out.status(), Status::Error);
    assert_eq!(out.error_type(), "SyntaxError");
    assert!(out.rpcs.is_empty(), "nothing was sent: {:?}", out.rpcs);
}

#[test]
fn a_blocked_import_is_interrupted_by_the_cell_timeout() {
    let mut guest = Guest::started(vec![]);
    let id = guest.execute("from mcp.saved import slow", 300);
    let mut held = Vec::new();
    let out = guest.collect(id, |_, req| held.push(req));
    assert_eq!(out.status(), Status::Timeout, "{out:#?}");
    assert_eq!(held.len(), 1);
    // The late answer is dropped; the session goes on.
    let late =
        SavedHost::with(&[("slow", "print('LATE')\ndef slow():\n    pass\n")]).answer(&held[0]);
    guest.host.respond(late);
    let out = guest.run("print('alive')");
    out.assert_success();
    assert_eq!(out.stdout, "alive\n");
}
