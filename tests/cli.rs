//! The commands people type: `run`, `servers`, `doctor`.

use crate::common::Fixture;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_prints_output_and_exits_with_the_cell_status() {
    let fx = Fixture::new();
    let ok = fx
        .command(
            "bubblewrap",
            &[
                "run",
                "--servers",
                "everything",
                "print(await mcp_everything.echo(message='hi'))",
            ],
        )
        .output()
        .await
        .expect("codemode run");
    assert!(ok.status.success(), "{ok:?}");
    assert_eq!(String::from_utf8_lossy(&ok.stdout), "Echo: hi\n");
    let err = fx
        .command("bubblewrap", &["run", "1/0"])
        .output()
        .await
        .expect("codemode run");
    assert_eq!(err.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&err.stderr).contains("ZeroDivisionError"));
    let bad = fx
        .command("bubblewrap", &["run", "--servers", "nope", "1"])
        .output()
        .await
        .expect("run");
    assert_eq!(bad.status.code(), Some(2));
    let slow = fx
        .command(
            "bubblewrap",
            &["--max-timeout", "1", "run", "while True: pass"],
        )
        .output()
        .await
        .expect("run");
    assert_eq!(slow.status.code(), Some(124), "{slow:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_lists_sources_and_tool_counts() {
    let fx = Fixture::new();
    let out = fx
        .command("bubblewrap", &["servers", "--tools"])
        .output()
        .await
        .expect("servers");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.contains("everything") && text.contains("tools"),
        "{text}"
    );
    assert!(
        text.contains("servers.json"),
        "names the source file: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_runtime_sandbox_and_servers() {
    let fx = Fixture::new();
    for runtime in ["bubblewrap", "podman"] {
        let out = fx
            .command(runtime, &["doctor"])
            .output()
            .await
            .expect("doctor");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{runtime}: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("[ok  ] sandbox"), "{text}");
        assert!(text.contains("[ok  ] server time"), "{text}");
    }
    // A broken config and a server that cannot start are reported with a fix.
    let broken =
        Fixture::with_servers(serde_json::json!({"ghost": {"command": "/nonexistent/server"}}));
    std::fs::write(broken.dir.path().join("extra.json"), "{ not json").expect("write");
    let out = broken
        .command(
            "bubblewrap",
            &[
                "--config",
                &broken.dir.path().join("extra.json").display().to_string(),
                "doctor",
            ],
        )
        .output()
        .await
        .expect("doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("[FAIL] server ghost"), "{text}");
    assert!(text.contains("extra.json"), "{text}");
}

/// The README's promise: after the setup, from the checkout, with no
/// `--config`, the demo servers are discovered in ./mcp-servers/. The setup
/// approves the demo config it writes; a fresh state dir (as here) has no
/// approval yet, so the first run is refused and says how to approve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_one_liner_works_from_the_checkout() {
    let root = crate::common::repo_root();
    assert!(
        root.join("mcp-servers/demo.json").exists(),
        "scripts/lib.sh writes the demo config"
    );
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state").display().to_string();
    let codemode = |args: &[&str]| {
        let mut cmd = tokio::process::Command::new(crate::common::codemode_bin());
        cmd.args(["--state-dir", &state])
            .args(args)
            .env("HOME", home.path())
            .env_remove("MCP_SERVERS_CONFIG")
            .current_dir(&root);
        cmd
    };
    let one_liner = [
        "run",
        "--servers",
        "everything",
        "print(await mcp_everything.echo(message=\"hi\"))",
    ];
    let out = codemode(&one_liner).output().await.unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not approved") && stderr.contains(" trust "),
        "{stderr}"
    );
    let out = codemode(&["trust", "mcp-servers/demo.json"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = codemode(&one_liner).output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Echo: hi\n");
    // Project configs can also be ignored altogether, approved or not.
    let out = codemode(&[
        "--no-project-configs",
        "run",
        "--servers",
        "everything",
        "print(1)",
    ])
    .output()
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "everything is unknown without ./mcp-servers/"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown server"));
}

/// A configured runtime that cannot work is refused with a clear error and
/// a fix; codemode never runs the code some other way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_runtime_is_refused_never_bypassed() {
    let fx = Fixture::new();
    let cases: [(&[&str], &str); 3] = [
        (
            &[
                "--runtime",
                "podman",
                "--image",
                "localhost/codemode-missing:0",
            ],
            "codemode image build",
        ),
        (
            &[
                "--runtime",
                "bubblewrap",
                "--guest",
                "/nonexistent/codemode-guest",
            ],
            "guest binary",
        ),
        (&["--runtime", "docker"], "docker"),
    ];
    for (flags, expected) in cases {
        let mut args: Vec<&str> = flags.to_vec();
        args.extend(["run", "print('ran outside a sandbox')"]);
        let mut cmd = tokio::process::Command::new(crate::common::codemode_bin());
        cmd.args(["--config", &fx.config().display().to_string()]);
        cmd.args(["--state-dir", &fx.state().display().to_string()]);
        cmd.args(&args);
        cmd.env("HOME", fx.dir.path().join("home"))
            .current_dir(fx.dir.path());
        let out = cmd.output().await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?} must fail here: {stderr}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("ran outside"),
            "{flags:?}"
        );
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
    }
}

/// Config text and a server's own stderr reach the terminal escaped:
/// `codemode servers` and `doctor` print no raw control characters, so a
/// config or a server cannot retitle the terminal or rewrite its lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_and_doctor_escape_what_configs_and_servers_print() {
    let fx = Fixture::with_servers(serde_json::json!({
        "loud": {
            "command": "sh",
            "args": ["-c", "printf '\\033]0;pwned\\007 bad start\\n' >&2; exit 1"],
            "description": "\u{1b}[2J\u{1b}]0;retitled\u{7} looks harmless"
        }
    }));
    // `servers` shows the description and the failed start's stderr;
    // `doctor` shows the stderr.
    let cases: [(&[&str], &[&str]); 2] = [
        (&["servers", "--tools"], &["looks harmless", "bad start"]),
        (&["doctor"], &["bad start"]),
    ];
    for (args, shown) in cases {
        let out = fx
            .command("bubblewrap", args)
            .output()
            .await
            .expect("codemode");
        let text = String::from_utf8_lossy(&out.stdout);
        for line in shown {
            assert!(text.contains(line), "{args:?} shows {line:?}: {text}");
        }
        assert!(
            !out.stdout.iter().any(|b| *b == 0x1b || *b == 0x07),
            "raw control characters in {args:?} output: {text:?}"
        );
    }
}
