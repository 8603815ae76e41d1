//! Tool calls as RPC frames: concurrent requests multiplexed by id and
//! answered in any order, errors raised as MCPError.

use codemode_proto::v1::rpc_request::Call;
use codemode_proto::v1::RpcRequest;

use crate::common::*;

#[test]
fn gather_of_twenty_calls_answered_in_reverse_order() {
    let mut guest = Guest::started(vec![fake_server::server()]);
    let id = guest.execute(
        "import asyncio\nr = await asyncio.gather(*(mcp_everything.echo(message=str(i)) for i in range(20)))\nprint(r)",
        0,
    );
    let mut held: Vec<RpcRequest> = Vec::new();
    let out = guest.collect(id, |host, req| {
        held.push(req);
        if held.len() == 20 {
            for req in held.drain(..).rev() {
                host.respond(fake_server::answer(&req));
            }
        }
    });
    out.assert_success();
    let expected: Vec<String> = (0..20).map(|i| format!("'Echo: {i}'")).collect();
    assert_eq!(out.stdout, format!("[{}]\n", expected.join(", ")));
    let mut ids: Vec<u64> = out.rpcs.iter().map(|r| r.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 20, "request ids must be unique");
    assert!(out.rpcs.iter().all(|r| r.execution_id == id));
}

#[test]
fn call_tool_sends_server_tool_and_json_arguments() {
    let mut guest = Guest::started(vec![fake_server::server()]);
    let out = guest.run("print(await runtime.call_tool('everything', 'echo', {'message': 'hi'}))");
    out.assert_success();
    assert_eq!(out.stdout, "Echo: hi\n");
    let Some(Call::CallTool(call)) = &out.rpcs[0].call else {
        panic!("{:?}", out.rpcs)
    };
    assert_eq!(call.server, "everything");
    assert_eq!(call.tool, "echo");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&call.arguments_json).unwrap(),
        serde_json::json!({"message": "hi"})
    );
}

#[test]
fn a_host_error_raises_mcp_error_with_its_kind() {
    let mut guest = Guest::started(vec![fake_server::server()]);
    let out = guest.run(
        "try:\n    await mcp_everything.denied()\nexcept runtime.MCPError as e:\n    print(e.kind, '|', e, '|', e.server, e.tool)",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "not_allowed | tool denied by policy | everything denied\n"
    );
}

#[test]
fn an_uncaught_mcp_error_shows_the_users_line_only() {
    let mut guest = Guest::started(vec![fake_server::server()]);
    let out = guest.run("x = 1\nawait mcp_everything.fail()");
    let error = out.finished.error.as_ref().unwrap();
    assert_eq!(error.r#type, "MCPError");
    assert_eq!(error.message, "boom: it broke");
    assert!(error.traceback.contains("line 2"), "{}", error.traceback);
    assert!(
        !error.traceback.contains("<codemode>"),
        "{}",
        error.traceback
    );
}

#[test]
fn calls_from_sync_helpers_need_no_rpc() {
    let mut guest = Guest::started(vec![fake_server::server()]);
    let out =
        guest.run("print(runtime.list_servers_sync(), len(runtime.list_tools_sync('everything')))");
    out.assert_success();
    assert_eq!(out.stdout, "('everything',) 7\n");
    assert!(out.rpcs.is_empty());
}
