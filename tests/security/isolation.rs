//! The sandbox checked from inside: no network (not even the host's
//! loopback), read-only root, no capabilities, not root, no host files,
//! memory and process limits that hold.

use serde_json::json;

use crate::common::{repo_root, Fixture};
use crate::per_runtime;

async fn sandbox_is_isolated(runtime: &str) {
    // A listener on the host's loopback that the sandbox must not reach.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let checkout = repo_root().canonicalize().expect("checkout");
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let code = format!(
        r#"
import os, socket
def attempt(f):
    try:
        f()
        return "allowed"
    except Exception as e:
        return "denied:" + type(e).__name__
print("loopback", attempt(lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2)))
print("dns", attempt(lambda: socket.getaddrinfo("example.com", 80)))
print("root_write", attempt(lambda: open("/usr/evil", "w")))
print("etc_write", attempt(lambda: open("/etc/evil", "w")))
print("uid", os.getuid())
status = open("/proc/self/status").read()
print("capeff", [l.split()[1] for l in status.splitlines() if l.startswith("CapEff")][0])
print("nonewprivs", [l.split()[1] for l in status.splitlines() if l.startswith("NoNewPrivs")][0])
print("root_home", os.path.exists("/root/.bashrc") or os.path.exists("/root/.cargo"))
print("checkout", os.path.exists("{checkout}/Cargo.toml"))
print("tmp_write", attempt(lambda: open("/tmp/ok", "w").write("x")))
try:
    ifaces = [n for _, n in socket.if_nameindex()]
except OSError:
    ifaces = "unlisted (netlink refused)"
print("ifaces", ifaces)
"#,
        checkout = checkout.display()
    );
    let r = c.run(&code).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let out = r.stdout();
    let line = |key: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or("")
            .to_string()
    };
    assert!(line("loopback").contains("denied"), "{out}");
    assert!(line("dns").contains("denied"), "{out}");
    assert!(line("root_write").contains("denied"), "{out}");
    assert!(line("etc_write").contains("denied"), "{out}");
    assert_ne!(line("uid"), "uid 0", "{out}");
    assert_eq!(line("capeff"), "capeff 0000000000000000", "{out}");
    assert_eq!(line("root_home"), "root_home False", "{out}");
    assert_eq!(line("checkout"), "checkout False", "{out}");
    assert_eq!(line("tmp_write"), "tmp_write allowed", "{out}");
    assert!(
        !line("ifaces").contains("eth"),
        "only loopback inside: {out}"
    );
    drop(listener);
    c.close().await;
}
per_runtime!(sandbox_is_isolated);

async fn memory_limit_holds(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &["--memory", "256m"]).await;
    c.run("keep = 1").await;
    let r = c
        .call(json!({"code": "blocks = []\nfor i in range(64):\n    blocks.append(bytearray(32 * 1024 * 1024))\nprint('allocated 2 GiB')", "timeout": 60}))
        .await;
    assert_ne!(
        r.status(),
        "success",
        "allocating 2 GiB under a 256 MiB limit must fail: {r:?}"
    );
    assert!(!r.stdout().contains("allocated 2 GiB"));
    // The session answers afterwards (in a fresh sandbox if the old one was killed).
    let r = c.run("print('alive')").await;
    assert_eq!(r.stdout(), "alive\n", "{r:?}");
    c.close().await;
}
per_runtime!(memory_limit_holds);

async fn process_limit_holds(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &["--pids", "32"]).await;
    let code = r#"
import os, time
kids = []
err = None
for i in range(200):
    try:
        pid = os.fork()
    except OSError as e:
        err = type(e).__name__
        break
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    kids.append(pid)
print("forked", len(kids), "then", err)
for k in kids:
    os.kill(k, 9)
    os.waitpid(k, 0)
"#;
    let r = c.call(json!({"code": code, "timeout": 60})).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let forked: usize = r
        .stdout()
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(999);
    assert!(
        forked < 40,
        "a 32-process limit must stop the fork loop: {}",
        r.stdout()
    );
    c.close().await;
}
per_runtime!(process_limit_holds);

/// Code in the sandbox can find the guest's channel and write frames of its
/// own. The host must end that sandbox with a clear error, keep serving,
/// and give the next call a fresh sandbox.
async fn hostile_frames_end_the_sandbox_not_the_bridge(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    // A well-formed GuestMessage{finished: {id: 999}} for an execution that
    // is not running, then an absurd length prefix.
    let forged = r#"
import os
forged = bytes([0, 0, 0, 5, 0x22, 3, 0x08, 0xE7, 0x07]) + bytes([0x7F, 0xFF, 0xFF, 0xFF]) + b"garbage"
for fd in range(3, 64):
    try:
        if os.readlink(f"/proc/self/fd/{fd}").startswith(("pipe:", "socket:")):
            os.write(fd, forged)
    except OSError:
        pass
import time
time.sleep(2)
print("not reached")
"#;
    let r = c.call(json!({"code": forged, "timeout": 20})).await;
    assert_eq!(r.status(), "error", "{r:?}");
    let err = r.structured["error"].as_str().unwrap_or("");
    // The first forged frame is a Finished for an execution that is not
    // running: the typed violation names both.
    assert!(
        err.contains(
            "broke the protocol: received Finished for execution 999 while execution 1 runs"
        ),
        "names the violation: {err}"
    );
    assert!(!r.stdout().contains("not reached"));
    let r = c.run("print('fresh')").await;
    assert_eq!(r.status(), "success", "{r:?}");
    assert_eq!(r.stdout(), "fresh\n");
    c.close().await;
}
per_runtime!(hostile_frames_end_the_sandbox_not_the_bridge);

/// Kernel surface a cell never needs is closed: no nested namespaces (the
/// bubblewrap backend would allow them without its seccomp filter), no
/// mounts; threads, fork and subprocesses still work.
async fn namespaces_and_mounts_are_denied(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let code = format!(
        "{}{}",
        super::SYSCALL_PY,
        r#"
import os, subprocess, threading
print("unshare", syscall(272, 0x10000000)[1])
print("mount", syscall(165, b"none", b"/tmp", b"tmpfs", 0, None)[1])
t = threading.Thread(target=lambda: None); t.start(); t.join()
print("thread ok")
print("subprocess", subprocess.run([os.readlink("/proc/self/exe"), "--version"], capture_output=True).returncode)
"#
    );
    let r = c.run(&code).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let out = r.stdout();
    // The errno differs by backend (EPERM from our filter, EINVAL from
    // runc's setup); what matters is that neither call succeeded.
    assert!(
        out.contains("unshare ") && !out.contains("unshare 0\n"),
        "nested user namespace refused: {out}"
    );
    assert!(
        out.contains("mount ") && !out.contains("mount 0\n"),
        "mount refused: {out}"
    );
    assert!(out.contains("thread ok"), "{out}");
    assert!(out.contains("subprocess 0"), "{out}");
    c.close().await;
}
per_runtime!(namespaces_and_mounts_are_denied);

/// The static guest is all of the host a bubblewrap sandbox holds (run
/// as root and as the unprivileged user): no system directory, no host
/// config file, no program.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bubblewrap_cell_sees_nothing_of_the_host() {
    let fx = Fixture::new();
    let c = fx.client("bubblewrap", &[]).await;
    let code = r#"
import os
print(sorted(os.listdir("/")))
for path in ["/usr", "/lib", "/lib64", "/bin", "/etc", "/usr/local/etc/npmrc", "/etc/passwd", "/root"]:
    print(path, os.path.exists(path))
import subprocess
try:
    subprocess.run(["sh", "-c", "true"])
except FileNotFoundError:
    print("no shell")
"#;
    let r = c.run(code).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let out = r.stdout();
    assert!(
        out.starts_with("['dev', 'opt', 'proc', 'tmp', 'workspace']\n"),
        "{out}"
    );
    for path in [
        "/usr",
        "/lib",
        "/lib64",
        "/bin",
        "/etc",
        "/usr/local/etc/npmrc",
        "/etc/passwd",
        "/root",
    ] {
        assert!(out.contains(&format!("{path} False\n")), "{path}: {out}");
    }
    assert!(out.contains("no shell"), "{out}");
    c.close().await;
}
