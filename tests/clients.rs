//! Other real MCP clients drive `codemode serve`: the official Python and
//! TypeScript SDKs and the MCP Inspector CLI.

use std::process::Command;

use crate::common::{codemode_bin, node_dir, repo_root, venv, Fixture};

#[test]
fn python_sdk_client_runs_code_and_calls_a_server() {
    let fx = Fixture::new();
    let mut cmd_args = vec![codemode_bin().display().to_string()];
    cmd_args.extend(fx.args("bubblewrap"));
    cmd_args.push("serve".into());
    let out = Command::new(venv().join("bin/python"))
        .arg(repo_root().join("tests/clients/sdk_client.py"))
        .args(&cmd_args)
        .env("HOME", fx.dir.path().join("home"))
        .current_dir(fx.dir.path())
        .output()
        .expect("run the Python SDK client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "sdk client failed:\n{stdout}\n{stderr}"
    );
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        stdout.contains(&format!("server: codemode {version}")),
        "{stdout}"
    );
    assert!(
        stdout.contains("servers in instructions: ['everything', 'time']"),
        "{stdout}"
    );
    assert!(stdout.contains("tools: ['run_python']"), "{stdout}");
    assert!(stdout.contains("output schema: True"), "{stdout}");
    for (status, is_error) in [
        ("success", "False"),
        ("error", "True"),
        ("timeout", "True"),
        ("validation_error", "True"),
    ] {
        let line = format!("{status}: status={status} isError={is_error} valid");
        assert!(stdout.contains(&line), "{line} in:\n{stdout}");
    }
    assert!(stdout.contains("Echo: from the python sdk"), "{stdout}");
    assert!(
        stdout.contains("shown: status=success isError=False valid\nshown: result={\"n\": 42, \"tags\": [\"a\"]}"),
        "{stdout}"
    );
}

/// The official TypeScript SDK client: identity, server names up front,
/// every result validated against the output schema, progress, an abort
/// that keeps the session's state, and the manual resource (the script
/// asserts each; see tests/clients/ts_client.mjs).
#[test]
fn typescript_sdk_client_sees_codemode_as_a_finished_server() {
    let fx = Fixture::new();
    let mut args = vec![
        repo_root()
            .join("tests/clients/ts_client.mjs")
            .display()
            .to_string(),
        codemode_bin().display().to_string(),
    ];
    args.extend(fx.args("bubblewrap"));
    args.push("serve".into());
    let out = Command::new("node")
        .args(&args)
        .env("CODEMODE_TEST_NODE_DIR", node_dir())
        .env("HOME", fx.dir.path().join("home"))
        .current_dir(fx.dir.path())
        .output()
        .expect("run the TypeScript SDK client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "ts client failed:\n{stdout}\n{stderr}"
    );
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        stdout.contains(&format!("server: codemode {version}")),
        "{stdout}"
    );
    assert!(stdout.ends_with("all checks passed\n"), "{stdout}");
}

#[test]
fn inspector_cli_lists_and_calls_run_python() {
    let fx = Fixture::new();
    let inspector = node_dir().join("node_modules/.bin/mcp-inspector");
    assert!(
        inspector.exists(),
        "{} missing: run scripts/test.sh",
        inspector.display()
    );
    // The Inspector parses `--config` itself, so codemode's settings travel
    // as MCP_* variables here (which also covers that path).
    let mut base = vec!["--cli".to_string()];
    for (k, v) in [
        ("MCP_SERVERS_CONFIG", fx.config().display().to_string()),
        ("MCP_BRIDGE_RUNTIME", "bubblewrap".to_string()),
        ("MCP_BRIDGE_STATE_DIR", fx.state().display().to_string()),
        ("HOME", fx.dir.path().join("home").display().to_string()),
    ] {
        base.push("-e".into());
        base.push(format!("{k}={v}"));
    }
    base.push(codemode_bin().display().to_string());
    base.push("serve".into());
    let run = |extra: &[&str]| {
        let out = Command::new(&inspector)
            .args(&base)
            .args(extra)
            .env("HOME", fx.dir.path().join("home"))
            .current_dir(fx.dir.path())
            .output()
            .expect("run the inspector");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "inspector failed: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let listed = run(&["--method", "tools/list"]);
    assert!(listed.contains("\"run_python\""), "{listed}");
    let called = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "run_python",
        "--tool-arg",
        "code=print(6*7)",
    ]);
    assert!(called.contains("42"), "{called}");
}
