//! bubblewrap: no image and no daemon. The guest, one statically linked
//! file with the Python standard library inside, is the only thing of the
//! host in an otherwise empty root (besides the user's mounts and the
//! saved-tools store): no /usr, /lib or /etc, so no host file a cell could
//! read and no host program it could run. Every namespace is unshared, and limits come from a per-sandbox cgroup
//! when one can be created, else from rlimits: the process cap is set by
//! the guest inside the sandbox's own user namespace, where the kernel
//! counts that sandbox's tasks alone ([`super::allowance`]). When
//! codemode runs as root, bwrap itself is started as an unprivileged host
//! user ([`super::identity`]), so the sandbox never maps to host root.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use tokio::process::Command;

use super::allowance::Allowance;
use super::cgroup::{join_in_child, CgroupLimits, SandboxCgroup};
use super::identity::{bwrap_host_ids, reachable_by, Ids};
use super::{LaunchSpec, Mount, RuntimeError, SandboxProcess, SANDBOX_WORKDIR};

/// Where the guest binary appears inside the sandbox.
const GUEST_IN_SANDBOX: &str = "/opt/codemode/codemode-guest";

#[derive(Debug, Clone)]
pub struct BwrapBackend {
    pub binary: PathBuf,
    pub guest: PathBuf,
}

impl BwrapBackend {
    pub fn new(binary: PathBuf, guest: PathBuf) -> Self {
        Self { binary, guest }
    }

    /// bubblewrap's arguments; `seccomp_fd` is a descriptor the child
    /// inherits holding the filter program; `guest_fd`, when set, is the
    /// guest binary opened for reading, copied in instead of bound (the
    /// user bwrap runs as cannot reach the guest's path).
    pub fn args(
        &self,
        spec: &LaunchSpec,
        seccomp_fd: Option<i32>,
        guest_fd: Option<i32>,
    ) -> Vec<String> {
        let l = &spec.limits;
        let (uid, gid) = l.user.split_once(':').unwrap_or((&l.user, &l.user));
        let mut a: Vec<String> = [
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--clearenv",
            "--hostname",
            "codemode",
        ]
        .map(String::from)
        .to_vec();
        a.extend(["--uid".into(), uid.into(), "--gid".into(), gid.into()]);
        match guest_fd {
            Some(fd) => a.extend([
                "--perms".into(),
                "0555".into(),
                "--file".into(),
                fd.to_string(),
                GUEST_IN_SANDBOX.into(),
            ]),
            None => a.extend([
                "--ro-bind".into(),
                self.guest.display().to_string(),
                GUEST_IN_SANDBOX.into(),
            ]),
        }
        a.extend([
            "--proc".into(),
            "/proc".into(),
            // bwrap covers /proc/sys read-only only when it looks writable
            // to it; cover it always (kernel.core_pattern runs a program as
            // host root).
            "--ro-bind".into(),
            "/proc/sys".into(),
            "/proc/sys".into(),
            "--dev".into(),
            "/dev".into(),
        ]);
        for dir in ["/tmp", SANDBOX_WORKDIR] {
            a.extend([
                "--size".into(),
                l.tmpfs_bytes.to_string(),
                "--perms".into(),
                "1777".into(),
            ]);
            a.extend(["--tmpfs".into(), dir.into()]);
        }
        for m in &spec.mounts {
            let flag = if m.writable { "--bind" } else { "--ro-bind" };
            a.extend([
                flag.into(),
                m.host.display().to_string(),
                m.sandbox.display().to_string(),
            ]);
        }
        a.extend(["--remount-ro".into(), "/".into()]);
        a.extend(["--setenv".into(), "HOME".into(), "/tmp".into()]);
        a.extend(["--chdir".into(), SANDBOX_WORKDIR.into()]);
        if let Some(fd) = seccomp_fd {
            a.extend(["--seccomp".into(), fd.to_string()]);
        }
        a.push(GUEST_IN_SANDBOX.into());
        // The guest caps its user namespace's tasks (a per-sandbox count,
        // unlike an RLIMIT_NPROC set out here) and ends what cells leave.
        a.extend([
            "--max-processes".into(),
            l.pids.to_string(),
            "--end-cell-processes".into(),
        ]);
        a
    }

    /// Refuses mounts the user bwrap runs as could not bind (it resolves
    /// their paths itself), with a message naming the path, instead of
    /// failing every sandbox start later.
    pub fn check_mounts(&self, user: &str, mounts: &[Mount]) -> Result<(), RuntimeError> {
        let Some(host) = bwrap_host_ids(Ids::parse(user)?) else {
            return Ok(());
        };
        for m in mounts {
            let want = if m.writable { 0o7 } else { 0o5 };
            let want = if m.host.is_dir() { want } else { want & 0o6 };
            if !reachable_by(&m.host, host, want) {
                return Err(RuntimeError::Unreachable {
                    path: m.host.clone(),
                    uid: host.uid,
                });
            }
        }
        Ok(())
    }

    pub fn launch(&self, spec: &LaunchSpec) -> Result<SandboxProcess, RuntimeError> {
        let host = bwrap_host_ids(Ids::parse(&spec.limits.user)?);
        let guest_copy = match host {
            Some(ids) if !reachable_by(&self.guest, ids, 0o5) => Some(open_guest(&self.guest)?),
            _ => None,
        };
        let guest_fd = guest_copy.as_ref().map(AsRawFd::as_raw_fd);
        let mut cmd = Command::new(&self.binary);
        let filter = SeccompPipe::new()?;
        cmd.args(self.args(spec, filter.as_ref().map(|f| f.read_fd), guest_fd));
        let inherit_fds = [filter.as_ref().map(|f| f.read_fd), guest_fd];
        cmd.env_clear();
        let limits = spec.limits.clone();
        let cgroup = SandboxCgroup::create(
            &spec.name,
            CgroupLimits {
                memory_bytes: limits.memory_bytes,
                pids: limits.pids,
                cpus: limits.cpus,
            },
        );
        let procs = cgroup
            .as_ref()
            .map(SandboxCgroup::procs_files)
            .unwrap_or_default();
        let has_cgroup = cgroup.is_some();
        let user_cap = Allowance::current().sandbox_cap;
        // SAFETY: the closure runs in the forked child before exec and only
        // calls setrlimit and open/write/close, which are async-signal-safe;
        // everything it uses was allocated before the fork.
        unsafe {
            cmd.pre_exec(move || {
                join_in_child(&procs)?;
                for fd in inherit_fds.into_iter().flatten() {
                    // Made close-on-exec so no other child inherits them;
                    // only bwrap keeps them across exec.
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if !has_cgroup {
                    // Without a cgroup, address space stands in for memory.
                    set_limit(libc::RLIMIT_AS, limits.memory_bytes)?;
                }
                if let Some(cap) = user_cap {
                    // All sandboxes together never take the user's reserve.
                    set_limit(libc::RLIMIT_NPROC, cap)?;
                }
                set_limit(libc::RLIMIT_CPU, limits.cpu_seconds)?;
                set_limit(libc::RLIMIT_FSIZE, limits.tmpfs_bytes)?;
                set_limit(libc::RLIMIT_NOFILE, 1024)?;
                set_limit(libc::RLIMIT_CORE, 0)?;
                if let Some(ids) = host {
                    drop_to(ids)?;
                }
                Ok(())
            });
        }
        let mut process = SandboxProcess::spawn(cmd, spec.name.clone(), None, None)?;
        drop(filter);
        drop(guest_copy);
        process.cgroup = cgroup;
        Ok(process)
    }
}

/// Opens the guest for bwrap's `--file` (close-on-exec until `pre_exec`).
fn open_guest(path: &Path) -> Result<OwnedFd, RuntimeError> {
    std::fs::File::open(path)
        .map(OwnedFd::from)
        .map_err(|source| RuntimeError::Spawn {
            what: format!("the guest binary {}", path.display()),
            source,
        })
}

/// Becomes `ids` for good (supplementary groups cleared first, then the
/// gid, then the uid, so no step is left with root's rights). Runs in the
/// forked child; setgroups/setgid/setuid are async-signal-safe.
fn drop_to(ids: Ids) -> std::io::Result<()> {
    // SAFETY: plain syscalls on this (child) process's credentials; a null
    // list with length 0 is setgroups' documented way to clear the groups.
    let ok = unsafe {
        libc::setgroups(0, std::ptr::null()) == 0
            && libc::setgid(ids.gid) == 0
            && libc::setuid(ids.uid) == 0
    };
    if !ok {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: getuid/geteuid have no preconditions.
    if unsafe { libc::getuid() == 0 || libc::geteuid() == 0 } {
        return Err(std::io::Error::other("still root after setuid"));
    }
    Ok(())
}

fn set_limit(resource: libc::__rlimit_resource_t, value: u64) -> std::io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: setrlimit reads the struct we pass by pointer for the call only.
    let rc = unsafe { libc::setrlimit(resource, &lim) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The seccomp program in a pipe whose read end bubblewrap inherits
/// (`--seccomp FD`). Both ends are closed in this process on drop.
struct SeccompPipe {
    read_fd: i32,
}

impl SeccompPipe {
    fn new() -> Result<Option<Self>, RuntimeError> {
        let Some(program) = super::seccomp::program() else {
            tracing::warn!(
                "no seccomp filter for this architecture; bubblewrap sandboxes run without one"
            );
            return Ok(None);
        };
        let spawn_err = |source: std::io::Error| RuntimeError::Spawn {
            what: "the seccomp pipe".into(),
            source,
        };
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 writes two descriptors into the array we own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(spawn_err(std::io::Error::last_os_error()));
        }
        let pipe = SeccompPipe { read_fd: fds[0] };
        // The program (~500 bytes) fits the pipe buffer, so this write
        // completes before anyone reads.
        // SAFETY: writes from a live buffer of the stated length to our fd.
        let written = unsafe { libc::write(fds[1], program.as_ptr().cast(), program.len()) };
        // SAFETY: closes the write end we own; bwrap reads until EOF.
        unsafe { libc::close(fds[1]) };
        if usize::try_from(written).ok() != Some(program.len()) {
            return Err(spawn_err(std::io::Error::other(
                "short write of the seccomp program",
            )));
        }
        Ok(Some(pipe))
    }
}

impl Drop for SeccompPipe {
    fn drop(&mut self) {
        // SAFETY: closes the read end this struct owns, once.
        unsafe { libc::close(self.read_fd) };
    }
}
