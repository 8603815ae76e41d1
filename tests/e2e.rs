//! `run_python` end to end through a real MCP client: state, real proxied
//! servers, errors, timeouts, validation, rendering.

use serde_json::json;

use crate::common::Fixture;
use crate::per_runtime;

async fn state_persists_between_calls(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let r = c.run("import math\nx = 41\nprint('hello')").await;
    assert_eq!(r.status(), "success", "{r:?}");
    assert!(!r.is_error);
    assert_eq!(r.stdout(), "hello\n");
    let r = c.run("print(x + 1, math.pi > 3)").await;
    assert_eq!(r.stdout(), "42 True\n", "{r:?}");
    c.close().await;
}
per_runtime!(state_persists_between_calls);

async fn calls_real_servers_concurrently(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let code = r#"
import asyncio
echo, now = await asyncio.gather(
    mcp_everything.echo(message="hi"),
    mcp_time.get_current_time(timezone="UTC"),
)
print(echo)
print(now["timezone"])
results = await asyncio.gather(*[mcp_everything.echo(message=str(i)) for i in range(20)])
print(len(results), results[-1])
"#;
    let r = c.run_with(code, &["everything", "time"]).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let out = r.stdout();
    assert!(out.contains("Echo: hi"), "{out}");
    assert!(out.contains("UTC"), "{out}");
    assert!(out.contains("20 Echo: 19"), "{out}");
    assert_eq!(r.structured["servers"], json!(["everything", "time"]));
    c.close().await;
}
per_runtime!(calls_real_servers_concurrently);

async fn servers_can_be_added_to_a_live_session(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let r = c
        .run_with(
            "y = 5\nprint(sorted(runtime.discovered_servers()))",
            &["time"],
        )
        .await;
    assert_eq!(r.stdout(), "['everything', 'time']\n", "{r:?}");
    let r = c
        .run_with(
            "print(y, (await mcp_everything.echo(message='later')))",
            &["everything"],
        )
        .await;
    assert_eq!(r.stdout(), "5 Echo: later\n", "{r:?}");
    c.close().await;
}
per_runtime!(servers_can_be_added_to_a_live_session);

async fn a_server_not_requested_is_refused(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let code = r#"
try:
    await runtime.call_tool("everything", "echo", {"message": "sneaky"})
except runtime.MCPError as e:
    print("refused:", e)
"#;
    let r = c.run_with(code, &["time"]).await;
    assert!(
        r.stdout().contains("refused:") && r.stdout().contains("not loaded"),
        "{r:?}"
    );
    c.close().await;
}
per_runtime!(a_server_not_requested_is_refused);

async fn exceptions_come_back_as_errors(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let r = c
        .run("def f():\n    return 1/0\nprint('before')\nf()")
        .await;
    assert_eq!(r.status(), "error", "{r:?}");
    assert!(r.is_error);
    assert_eq!(r.stdout(), "before\n");
    let err = r.structured["error"].as_str().unwrap_or("");
    assert!(err.contains("ZeroDivisionError"), "{err}");
    assert!(
        err.contains("return 1/0"),
        "traceback shows the user's line: {err}"
    );
    assert!(r.text.starts_with("status: error"), "{}", r.text);
    // The session survives an exception and a SystemExit.
    let r = c.run("raise SystemExit(3)").await;
    assert_eq!(r.status(), "error");
    let r = c.run("print('still here')").await;
    assert_eq!(r.stdout(), "still here\n");
    c.close().await;
}
per_runtime!(exceptions_come_back_as_errors);

async fn timeouts_interrupt_and_keep_state(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    c.run("kept = 'yes'").await;
    let r = c
        .call(json!({"code": "print('started', flush=True)\nwhile True: pass", "timeout": 2}))
        .await;
    assert_eq!(r.status(), "timeout", "{r:?}");
    assert!(r.is_error);
    assert_eq!(r.stdout(), "started\n");
    let r = c
        .call(json!({"code": "import asyncio\nawait asyncio.sleep(100)", "timeout": 1}))
        .await;
    assert_eq!(r.status(), "timeout", "{r:?}");
    let r = c.run("print(kept)").await;
    assert_eq!(r.stdout(), "yes\n", "state survives timeouts: {r:?}");
    c.close().await;
}
per_runtime!(timeouts_interrupt_and_keep_state);

async fn bad_arguments_are_validation_errors(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let r = c.call(json!({"servers": ["time"]})).await;
    assert_eq!(r.status(), "validation_error", "{r:?}");
    assert!(r.is_error);
    let r = c
        .call(json!({"code": "print(1)", "servers": ["nope"]}))
        .await;
    assert_eq!(r.status(), "validation_error");
    assert!(
        r.structured["error"]
            .as_str()
            .unwrap_or("")
            .contains("everything, time"),
        "{r:?}"
    );
    let r = c.call(json!({"code": 5})).await;
    assert_eq!(r.status(), "validation_error");
    let r = c.call(json!({"code": "print(1)", "timeout": "soon"})).await;
    assert_eq!(r.status(), "validation_error");
    // Nothing was lost: the session still works.
    let r = c.run("print(2)").await;
    assert_eq!(r.stdout(), "2\n");
    c.close().await;
}
per_runtime!(bad_arguments_are_validation_errors);

async fn tool_functions_have_signatures_and_decode_results(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let code = r#"
import inspect
print(inspect.signature(mcp_everything.echo))
try:
    await mcp_everything.echo(wrong=1)
except TypeError as e:
    print("TypeError")
total = await mcp_everything.get_sum(a=2, b=3)
print(type(total).__name__, total)
docs = await runtime.query_tool_docs("everything", "echo", detail="full")
print(docs["tool"], "inputSchema" in docs)
"#;
    let r = c.run_with(code, &["everything"]).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let out = r.stdout();
    assert!(out.contains("message"), "{out}");
    assert!(out.contains("TypeError"), "{out}");
    assert!(out.contains("echo True"), "{out}");
    c.close().await;
}
per_runtime!(tool_functions_have_signatures_and_decode_results);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_is_one_small_tool_and_the_manual_is_a_resource() {
    let fx = Fixture::new();
    let c = fx.client("bubblewrap", &[]).await;
    let tools = c.service.list_all_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "run_python");
    let size = serde_json::to_string(&tools).expect("json").len();
    assert!(
        size < 2500,
        "tools/list (with the output schema) is {size} bytes"
    );
    assert!(
        tools[0].output_schema.is_some(),
        "run_python declares its output schema"
    );
    let resources = c
        .service
        .list_all_resources()
        .await
        .expect("resources/list");
    assert_eq!(resources.len(), 1);
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toon_and_json_output_modes_render_the_same_payload() {
    let fx = Fixture::new();
    for mode in ["toon", "json"] {
        let c = fx.client("bubblewrap", &["--output-mode", mode]).await;
        let r = c.run("print('x')").await;
        assert_eq!(r.status(), "success");
        if mode == "toon" {
            assert!(r.text.starts_with("```toon\n"), "{}", r.text);
            assert!(r.text.contains("status: success"), "{}", r.text);
        } else {
            let v: serde_json::Value = serde_json::from_str(&r.text).expect("json text");
            assert_eq!(v["stdout"], "x\n");
        }
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datascience_image_has_numpy_pandas_and_returns_a_figure() {
    let fx = Fixture::new();
    let tag = {
        let out = std::process::Command::new(crate::common::codemode_bin())
            .args(["image", "tag", "--variant", "datascience"])
            .output()
            .expect("codemode image tag");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let c = fx
        .client("podman", &["--image", &tag, "--memory", "1g"])
        .await;
    let code = r#"
import numpy as np, pandas as pd
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
df = pd.DataFrame({"x": np.arange(5), "y": np.arange(5) ** 2})
print(df["y"].sum())
fig, ax = plt.subplots()
ax.plot(df["x"], df["y"])
runtime.show(fig)
"#;
    let r = c.call(json!({"code": code, "timeout": 120})).await;
    assert_eq!(r.status(), "success", "{r:?}");
    assert_eq!(r.stdout(), "30\n");
    assert_eq!(r.structured["images"], 1, "{r:?}");
    // A notebook's display: a DataFrame as its table, a figure as an image.
    let r = c.run("df").await;
    assert_eq!(r.status(), "success", "{r:?}");
    let table = r.structured["display"].as_str().unwrap_or_default();
    assert!(
        table.starts_with("   x   y\n0  0   0\n") && table.ends_with("[5 rows x 2 columns]"),
        "{r:?}"
    );
    assert!(r.structured.get("result").is_none(), "{r:?}");
    let r = c.run("fig").await;
    assert_eq!(r.structured["images"], 1, "{r:?}");
    assert!(r.structured.get("display").is_none(), "{r:?}");
    c.close().await;
}

async fn user_mounts_are_read_only_unless_asked(runtime: &str) {
    let fx = Fixture::new();
    let data = fx.dir.path().join("data");
    let out = fx.dir.path().join("out");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    // The sandbox user must be able to write the rw mount.
    std::fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    std::fs::write(data.join("in.txt"), "from the host").unwrap();
    let ro = format!("{}:/data", data.display());
    let rw = format!("{}:/out:rw", out.display());
    let c = fx.client(runtime, &["--mount", &ro, "--mount", &rw]).await;
    let code = r#"
print(open("/data/in.txt").read())
try:
    open("/data/new.txt", "w")
    print("ro writable?!")
except OSError as e:
    print("ro refused", e.errno)
open("/out/result.txt", "w").write("from the sandbox")
"#;
    let r = c.run(code).await;
    assert_eq!(r.status(), "success", "{r:?}");
    assert!(r.stdout().starts_with("from the host\nro refused"), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(out.join("result.txt")).unwrap(),
        "from the sandbox"
    );
    c.close().await;
    // Mounting the host's root is refused before anything starts.
    let bad = fx
        .command(runtime, &["--mount", "/:/host", "run", "print(1)"])
        .output()
        .await
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("refusing to mount"),
        "{bad:?}"
    );
}
per_runtime!(user_mounts_are_read_only_unless_asked);

/// A client sees who it talks to (the name and version `codemode --version`
/// prints) and, before any call, every configured server's name: with 40
/// servers the instructions plus `tools/list` stay under 8 KiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_names_codemode_and_the_servers_within_a_small_budget() {
    let servers: serde_json::Map<String, serde_json::Value> = (0..40)
        .map(|i| {
            (
                format!("server-{i:02}"),
                json!({
                    "command": "/bin/false",
                    "description": format!("Server number {i}: {}", "a long description ".repeat(10)),
                }),
            )
        })
        .collect();
    let fx = Fixture::with_servers(serde_json::Value::Object(servers));
    let c = fx.client("bubblewrap", &["--warm-pool", "0"]).await;
    let info = c.service.peer_info().expect("initialize result");
    let server = info.server_info.clone().expect("serverInfo");
    let version = std::process::Command::new(crate::common::codemode_bin())
        .arg("--version")
        .output()
        .expect("codemode --version");
    let printed = String::from_utf8_lossy(&version.stdout);
    assert_eq!(server.name, "codemode");
    assert_eq!(
        printed.trim(),
        format!("codemode {}", server.version),
        "serverInfo and --version agree"
    );
    assert!(server.title.is_some());
    let instructions = info.instructions.clone().unwrap_or_default();
    for i in 0..40 {
        assert!(
            instructions.contains(&format!("\n- server-{i:02}: Server number {i}")),
            "server-{i:02} is named up front:\n{instructions}"
        );
    }
    let tools = c.service.list_all_tools().await.expect("tools/list");
    let tools_size = serde_json::to_string(&tools).expect("json").len();
    let total = tools_size + instructions.len();
    assert!(
        total < 8192,
        "instructions ({}) + tools/list ({tools_size}) = {total} bytes with 40 servers",
        instructions.len()
    );
    println!(
        "40 servers: instructions {} bytes, tools/list {tools_size} bytes",
        instructions.len()
    );
    c.close().await;
}
