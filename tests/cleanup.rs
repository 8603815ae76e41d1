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

/// A bridge killed outright cannot clean up; bubblewrap sandboxes die with
/// it (--die-with-parent) and the next podman bridge sweeps its containers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_bridges_containers_are_swept_by_the_next_one() {
    let fx = Fixture::new();
    let c = fx.client("podman", &[]).await;
    assert_eq!(c.run("print(1)").await.status(), "success");
    let pid = c.pid;
    assert!(
        !podman_containers_of(pid).is_empty(),
        "its sandbox container runs"
    );
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(c);
    let next = fx.client("podman", &[]).await;
    assert_eq!(next.run("print(2)").await.status(), "success");
    let mut left = podman_containers_of(pid);
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = podman_containers_of(pid);
    }
    assert!(left.is_empty(), "swept: {left:?}");
    next.close().await;
}
