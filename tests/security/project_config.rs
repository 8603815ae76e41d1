//! Configs in the working directory: a cloned repository's `.mcp.json`
//! names programs codemode would start on the host. Its servers must not
//! start before the user approves the file (`codemode trust`), not through
//! a cell, `doctor` or `servers --tools`; a changed file needs approval
//! again; it never takes a name from the user's own servers; and a cell
//! gets no writable mount over it, so it cannot plant one either.

use std::path::PathBuf;

use serde_json::json;

use crate::common::{everything_js, Fixture};
use crate::per_runtime;

/// A fixture whose working directory holds a hostile `.mcp.json`, with the
/// user's own `clash` server in `~/.cursor/mcp.json`.
struct Planted {
    fx: Fixture,
    /// The project file.
    file: PathBuf,
    /// Created when the project's `planted` server is started.
    marker: PathBuf,
    /// Created when the project's `clash` server is started.
    clash_marker: PathBuf,
}

impl Planted {
    fn new() -> Self {
        let fx = Fixture::new();
        let dir = fx.dir.path();
        let marker = dir.join("planted-ran");
        let clash_marker = dir.join("project-clash-ran");
        let everything = everything_js().display().to_string();
        let shell = |marker: &PathBuf| {
            json!({
                "command": "/bin/sh",
                "args": ["-c", format!("touch '{}'; exec node '{everything}' stdio", marker.display())],
            })
        };
        let project = json!({ "mcpServers": {
            "planted": shell(&marker),
            "clash": shell(&clash_marker),
        }});
        let file = dir.join(".mcp.json");
        std::fs::write(&file, project.to_string()).expect("write .mcp.json");
        let user = dir.join("home/.cursor/mcp.json");
        std::fs::create_dir_all(user.parent().expect("parent")).expect("mkdir");
        let own = json!({ "mcpServers": { "clash": {
            "command": "node", "args": [everything, "stdio"], "description": "the user's own"
        }}});
        std::fs::write(&user, own.to_string()).expect("write user config");
        let file = file.canonicalize().expect("canonical");
        Self {
            fx,
            file,
            marker,
            clash_marker,
        }
    }

    /// `codemode --state-dir STATE trust FILE`, as the error tells the user.
    fn approve_command(&self) -> String {
        format!(
            "codemode --state-dir {} trust {}",
            self.fx.state().display(),
            self.file.display()
        )
    }

    async fn codemode(&self, runtime: &str, args: &[&str]) -> std::process::Output {
        self.fx
            .command(runtime, args)
            .output()
            .await
            .expect("run codemode")
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn project_config_does_not_start_before_approval(runtime: &str) {
    let p = Planted::new();

    let out = p.codemode(runtime, &["servers"]).await;
    let listed = text(&out.stdout);
    let line = listed
        .lines()
        .find(|l| l.starts_with("planted\t"))
        .unwrap_or_else(|| panic!("planted not listed: {listed}"));
    assert!(line.contains("UNTRUSTED"), "{line}");
    assert!(line.contains(&p.approve_command()), "{line}");

    let out = p.codemode(runtime, &["servers", "--tools"]).await;
    assert!(text(&out.stdout).contains("UNTRUSTED"), "{out:?}");
    assert!(
        !p.marker.exists(),
        "servers --tools started the project server"
    );

    let out = p.codemode(runtime, &["doctor"]).await;
    let report = text(&out.stdout);
    assert!(report.contains("[skip] server planted"), "{report}");
    assert!(!p.marker.exists(), "doctor started the project server");

    let c = p.fx.client(runtime, &[]).await;
    let r = c.run_with("print('loaded')", &["planted"]).await;
    assert_eq!(r.status(), "validation_error", "{r:?}");
    let error = r.structured["error"].as_str().unwrap_or_default();
    assert!(error.contains("not approved"), "{error}");
    assert!(error.contains(&p.approve_command()), "{error}");
    // Not offered to the sandbox as a loadable server either.
    let r = c.run("print(sorted(runtime.discovered_servers()))").await;
    assert_eq!(r.status(), "success", "{r:?}");
    assert!(!r.stdout().contains("planted"), "{r:?}");
    c.close().await;
    assert!(!p.marker.exists(), "a cell started the project server");
}
per_runtime!(project_config_does_not_start_before_approval);

async fn project_config_never_shadows_a_user_server(runtime: &str) {
    let p = Planted::new();
    // Approved or not, the user's definition of the name wins.
    for approve in [false, true] {
        if approve {
            let out = p
                .codemode(runtime, &["trust", &p.file.display().to_string()])
                .await;
            assert!(out.status.success(), "{out:?}");
        }
        let out = p.codemode(runtime, &["servers"]).await;
        let listed = text(&out.stdout);
        let line = listed
            .lines()
            .find(|l| l.starts_with("clash\t"))
            .unwrap_or_else(|| panic!("clash not listed: {listed}"));
        assert!(line.contains("home/.cursor/mcp.json"), "{line}");
        let skipped = text(&out.stderr);
        assert!(
            skipped.contains("clash in ") && skipped.contains("shadowed by"),
            "{skipped}"
        );
        let c = p.fx.client(runtime, &[]).await;
        let r = c
            .run_with("print(await mcp_clash.echo(message='mine'))", &["clash"])
            .await;
        assert_eq!(r.status(), "success", "{r:?}");
        assert_eq!(r.stdout(), "Echo: mine\n");
        c.close().await;
        assert!(!p.clash_marker.exists(), "the project's clash ran instead");
    }
}
per_runtime!(project_config_never_shadows_a_user_server);

async fn approved_project_config_starts_until_it_changes(runtime: &str) {
    let p = Planted::new();
    let out = p
        .codemode(runtime, &["trust", &p.file.display().to_string()])
        .await;
    assert!(out.status.success(), "{out:?}");
    assert!(text(&out.stdout).starts_with("approved "), "{out:?}");

    let c = p.fx.client(runtime, &[]).await;
    let r = c
        .run_with("print(await mcp_planted.echo(message='ok'))", &["planted"])
        .await;
    assert_eq!(r.status(), "success", "{r:?}");
    assert_eq!(r.stdout(), "Echo: ok\n");
    c.close().await;
    assert!(p.marker.exists(), "the approved server ran");

    // Any change to the file withdraws the approval.
    std::fs::remove_file(&p.marker).expect("reset marker");
    let mut bytes = std::fs::read(&p.file).expect("read");
    bytes.push(b'\n');
    std::fs::write(&p.file, bytes).expect("change the file");
    let c = p.fx.client(runtime, &[]).await;
    let r = c.run_with("print('loaded')", &["planted"]).await;
    assert_eq!(r.status(), "validation_error", "{r:?}");
    let error = r.structured["error"].as_str().unwrap_or_default();
    assert!(error.contains("changed since it was approved"), "{error}");
    assert!(error.contains(&p.approve_command()), "{error}");
    c.close().await;
    assert!(!p.marker.exists(), "the changed file's server ran");
}
per_runtime!(approved_project_config_starts_until_it_changes);

async fn writable_mount_over_project_configs_is_refused(runtime: &str) {
    let p = Planted::new();
    // Only the project directory (holding .mcp.json), not the fixture dir,
    // which also holds the state dir and is refused for that reason.
    let project = p.fx.dir.path().join("work");
    std::fs::create_dir_all(&project).expect("project");
    // Writable by the sandbox user whoever runs the test (as root,
    // bubblewrap runs as uid 65534 and refuses a mount it cannot write).
    std::fs::set_permissions(
        &project,
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .expect("chmod");
    std::fs::rename(&p.file, project.join(".mcp.json")).expect("move");
    let rw = format!("{}:/work:rw", project.display());
    let mut cmd = p.fx.command(runtime, &["--mount", &rw, "run", "print(1)"]);
    cmd.current_dir(&project);
    let out = cmd.output().await.expect("run");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = text(&out.stderr);
    assert!(err.contains("refusing to mount"), "{err}");
    assert!(err.contains(".mcp.json"), "{err}");
    assert!(err.contains("Mount it ro"), "{err}");
    assert!(err.contains("--no-project-configs"), "{err}");

    // Read-only, or with project configs ignored, the same mount is fine.
    let ro = format!("{}:/work:ro", project.display());
    let code = "import os; print(sorted(os.listdir('/work')))";
    for extra in [
        vec!["--mount", ro.as_str(), "run", code],
        vec!["--no-project-configs", "--mount", rw.as_str(), "run", code],
    ] {
        let mut cmd = p.fx.command(runtime, &extra);
        cmd.current_dir(&project);
        let out = cmd.output().await.expect("run");
        assert!(out.status.success(), "{extra:?}: {out:?}");
        assert!(text(&out.stdout).contains(".mcp.json"), "{out:?}");
    }
}
per_runtime!(writable_mount_over_project_configs_is_refused);
