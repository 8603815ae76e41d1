//! Other real MCP clients drive `codemode serve`: the official Python SDK
//! and the MCP Inspector CLI.

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
    assert!(stdout.contains("tools: ['run_python']"), "{stdout}");
    assert!(stdout.contains("isError: False"), "{stdout}");
    assert!(stdout.contains("Echo: from the python sdk"), "{stdout}");
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
