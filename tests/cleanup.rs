//! Nothing outlives the bridge: no guest process, no container, no
//! proxied server after the client disconnects.

use std::time::Duration;

use crate::common::{children_matching, is_running, processes_matching, Fixture};
use crate::per_runtime;

async fn nothing_is_left_after_disconnect(runtime: &str) {
    let fx = Fixture::new();
    let state = fx.state().display().to_string();
    let c = fx.client(runtime, &["--warm-pool", "2"]).await;
    let r = c
        .run_with(
            "print((await mcp_time.get_current_time(timezone='UTC'))['timezone'])",
            &["time"],
        )
        .await;
    assert_eq!(r.status(), "success", "{r:?}");
    assert!(
        !processes_matching("mcp-server-time").is_empty(),
        "the proxied server runs while the session lives"
    );
    let pid = c.pid;
    // Sandboxes and proxied servers: the bridge's children.
    let children = children_matching(pid, "");
    assert!(!children.is_empty(), "the bridge has children");
    c.close().await;
    let mut left = Vec::new();
    for _ in 0..100 {
        left = processes_matching(&state);
        left.extend(
            children
                .iter()
                .filter(|p| is_running(**p))
                .map(|p| format!("child {p}")),
        );
        left.extend(processes_matching(&fx.config().display().to_string()));
        left.retain(|p| !p.contains("cargo") && !p.contains("/deps/all-"));
        if runtime == "podman" {
            left.extend(
                podman_containers_of(pid)
                    .into_iter()
                    .map(|n| format!("container {n}")),
            );
        }
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(left.is_empty(), "left behind after disconnect: {left:#?}");
}
per_runtime!(nothing_is_left_after_disconnect);

fn podman_containers_of(pid: u32) -> Vec<String> {
    let out = std::process::Command::new("podman")
        .args([
            "ps",
            "-a",
            "--filter",
            &format!("label=io.codemode.owner-pid={pid}"),
            "--format",
            "{{.Names}}",
        ])
        .output()
        .expect("podman ps");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// SIGTERM to the bridge shuts everything down like a disconnect.
async fn sigterm_cleans_up(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let r = c.run_with("print(1)", &["time"]).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let pid = c.pid;
    let children = children_matching(pid, "");
    assert!(!children.is_empty(), "the bridge has children");
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let state = fx.state().display().to_string();
    let mut left = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = processes_matching(&state);
        left.extend(
            children
                .iter()
                .filter(|p| is_running(**p))
                .map(|p| format!("child {p}")),
        );
        left.retain(|p| !p.contains("/deps/all-"));
        if runtime == "podman" {
            left.extend(podman_containers_of(pid));
        }
        if left.is_empty() {
            break;
        }
    }
    assert!(left.is_empty(), "left behind after SIGTERM: {left:#?}");
    drop(c);
}
per_runtime!(sigterm_cleans_up);

/// A codemode killed outright cannot clean up, but nothing it started
/// outlives it: bubblewrap has --die-with-parent, proxied servers get
/// SIGKILL as their parent-death signal, and podman's client gets SIGTERM,
/// on which it stops and removes its container.
async fn a_killed_codemode_leaves_nothing(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &["--warm-pool", "2"]).await;
    let r = c.run_with("print(1)", &["time"]).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let pid = c.pid;
    let children = children_matching(pid, "");
    assert!(children.len() >= 2, "a sandbox and a server: {children:?}");
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    let mut left = Vec::new();
    for _ in 0..150 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = children
            .iter()
            .filter(|p| is_running(**p))
            .map(|p| format!("child {p}"))
            .collect();
        if runtime == "podman" {
            left.extend(podman_containers_of(pid));
        }
        if left.is_empty() {
            break;
        }
    }
    assert!(
        left.is_empty(),
        "left behind by a killed codemode: {left:#?}"
    );
    drop(c);
}
per_runtime!(a_killed_codemode_leaves_nothing);

/// A container whose owner is gone (a start interrupted before its client
/// could clean up: left `created`, say) is removed by the next bridge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gone_bridges_containers_are_swept_by_the_next_one() {
    let fx = Fixture::new();
    let mut exited = std::process::Command::new("true").spawn().expect("true");
    let gone = exited.id();
    exited.wait().expect("wait");
    let image = String::from_utf8_lossy(
        &std::process::Command::new("podman")
            .args(["images", "--format", "{{.Repository}}:{{.Tag}}"])
            .args(["--filter", "reference=localhost/codemode-sandbox"])
            .output()
            .expect("podman images")
            .stdout,
    )
    .lines()
    .next()
    .expect("a codemode image")
    .to_string();
    let name = format!("codemode-leftover-{gone}");
    let created = std::process::Command::new("podman")
        .args(["create", "--name", &name])
        .args(["--label", &format!("io.codemode.owner-pid={gone}")])
        .arg(&image)
        .output()
        .expect("podman create");
    assert!(created.status.success(), "{created:?}");
    assert_eq!(podman_containers_of(gone), std::slice::from_ref(&name));
    let next = fx.client("podman", &[]).await;
    assert_eq!(next.run("print(2)").await.status(), "success");
    // The sweep runs beside the bridge's start-up.
    let mut left = podman_containers_of(gone);
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = podman_containers_of(gone);
    }
    assert!(left.is_empty(), "{name} was swept");
    next.close().await;
}
