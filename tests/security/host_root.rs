//! Attacks on the host's root account from a cell: writing a sysctl that
//! makes the kernel run a program as root (`kernel.core_pattern`), and
//! leaving a root-owned setuid file on a host path. Both worked when
//! bubblewrap mapped the sandbox user to host root.

use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use serde_json::json;

use crate::common::Fixture;
use crate::per_runtime;

const CORE_PATTERN: &str = "/proc/sys/kernel/core_pattern";

/// Puts `core_pattern` back if a failing sandbox managed to change it, so
/// a failed test never leaves the host altered.
struct RestoreCorePattern(String);

impl Drop for RestoreCorePattern {
    fn drop(&mut self) {
        if std::fs::read_to_string(CORE_PATTERN).ok().as_deref() != Some(self.0.as_str()) {
            let _ = std::fs::write(CORE_PATTERN, self.0.trim_end());
        }
    }
}

/// The host uid of the thread named `marker` (set by the cell with
/// PR_SET_NAME), found by scanning every task on the host.
fn host_uid_of_task(marker: &str) -> Option<u32> {
    for p in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if comm.trim() == marker {
                let status = std::fs::read_to_string(t.path().join("status")).ok()?;
                let uid = status.lines().find(|l| l.starts_with("Uid:"))?;
                // Real, effective, saved, fs: any of them root is a failure.
                let ids: Vec<u32> = uid
                    .split_whitespace()
                    .skip(1)
                    .filter_map(|x| x.parse().ok())
                    .collect();
                return ids.iter().copied().min();
            }
        }
    }
    None
}

async fn core_pattern_cannot_be_written_and_nothing_runs_as_root(runtime: &str) {
    let before = std::fs::read_to_string(CORE_PATTERN).expect("read core_pattern");
    let _restore = RestoreCorePattern(before.clone());
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let marker = format!("cmprobe{:x}", std::process::id() & 0xffff);
    let code = format!(
        r#"{syscall}
import time
syscall(157, 15, b"{marker}", 0, 0, 0)
def attempt(path, value):
    try:
        with open(path, "w") as f:
            f.write(value)
        return "written"
    except OSError as e:
        return "denied:" + (e.strerror or type(e).__name__)
print("core_pattern", attempt("/proc/sys/kernel/core_pattern", "|/tmp/evil %p"))
print("modprobe", attempt("/proc/sys/kernel/modprobe", "/tmp/evil"))
print("sysrq", attempt("/proc/sysrq-trigger", "h"))
print("mounts", [l.split()[4] + " " + l.split()[5] for l in open("/proc/self/mountinfo") if l.split()[4] == "/proc/sys"])
time.sleep(3)
"#,
        syscall = super::SYSCALL_PY,
    );
    let (r, host_uid) = tokio::join!(c.call(json!({"code": code, "timeout": 30})), async {
        for _ in 0..60 {
            if let Some(uid) = host_uid_of_task(&marker) {
                return Some(uid);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    });
    assert_eq!(r.status(), "success", "{r:?}");
    let out = r.stdout();
    for key in ["core_pattern", "modprobe", "sysrq"] {
        let line = out.lines().find(|l| l.starts_with(key)).unwrap_or("");
        assert!(line.contains("denied"), "{key} must not be writable: {out}");
    }
    assert!(
        out.contains("/proc/sys ro"),
        "/proc/sys is mounted read-only: {out}"
    );
    assert_eq!(
        std::fs::read_to_string(CORE_PATTERN).expect("read"),
        before,
        "the host's core_pattern is unchanged"
    );
    let uid = host_uid.expect("the cell's thread is visible on the host");
    assert_ne!(uid, 0, "the sandbox runs as host root");
    c.close().await;
}
per_runtime!(core_pattern_cannot_be_written_and_nothing_runs_as_root);

async fn setuid_file_on_a_host_mount_is_never_root_owned(runtime: &str) {
    let shared = tempfile::tempdir().expect("tempdir");
    // The sandbox user must be able to write here whoever runs the test.
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let fx = Fixture::new();
    let mount = format!("{}:/data:rw", shared.path().display());
    let c = fx.client(runtime, &["--mount", &mount]).await;
    let code = r##"
import os
for d in ("/data", "/tmp", "/workspace"):
    p = os.path.join(d, "suid")
    with open(p, "w") as f:
        f.write("#!/bin/sh\nid\n")
    try:
        os.chmod(p, 0o4755)
    except OSError as e:
        print("chmod", d, "denied", e.strerror)
    st = os.stat(p)
    print("file", d, st.st_uid, oct(st.st_mode & 0o7777))
for line in open("/proc/self/mountinfo"):
    parts = line.split()
    if parts[4] in ("/data", "/tmp", "/workspace"):
        print("opts", parts[4], parts[5])
"##;
    let r = c.run(code).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let out = r.stdout();
    let meta = std::fs::metadata(shared.path().join("suid")).expect("file made by the cell");
    assert!(
        meta.uid() != 0 || meta.mode() & 0o4000 == 0,
        "a cell left a setuid-root file on the host: uid {} mode {:o}\n{out}",
        meta.uid(),
        meta.mode()
    );
    assert_ne!(
        meta.uid(),
        0,
        "files the sandbox writes are not root's on the host"
    );
    for d in ["/data", "/tmp", "/workspace"] {
        let opts = out
            .lines()
            .find(|l| l.starts_with(&format!("opts {d} ")))
            .unwrap_or_else(|| panic!("{d} is mounted: {out}"));
        assert!(opts.contains("nosuid"), "{d} must be nosuid: {opts}");
        assert!(opts.contains("nodev"), "{d} must be nodev: {opts}");
        if runtime == "podman" {
            assert!(opts.contains("noexec"), "{d} must be noexec: {opts}");
        }
    }
    c.close().await;
}
per_runtime!(setuid_file_on_a_host_mount_is_never_root_owned);
