//! One session's processes against everyone else's: a fork loop in one
//! session must not stop another session's sandbox from starting (without
//! root too, where no cgroup holds it), processes a cell leaves behind end
//! with it unless the session keeps them, none outlives codemode, and
//! `codemode doctor` says which limits this host enforces.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::Fixture;
use crate::per_runtime;

/// Python that forks `n` children (or until the sandbox's process limit
/// refuses one) which name themselves `mark` (the image has no `sleep` to
/// exec, so the name is set through /proc/self/comm) and sleep an hour.
fn fork_sleepers(mark: &str, n: usize) -> String {
    format!(
        r#"
import os, time
kids, err = [], None
for i in range({n}):
    try:
        pid = os.fork()
    except OSError as e:
        err = type(e).__name__
        break
    if pid == 0:
        try:
            with open("/proc/self/comm", "w") as comm:
                comm.write("{mark}")
            time.sleep(3600)
        finally:
            os._exit(0)
    kids.append(pid)
print("forked", len(kids), "then", err)
"#
    )
}

/// A process name (at most 15 bytes) no other test's processes have.
fn unique_mark() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("cm{:03}{nanos:09}", std::process::id() % 1000)
}

/// Live (not zombie) processes named `mark`.
fn live_sleepers(mark: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.trim_end() == mark)
        })
        .filter(|pid| crate::common::is_running(*pid))
        .collect()
}

/// Polls (every 50 ms, for at most `within`) the live processes named
/// `mark` until `done` holds of them; returns the last poll.
async fn poll_sleepers(mark: &str, within: Duration, done: impl Fn(&[i32]) -> bool) -> Vec<i32> {
    let until = Instant::now() + within;
    loop {
        let live = live_sleepers(mark);
        if done(&live) || Instant::now() >= until {
            return live;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How many of `n` processes named `mark` run, waiting for them: a forked
/// child names itself a moment after its cell may have finished.
async fn wait_for_sleepers(mark: &str, n: usize) -> usize {
    poll_sleepers(mark, Duration::from_secs(10), |live| live.len() >= n)
        .await
        .len()
}

async fn wait_until_gone(mark: &str, within: Duration) -> Vec<i32> {
    poll_sleepers(mark, within, <[i32]>::is_empty).await
}

fn forked(stdout: &str) -> usize {
    stdout
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Session A fills its process allowance with children that sleep for an
/// hour and keeps them; session B must still start a sandbox and run a
/// cell (processes included) at once, and this user must still be able to
/// start processes of its own. After codemode exits, none of A's remain.
async fn a_fork_loop_does_not_starve_other_sessions(runtime: &str) {
    let fx = Fixture::new();
    let c = fx
        .client(runtime, &["--pids", "64", "--warm-pool", "0"])
        .await;
    let mark = unique_mark();
    let a = c
        .call(json!({
            "code": format!("runtime.keep_processes()\n{}", fork_sleepers(&mark, 500)),
            "session": "a",
            "timeout": 60,
        }))
        .await;
    assert_eq!(a.status(), "success", "{a:?}");
    assert!(
        a.stdout().ends_with("then BlockingIOError\n") && forked(a.stdout()) >= 30,
        "session A reaches its own limit: {a:?}"
    );
    assert!(
        a.structured["notes"].to_string().contains("still running"),
        "the model is told its kept processes still run: {a:?}"
    );
    let held = wait_for_sleepers(&mark, forked(a.stdout())).await;
    assert_eq!(held, forked(a.stdout()), "A's sleepers are alive");

    let started = Instant::now();
    let b = c
        .call(json!({
            "code": "import os\npid = os.fork()\nif pid == 0:\n    os._exit(7)\nprint('b runs', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))",
            "session": "b",
            "timeout": 30,
        }))
        .await;
    let took = started.elapsed();
    assert_eq!(b.status(), "success", "session B starts beside A: {b:?}");
    assert_eq!(b.stdout(), "b runs 7\n", "{b:?}");
    assert!(
        took < Duration::from_secs(20),
        "session B waited {took:?} for a sandbox"
    );
    let own = std::process::Command::new("true").status();
    assert!(
        own.is_ok_and(|s| s.success()),
        "this user can still start processes of its own"
    );

    let pid = c.pid;
    c.close().await;
    let left = wait_until_gone(&mark, Duration::from_secs(20)).await;
    assert!(
        left.is_empty(),
        "processes of session A outlived codemode: {left:?}"
    );
    let until = Instant::now() + Duration::from_secs(20);
    while crate::common::is_running(pid as i32) && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!crate::common::is_running(pid as i32), "codemode exited");
}
per_runtime!(a_fork_loop_does_not_starve_other_sessions);

/// Without `keep_processes()`, what a cell starts ends with the cell, and
/// the model is told; with it, processes stay until it is turned off. The
/// cell's own children are left for it to reap, with their real status.
async fn cell_processes_end_with_the_cell(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &["--pids", "64"]).await;
    let mark = unique_mark();
    let r = c.run(&fork_sleepers(&mark, 3)).await;
    assert_eq!(r.stdout(), "forked 3 then None\n", "{r:?}");
    assert!(
        r.structured["notes"]
            .to_string()
            .contains("3 processes this cell left running were ended"),
        "the model is told: {r:?}"
    );
    let left = live_sleepers(&mark);
    assert!(
        left.is_empty(),
        "the cell's processes outlived it: {left:?}"
    );
    let r = c
        .run("print([os.waitstatus_to_exitcode(os.waitpid(k, 0)[1]) for k in kids])")
        .await;
    assert_eq!(
        r.stdout(),
        "[-9, -9, -9]\n",
        "the cell reaps its SIGKILLed children: {r:?}"
    );

    let r = c
        .run(&format!(
            "print(runtime.keep_processes())\n{}",
            fork_sleepers(&mark, 2)
        ))
        .await;
    assert_eq!(r.stdout(), "False\nforked 2 then None\n", "{r:?}");
    assert_eq!(
        wait_for_sleepers(&mark, 2).await,
        2,
        "kept processes run on: {r:?}"
    );
    let r = c
        .run("print(runtime.keep_processes(False), [os.waitpid(k, os.WNOHANG) for k in kids])")
        .await;
    assert_eq!(r.stdout(), "True [(0, 0), (0, 0)]\n", "{r:?}");
    assert!(
        live_sleepers(&mark).is_empty(),
        "turning keep off ends them at the end of that cell"
    );
    let r = c.run("runtime.keep_processes('yes')").await;
    assert!(
        r.structured["error"]
            .to_string()
            .contains("keep must be True or False"),
        "{r:?}"
    );
    c.close().await;
}
per_runtime!(cell_processes_end_with_the_cell);

/// `codemode doctor` names every limit and how it holds here; on
/// bubblewrap the process limit is per sandbox whoever runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_states_the_enforced_limits() {
    let fx = Fixture::new();
    let out = fx
        .command("bubblewrap", &["doctor"])
        .output()
        .await
        .expect("doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    for what in [
        "limit processes:",
        "limit your processes:",
        "limit memory:",
        "limit cpu:",
        "limit leftover processes:",
    ] {
        assert!(text.contains(what), "doctor names {what:?}:\n{text}");
    }
    let processes = text
        .lines()
        .find(|l| l.contains("limit processes:"))
        .unwrap_or_default();
    assert!(
        processes.starts_with("[ok  ]")
            && (processes.contains("own user namespace") || processes.contains("cgroup")),
        "the process limit holds per sandbox: {processes}"
    );
    let root = running_as_root();
    let memory = text
        .lines()
        .find(|l| l.contains("limit memory:"))
        .unwrap_or_default();
    let per_sandbox = memory.starts_with("[ok  ]") && memory.contains("per sandbox (cgroup");
    let per_process = memory.starts_with("[warn]") && memory.contains("per process");
    assert!(
        if root {
            per_sandbox
        } else {
            per_sandbox || per_process
        },
        "memory is per sandbox with a cgroup, else per process, and doctor says which: {memory}"
    );
    assert!(out.status.success(), "doctor passes here:\n{text}");
}

/// Whether the tests run as root (the uid of /proc/self).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A codemode killed outright (SIGKILL, no clean-up of its own) takes its
/// sandboxes' processes with it: bubblewrap dies with its parent and the
/// sandbox's pid namespace with bubblewrap. (A killed codemode's podman
/// containers are removed by the next start's sweep instead.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_processes_die_with_a_killed_codemode() {
    let fx = Fixture::new();
    let c = fx.client("bubblewrap", &["--pids", "64"]).await;
    let mark = unique_mark();
    let r = c
        .run(&format!(
            "runtime.keep_processes()\n{}",
            fork_sleepers(&mark, 5)
        ))
        .await;
    assert_eq!(r.stdout(), "forked 5 then None\n", "{r:?}");
    assert_eq!(wait_for_sleepers(&mark, 5).await, 5, "kept: {r:?}");
    let sent = std::process::Command::new("kill")
        .args(["-KILL", &c.pid.to_string()])
        .status();
    assert!(sent.is_ok_and(|s| s.success()), "SIGKILL codemode");
    let left = wait_until_gone(&mark, Duration::from_secs(20)).await;
    assert!(
        left.is_empty(),
        "processes outlived a killed codemode: {left:?}"
    );
    drop(c);
}
