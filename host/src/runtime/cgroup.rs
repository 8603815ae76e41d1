//! Per-sandbox cgroups for the bubblewrap backend, when this process may
//! create them (root, or a delegated subtree): a pids limit and a memory
//! limit that rlimits cannot give (RLIMIT_NPROC does not bind when the
//! sandbox user maps to root outside). Nested under codemode's own cgroup.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::Duration;

const ROOT: &str = "/sys/fs/cgroup";

/// Cgroup directories created for one sandbox.
#[derive(Debug)]
pub struct SandboxCgroup {
    dirs: Vec<PathBuf>,
    procs: Vec<CString>,
}

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

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::write(path, value)
}

impl SandboxCgroup {
    /// Creates the cgroups, or `None` when they cannot be created here.
    pub fn create(name: &str, memory_bytes: u64, pids: u32) -> Option<Self> {
        let mut cg = SandboxCgroup {
            dirs: Vec::new(),
            procs: Vec::new(),
        };
        let v2 = Path::new(ROOT).join("cgroup.controllers").exists();
        let made = if v2 {
            cg.make_v2(name, memory_bytes, pids)
        } else {
            cg.make_v1(name, memory_bytes, pids)
        };
        match made {
            Ok(()) => Some(cg),
            Err(e) => {
                tracing::debug!(
                    "no per-sandbox cgroup ({e}); bubblewrap limits fall back to rlimits"
                );
                cg.remove_now();
                None
            }
        }
    }

    fn leaf(&mut self, base: PathBuf, name: &str) -> std::io::Result<PathBuf> {
        let dir = base.join(format!("codemode-{name}"));
        std::fs::create_dir(&dir)?;
        self.dirs.push(dir.clone());
        let procs = CString::new(dir.join("cgroup.procs").display().to_string())
            .map_err(std::io::Error::other)?;
        self.procs.push(procs);
        Ok(dir)
    }

    fn make_v1(&mut self, name: &str, memory_bytes: u64, pids: u32) -> std::io::Result<()> {
        let base = |ctrl: &str| -> std::io::Result<PathBuf> {
            let own = own_path(ctrl)
                .ok_or_else(|| std::io::Error::other(format!("no {ctrl} controller")))?;
            Ok(Path::new(ROOT).join(ctrl).join(own.trim_start_matches('/')))
        };
        let pids_dir = self.leaf(base("pids")?, name)?;
        write(&pids_dir.join("pids.max"), &pids.to_string())?;
        let mem_dir = self.leaf(base("memory")?, name)?;
        write(
            &mem_dir.join("memory.limit_in_bytes"),
            &memory_bytes.to_string(),
        )?;
        let memsw = mem_dir.join("memory.memsw.limit_in_bytes");
        if memsw.exists() {
            write(&memsw, &memory_bytes.to_string())?;
        }
        Ok(())
    }

    fn make_v2(&mut self, name: &str, memory_bytes: u64, pids: u32) -> std::io::Result<()> {
        let own = own_path("").ok_or_else(|| std::io::Error::other("no v2 cgroup"))?;
        let dir = self.leaf(Path::new(ROOT).join(own.trim_start_matches('/')), name)?;
        write(&dir.join("pids.max"), &pids.to_string())?;
        write(&dir.join("memory.max"), &memory_bytes.to_string())?;
        let swap = dir.join("memory.swap.max");
        if swap.exists() {
            write(&swap, "0")?;
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

    /// Removes the cgroups once their processes are gone (retrying briefly
    /// on a thread, since the last process may still be exiting).
    pub fn remove(self) {
        if self.remove_now() {
            return;
        }
        std::thread::spawn(move || {
            for _ in 0..50 {
                std::thread::sleep(Duration::from_millis(100));
                if self.remove_now() {
                    return;
                }
            }
            tracing::warn!("could not remove sandbox cgroups {:?}", self.dirs);
        });
    }
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
