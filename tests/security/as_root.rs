//! Attacks whose defence needs a cgroup codemode can create: as root here,
//! or on a host that delegates one (cgroup v2). `scripts/test.sh` runs
//! these only in its root pass; on this project's cgroup v1 CI hosts an
//! unprivileged codemode cannot cap CPU, and `codemode doctor` says so.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::common::Fixture;
use crate::per_runtime;

/// Two forked spinners outlive their cell. They must be held to the CPU
/// quota, and the model must be told they are still running.
async fn forked_spinners_are_capped_and_reported(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &["--cpus", "0.5"]).await;
    let start = r#"
import os
runtime.keep_processes()
spinners = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        while True:
            pass
    spinners.append(pid)
print("started", len(spinners))
"#;
    let r = c.run(start).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let notes = r.structured["notes"].to_string();
    assert!(
        notes.contains("2 processes") && notes.contains("still running"),
        "the model is told about the spinners: {r:?}"
    );
    let measure = r#"
import os, time
def ticks():
    total = 0
    for pid in spinners:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total
t0, c0 = time.monotonic(), ticks()
time.sleep(3)
t1, c1 = time.monotonic(), ticks()
print("cpus", (c1 - c0) / os.sysconf("SC_CLK_TCK") / (t1 - t0))
for pid in spinners:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
"#;
    let r = c.call(json!({"code": measure, "timeout": 30})).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let used: f64 = r
        .stdout()
        .trim()
        .strip_prefix("cpus ")
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::MAX);
    assert!(
        used < 0.75,
        "two spinners under a 0.5 CPU quota used {used:.2} CPUs"
    );
    c.close().await;
}
per_runtime!(forked_spinners_are_capped_and_reported);

/// This process's cgroup directory for a v1 controller (or v2).
fn own_cgroup_dirs() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let root = Path::new("/sys/fs/cgroup");
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
            let base = match ctrls {
                "" if root.join("cgroup.controllers").exists() => root.to_path_buf(),
                "pids" | "memory" | "cpu" => root.join(ctrls),
                _ => return None,
            };
            Some(base.join(path.trim_start_matches('/')))
        })
        .collect()
}

/// Sandbox cgroups named after bridge `pid`.
fn cgroups_of_bridge(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("codemode-codemode-{pid:x}");
    own_cgroup_dirs()
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|entries| entries.flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// bubblewrap's per-sandbox cgroups went with the thread that removed
/// them when the bridge exited; now they are removed before it exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_cgroups_do_not_outlive_the_bridge() {
    let fx = Fixture::new();
    let c = fx.client("bubblewrap", &["--warm-pool", "2"]).await;
    let pid = c.pid;
    let r = c.run("print('hi')").await;
    assert_eq!(r.status(), "success", "{r:?}");
    assert!(
        !cgroups_of_bridge(pid).is_empty(),
        "sandboxes run in their own cgroups while the bridge lives"
    );
    c.close().await;
    for _ in 0..200 {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !Path::new(&format!("/proc/{pid}/cmdline")).exists()
            || std::fs::read(format!("/proc/{pid}/cmdline"))
                .unwrap_or_default()
                .is_empty(),
        "the bridge exits on EOF"
    );
    let left = cgroups_of_bridge(pid);
    assert!(left.is_empty(), "cgroups left behind: {left:?}");
}
