//! Per-sandbox cgroups for the bubblewrap backend, when this process may
//! create them (root, or a delegated subtree): pids, memory and CPU limits
//! that rlimits cannot give (RLIMIT_NPROC counts every process of a uid,
//! not one sandbox's). Nested under codemode's own cgroup, named after the
//! sandbox (`codemode-<sandbox name>`, which carries the bridge's pid), and
//! removed once empty: awaited on shutdown, retried for ones a `Drop` could
//! not remove, and swept at start-up for bridges that died.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

const ROOT: &str = "/sys/fs/cgroup";
/// CFS period for the CPU quota: the kernel's default.
const CPU_PERIOD_US: u64 = 100_000;
/// How long a shutdown waits for a sandbox's last processes to leave its
/// cgroup (the kernel tears a pid namespace down asynchronously).
const REMOVE_WAIT: Duration = Duration::from_secs(5);
/// 10 ms steps a `Drop` waits for a killed sandbox's cgroup to empty.
const DROP_WAIT_STEPS: u32 = 50;
/// Prefix of every cgroup directory codemode creates.
const PREFIX: &str = "codemode-";

/// Limits one sandbox's cgroup applies.
#[derive(Debug, Clone, Copy)]
pub struct CgroupLimits {
    pub memory_bytes: u64,
    pub pids: u32,
    /// CPUs' worth of time per period (1.5 = one and a half cores).
    pub cpus: Option<f64>,
}

/// Cgroup directories created for one sandbox.
#[derive(Debug)]
pub struct SandboxCgroup {
    dirs: Vec<PathBuf>,
    procs: Vec<CString>,
    /// Whether the CPU quota was applied (the cpu controller may be absent).
    pub cpu_enforced: bool,
}

/// Cgroups a `Drop` could not remove yet (processes still exiting).
static LEFTOVERS: Mutex<Vec<SandboxCgroup>> = Mutex::new(Vec::new());

/// This process's cgroup path for a v1 controller, or the v2 path ("" key).
fn own_path(controller: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = if controller.is_empty() {
            ctrls.is_empty()
        } else {
            ctrls.split(',').any(|c| c == controller)
        };
        matches.then(|| path.to_string())
    })
}

pub(super) fn is_v2() -> bool {
    Path::new(ROOT).join("cgroup.controllers").exists()
}

/// "v2" or "v1", for reports.
pub(super) fn version_name() -> &'static str {
    if is_v2() {
        "v2"
    } else {
        "v1"
    }
}

/// The v2 controllers systemd delegates to this user (those a rootless
/// engine can use): listed in the user manager's cgroup, else in this
/// process's own.
pub(super) fn delegated_controllers() -> Vec<String> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let manager =
        format!("{ROOT}/user.slice/user-{uid}.slice/user@{uid}.service/cgroup.controllers");
    let own = own_path("").map(|p| format!("{ROOT}{p}/cgroup.controllers"));
    [Some(manager), own]
        .into_iter()
        .flatten()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|text| text.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The directory sandboxes' cgroups are created in, per controller.
fn parent_dirs() -> Vec<PathBuf> {
    if is_v2() {
        return own_path("")
            .map(|own| vec![Path::new(ROOT).join(own.trim_start_matches('/'))])
            .unwrap_or_default();
    }
    ["pids", "memory", "cpu"]
        .iter()
        .filter_map(|ctrl| {
            let own = own_path(ctrl)?;
            Some(Path::new(ROOT).join(ctrl).join(own.trim_start_matches('/')))
        })
        .collect()
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::write(path, value)
}

fn quota_us(cpus: f64) -> u64 {
    // At least 1 ms per period: the kernel's minimum quota.
    ((cpus * CPU_PERIOD_US as f64) as u64).max(1000)
}

impl SandboxCgroup {
    /// Creates the cgroups, or `None` when they cannot be created here.
    pub fn create(name: &str, limits: CgroupLimits) -> Option<Self> {
        let mut cg = SandboxCgroup {
            dirs: Vec::new(),
            procs: Vec::new(),
            cpu_enforced: false,
        };
        let made = if is_v2() {
            cg.make_v2(name, limits)
        } else {
            cg.make_v1(name, limits)
        };
        match made {
            Ok(()) => Some(cg),
            Err(e) => {
                tracing::debug!(
                    "no per-sandbox cgroup ({e}); bubblewrap limits fall back to rlimits"
                );
                cg.remove_now();
                cg.dirs.clear();
                None
            }
        }
    }

    fn leaf(&mut self, base: PathBuf, name: &str) -> std::io::Result<PathBuf> {
        let dir = base.join(format!("{PREFIX}{name}"));
        std::fs::create_dir(&dir)?;
        self.dirs.push(dir.clone());
        let procs = CString::new(dir.join("cgroup.procs").display().to_string())
            .map_err(std::io::Error::other)?;
        self.procs.push(procs);
        Ok(dir)
    }

    fn make_v1(&mut self, name: &str, limits: CgroupLimits) -> std::io::Result<()> {
        let base = |ctrl: &str| -> std::io::Result<PathBuf> {
            let own = own_path(ctrl)
                .ok_or_else(|| std::io::Error::other(format!("no {ctrl} controller")))?;
            Ok(Path::new(ROOT).join(ctrl).join(own.trim_start_matches('/')))
        };
        let pids_dir = self.leaf(base("pids")?, name)?;
        write(&pids_dir.join("pids.max"), &limits.pids.to_string())?;
        let mem_dir = self.leaf(base("memory")?, name)?;
        let bytes = limits.memory_bytes.to_string();
        write(&mem_dir.join("memory.limit_in_bytes"), &bytes)?;
        let memsw = mem_dir.join("memory.memsw.limit_in_bytes");
        if memsw.exists() {
            write(&memsw, &bytes)?;
        }
        if let Some(cpus) = limits.cpus {
            // The CPU quota is best effort: a host without the cpu
            // controller still gets the pids and memory limits.
            let applied = base("cpu").and_then(|b| {
                let dir = self.leaf(b, name)?;
                write(&dir.join("cpu.cfs_period_us"), &CPU_PERIOD_US.to_string())?;
                write(&dir.join("cpu.cfs_quota_us"), &quota_us(cpus).to_string())
            });
            match applied {
                Ok(()) => self.cpu_enforced = true,
                Err(e) => tracing::warn!("no CPU quota for bubblewrap sandboxes: {e}"),
            }
        }
        Ok(())
    }

    fn make_v2(&mut self, name: &str, limits: CgroupLimits) -> std::io::Result<()> {
        let own = own_path("").ok_or_else(|| std::io::Error::other("no v2 cgroup"))?;
        let dir = self.leaf(Path::new(ROOT).join(own.trim_start_matches('/')), name)?;
        write(&dir.join("pids.max"), &limits.pids.to_string())?;
        write(&dir.join("memory.max"), &limits.memory_bytes.to_string())?;
        let swap = dir.join("memory.swap.max");
        if swap.exists() {
            write(&swap, "0")?;
        }
        if let Some(cpus) = limits.cpus {
            let max = format!("{} {CPU_PERIOD_US}", quota_us(cpus));
            match write(&dir.join("cpu.max"), &max) {
                Ok(()) => self.cpu_enforced = true,
                Err(e) => tracing::warn!(
                    "no CPU quota for bubblewrap sandboxes (is the cpu controller delegated?): {e}"
                ),
            }
        }
        Ok(())
    }

    /// `cgroup.procs` files the child joins in `pre_exec` (writing "0"
    /// moves the writer), prepared before fork so the child allocates nothing.
    pub fn procs_files(&self) -> Vec<CString> {
        self.procs.clone()
    }

    fn remove_now(&self) -> bool {
        let mut all = true;
        for d in self.dirs.iter().rev() {
            if d.exists() && std::fs::remove_dir(d).is_err() {
                all = false;
            }
        }
        all
    }

    /// Removes the cgroups, waiting (bounded) for their last processes.
    pub async fn remove(mut self) {
        self.kill_all();
        let until = tokio::time::Instant::now() + REMOVE_WAIT;
        while !self.remove_now() {
            if tokio::time::Instant::now() >= until {
                tracing::warn!("sandbox cgroups {:?} still busy; retried later", self.dirs);
                keep_for_later(self);
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.dirs.clear();
    }

    /// Sends SIGKILL to every process in the cgroups: what is left of a
    /// sandbox whose bwrap was killed (its pid namespace is torn down
    /// asynchronously, and `--new-session` puts it outside our group).
    fn kill_all(&self) {
        for d in &self.dirs {
            let Ok(procs) = std::fs::read_to_string(d.join("cgroup.procs")) else {
                continue;
            };
            for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                // SAFETY: kill only sends a signal; these pids are in a
                // cgroup codemode created for this sandbox alone.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }

    /// For `Drop`, which cannot await: kills what is left, waits a bounded
    /// moment for the cgroup to empty (the runtime may be shutting down,
    /// so nothing later would remove it), else keeps it for
    /// [`remove_leftovers`].
    pub fn remove_or_defer(mut self) {
        if self.remove_blocking() {
            self.dirs.clear();
        } else {
            keep_for_later(self);
        }
    }

    fn remove_blocking(&self) -> bool {
        self.kill_all();
        for _ in 0..DROP_WAIT_STEPS {
            if self.remove_now() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }
}

impl Drop for SandboxCgroup {
    /// Reached when a removal was itself dropped half-way (a task cancelled
    /// at exit) or a leftover was never retried: one last bounded try.
    fn drop(&mut self) {
        if !self.dirs.is_empty() && !self.remove_blocking() {
            tracing::warn!("could not remove sandbox cgroups {:?}", self.dirs);
        }
    }
}

fn keep_for_later(cg: SandboxCgroup) {
    if let Ok(mut l) = LEFTOVERS.lock() {
        l.push(cg);
    }
}

/// Removes the cgroups a `Drop` left behind, waiting (bounded) for them
/// to empty. Called by the reaper and at shutdown.
pub async fn remove_leftovers() {
    let pending: Vec<SandboxCgroup> = match LEFTOVERS.lock() {
        Ok(mut l) => l.drain(..).collect(),
        Err(_) => return,
    };
    for cg in pending {
        cg.remove().await;
    }
}

/// Removes empty sandbox cgroups whose bridge process is gone (killed
/// before it could clean up). Returns how many were removed.
pub fn sweep_stale(bridge_alive: impl Fn(u32) -> bool) -> usize {
    let mut removed = 0;
    for parent in parent_dirs() {
        let Ok(entries) = std::fs::read_dir(&parent) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(owner) = name.to_str().and_then(owner_pid) else {
                continue;
            };
            if !bridge_alive(owner) && std::fs::remove_dir(e.path()).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// The bridge pid in a cgroup name `codemode-codemode-<pid hex><8 hex
/// nanos>-<n>` (see how the bridge names its instance).
fn owner_pid(dir_name: &str) -> Option<u32> {
    let rest = dir_name.strip_prefix(PREFIX)?.strip_prefix("codemode-")?;
    let (instance, n) = rest.rsplit_once('-')?;
    n.parse::<u64>().ok()?;
    let pid_hex = instance.get(..instance.len().checked_sub(8)?)?;
    u32::from_str_radix(pid_hex, 16).ok()
}

/// Called in the forked child: joins every cgroup in `procs`.
/// Only async-signal-safe calls (open, write, close).
pub fn join_in_child(procs: &[CString]) -> std::io::Result<()> {
    for p in procs {
        // SAFETY: `p` is a valid NUL-terminated path owned by the closure;
        // open/write/close are async-signal-safe and touch no Rust state.
        let rc = unsafe {
            let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                -1
            } else {
                let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
                if n == 1 {
                    0
                } else {
                    -1
                }
            }
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_is_read_from_the_sandbox_name() {
        let instance = format!("{:x}{:08x}", 4242u32, 0xdead_beefu32);
        assert_eq!(
            owner_pid(&format!("codemode-codemode-{instance}-3")),
            Some(4242)
        );
        assert_eq!(owner_pid("codemode-something-else"), None);
        assert_eq!(owner_pid("user.slice"), None);
        assert_eq!(owner_pid("codemode-codemode-abc-1"), None);
    }

    #[test]
    fn quota_has_the_kernels_minimum() {
        assert_eq!(quota_us(1.0), 100_000);
        assert_eq!(quota_us(0.5), 50_000);
        assert_eq!(quota_us(0.0), 1000);
    }
}
