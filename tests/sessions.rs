//! Sessions and the proxied-server pool under stress: a crashed server is
//! restarted, a dead sandbox is replaced with a note, policy and budgets
//! hold, saved tools persist across bridge restarts (loaded on import),
//! and the audit log records calls.

use serde_json::json;

use crate::common::{children_matching, Fixture};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_server_gives_a_clear_error_then_restarts() {
    let fx = Fixture::new();
    let c = fx.client("bubblewrap", &[]).await;
    let r = c
        .run_with(
            "print(await mcp_everything.echo(message='up'))",
            &["everything"],
        )
        .await;
    assert_eq!(r.stdout(), "Echo: up\n", "{r:?}");
    let js = crate::common::everything_js().display().to_string();
    let code = r#"
try:
    await mcp_everything.trigger_long_running_operation(duration=5, steps=5)
    print("finished?!")
except runtime.MCPError as e:
    print("error:", e)
"#;
    // Kill this bridge's server (other tests run their own) mid-call.
    let killer = async {
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        let pids = children_matching(c.pid, &js);
        assert!(!pids.is_empty(), "the server is running");
        for pid in pids {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
    };
    let (first, ()) = tokio::join!(c.run(code), killer);
    let out = first.stdout();
    assert!(
        out.starts_with("error:") && out.contains("everything"),
        "{first:?}"
    );
    assert!(
        out.contains("restarted on the next call"),
        "says what happens next: {out}"
    );
    let r = c
        .run("print(await mcp_everything.echo(message='back'))")
        .await;
    assert_eq!(r.stdout(), "Echo: back\n", "restarted: {r:?}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_sandbox_is_replaced_and_the_model_is_told() {
    let fx = Fixture::new();
    let c = fx.client("bubblewrap", &[]).await;
    c.run("lost = 1").await;
    let r = c
        .run("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
        .await;
    assert_eq!(r.status(), "error", "{r:?}");
    assert!(
        r.structured["error"]
            .as_str()
            .unwrap_or("")
            .contains("sandbox"),
        "{r:?}"
    );
    let r = c.run("print('lost' in globals())").await;
    assert_eq!(r.status(), "success", "{r:?}");
    assert_eq!(r.stdout(), "False\n");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_lists_and_the_call_budget_hold() {
    let fx = Fixture::new();
    let c = fx
        .client(
            "bubblewrap",
            &[
                "--deny-tools",
                "everything.get-sum",
                "--deny-servers",
                "time",
                "--call-budget",
                "3",
            ],
        )
        .await;
    let r = c.run_with("print(1)", &["time"]).await;
    assert_eq!(r.status(), "validation_error", "denied server: {r:?}");
    let code = r#"
try:
    await mcp_everything.get_sum(a=1, b=2)
except runtime.MCPError as e:
    print("denied:", e.kind if hasattr(e, "kind") else "", e)
results = []
for i in range(5):
    try:
        results.append(await mcp_everything.echo(message=str(i)))
    except runtime.MCPError as e:
        results.append("budget" if "--call-budget (MCP_BRIDGE_CALL_BUDGET)" in str(e) else str(e))
print(results)
"#;
    let r = c.run_with(code, &["everything"]).await;
    assert_eq!(r.status(), "success", "{r:?}");
    assert!(r.stdout().contains("denied:"), "{r:?}");
    // The budget counts every tool call the cell sends, the denied get-sum
    // too (the host counts before the policy answers): 2 echoes fit.
    assert!(
        r.stdout()
            .contains("['Echo: 0', 'Echo: 1', 'budget', 'budget', 'budget']"),
        "{r:?}"
    );
    c.close().await;
}

/// The default budget fits a data task: one cell loops over 600 items,
/// calling a tool for each (the old default of 200 stopped at item 200).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_budget_fits_a_loop_over_600_items() {
    let fx = Fixture::new();
    let c = fx.client("bubblewrap", &[]).await;
    let code = r#"
out = [await mcp_everything.echo(message=str(i)) for i in range(600)]
print(len(out), out[-1])
"#;
    let r = c
        .call(json!({"code": code, "servers": ["everything"], "timeout": 60}))
        .await;
    assert_eq!(r.stdout(), "600 Echo: 599\n", "{r:?}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_log_records_each_proxied_call() {
    let fx = Fixture::new();
    let log = fx.dir.path().join("audit.jsonl");
    let c = fx
        .client("bubblewrap", &["--audit-log", &log.display().to_string()])
        .await;
    let r = c.run_with("await mcp_everything.echo(message='audited')\nawait mcp_everything.echo(message='again')", &["everything"]).await;
    assert_eq!(r.status(), "success", "{r:?}");
    c.close().await;
    let text = std::fs::read_to_string(&log).expect("audit log written");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["server"], "everything");
    assert_eq!(lines[0]["tool"], "echo");
    assert_eq!(lines[0]["status"], "ok");
    assert!(
        lines[0]["duration_ms"].is_u64() && lines[0]["response_bytes"].as_u64().unwrap_or(0) > 0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_tools_survive_a_bridge_restart_and_can_be_removed() {
    let fx = Fixture::new();
    let c = fx.client("bubblewrap", &[]).await;
    let r = c
        .run("def double(x):\n    return 2 * x\nprint(save_tool(double))")
        .await;
    assert_eq!(r.status(), "success", "{r:?}");
    c.close().await;

    let c = fx.client("podman", &[]).await;
    let r = c
        .run("print('double' in globals())\nfrom mcp.saved import double\nprint(double(21))")
        .await;
    assert_eq!(
        r.stdout(),
        "False\n42\n",
        "saved tool loads on import in a new bridge and another runtime: {r:?}"
    );
    c.close().await;

    let list = fx
        .command("bubblewrap", &["tools"])
        .output()
        .await
        .expect("codemode tools");
    assert!(
        String::from_utf8_lossy(&list.stdout).contains("double"),
        "{list:?}"
    );
    // A broken saved tool fails the import that asks for it, and only that.
    std::fs::write(fx.state().join("tools/broken.py"), "def broken(:\n").expect("write");
    let c = fx.client("bubblewrap", &[]).await;
    let r = c
        .run("from mcp.saved import double\nprint(double(1))\ntry:\n    from mcp.saved import broken\nexcept SyntaxError as e:\n    print('broken:', type(e).__name__)")
        .await;
    assert_eq!(r.stdout(), "2\nbroken: SyntaxError\n", "{r:?}");
    c.close().await;
    let rm = fx
        .command("bubblewrap", &["tools", "remove", "broken"])
        .output()
        .await
        .expect("remove");
    assert!(rm.status.success(), "{rm:?}");
    assert!(!fx.state().join("tools/broken.py").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_named_in_calls_are_separate() {
    let fx = Fixture::new();
    let c = fx.client("bubblewrap", &[]).await;
    c.call(json!({"code": "v = 'a'", "session": "one"})).await;
    c.call(json!({"code": "v = 'b'", "session": "two"})).await;
    let r = c.call(json!({"code": "print(v)", "session": "one"})).await;
    assert_eq!(r.stdout(), "a\n");
    let r = c.call(json!({"code": "print('v' in globals())"})).await;
    assert_eq!(
        r.stdout(),
        "False\n",
        "the connection's default session is its own"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_are_reaped_and_the_session_cap_holds() {
    let fx = Fixture::new();
    let c = fx
        .client("bubblewrap", &["--session-idle", "1", "--warm-pool", "0"])
        .await;
    c.run("idle = 1").await;
    let bwraps = || children_matching(c.pid, "bwrap");
    assert!(
        !bwraps().is_empty(),
        "the session's sandbox runs while it is fresh"
    );
    // Idle after 1 s, checked every 0.5 s; allow a loaded machine plenty more.
    let mut sandboxes = bwraps();
    for _ in 0..100 {
        if sandboxes.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        sandboxes = bwraps();
    }
    assert!(
        sandboxes.is_empty(),
        "the idle session's sandbox is gone: {sandboxes:?}"
    );
    let r = c.run("print('idle' in globals())").await;
    assert_eq!(r.stdout(), "False\n");
    c.close().await;

    let c = fx.client("bubblewrap", &["--max-sessions", "1"]).await;
    c.call(json!({"code": "a = 1", "session": "a"})).await;
    c.call(json!({"code": "b = 1", "session": "b"})).await;
    let r = c
        .call(json!({"code": "print('a' in globals())", "session": "a"}))
        .await;
    assert_eq!(
        r.stdout(),
        "False\n",
        "session a was closed to make room for b"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_tool_call_times_out_with_a_clear_error() {
    let fx = Fixture::new();
    let c = fx.client("bubblewrap", &["--call-timeout", "1"]).await;
    let code = r#"
import time
start = time.monotonic()
try:
    await mcp_everything.trigger_long_running_operation(duration=10, steps=2)
    print("finished?!")
except runtime.MCPError as e:
    print("error:", e.kind if hasattr(e, "kind") else "", e)
print("took", round(time.monotonic() - start))
print(await mcp_everything.echo(message="still usable"))
"#;
    let r = c
        .call(json!({"code": code, "timeout": 30, "servers": ["everything"]}))
        .await;
    assert_eq!(r.status(), "success", "{r:?}");
    let out = r.stdout();
    assert!(out.contains("error:") && out.contains("within 1s"), "{out}");
    let took: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("took "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(99);
    assert!(took < 8, "cut off well before the operation's 10 s: {out}");
    assert!(out.contains("Echo: still usable"), "{out}");
    c.close().await;
}

/// A call that arrives while the warm pool is still starting its sandbox
/// (right after `initialize`) takes that sandbox, instead of starting a
/// second one that would compete with it for the CPU.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_call_takes_the_sandbox_the_pool_is_starting() {
    let fx = Fixture::new();
    let c = fx.client("podman", &["--warm-pool", "1"]).await;
    // podman's hostname is the container's short id.
    let r = c.run("import socket; print(socket.gethostname())").await;
    assert_eq!(r.status(), "success", "{r:?}");
    let id = r.stdout().trim().to_string();
    let out = std::process::Command::new("podman")
        .args(["ps", "--format", "{{.ID}} {{.Names}}"])
        .args([
            "--filter",
            &format!("label=io.codemode.owner-pid={}", c.pid),
        ])
        .output()
        .expect("podman ps");
    let listing = String::from_utf8_lossy(&out.stdout).to_string();
    let name = listing
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{id} ")))
        .unwrap_or_else(|| panic!("container {id} in {listing}"));
    assert!(
        name.ends_with("-0"),
        "the session runs in the pool's first sandbox: {name} ({listing})"
    );
    c.close().await;
}
