//! The processes cells start. The sandbox has its own pid namespace, so
//! every process listed in `/proc` belongs to it. At the end of each cell
//! the processes it left running are ended (SIGKILL), unless the session
//! asked to keep them (`runtime.keep_processes()`): a forgotten server or
//! fork loop must not keep using the sandbox's allowance between calls.
//! Orphans are reaped by pid 1 (bubblewrap's or the engine's init); a
//! cell's own children stay with whoever started them (`subprocess.Popen`,
//! asyncio, multiprocessing), whose `wait` then reports the SIGKILL.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Set by `runtime.keep_processes()`: leave processes running between cells.
static KEEP: AtomicBool = AtomicBool::new(false);
/// Whether this guest may end processes at all (`--end-cell-processes`,
/// and a pid namespace of its own).
static ENDS: AtomicBool = AtomicBool::new(false);
/// The inode of the initial pid namespace (the kernel's PROC_PID_INIT_INO):
/// a guest run outside any sandbox must never `kill(-1)`.
const INIT_PID_NS_INODE: u64 = 0xEFFF_FFFC;
/// How long the end of a cell waits for ended processes to be gone.
const END_WAIT: Duration = Duration::from_millis(500);

/// Turns ending on, when the guest is in a pid namespace of its own;
/// false (and a note on stderr by the caller) otherwise.
pub fn enable_ending() -> bool {
    use std::os::unix::fs::MetadataExt;
    let own_ns = std::fs::metadata("/proc/self/ns/pid").map(|m| m.ino());
    let isolated = matches!(own_ns, Ok(ino) if ino != INIT_PID_NS_INODE);
    ENDS.store(isolated, Ordering::SeqCst);
    isolated
}

/// Sets whether processes survive the end of their cell; returns the
/// previous setting.
pub fn set_keep(keep: bool) -> bool {
    KEEP.swap(keep, Ordering::SeqCst)
}

/// Caps the tasks of this sandbox's user namespace (see `args`), soft and
/// hard, before the guest starts any thread.
pub fn limit(max: u64) -> std::io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: max,
        rlim_max: max,
    };
    // SAFETY: setrlimit reads the struct we pass by pointer for the call only.
    if unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &lim) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// What the end of a cell did with the processes it left.
#[derive(Debug, Default, Clone, Copy)]
pub struct Leftovers {
    /// Still running (kept by the session's choice, or unkillable).
    pub running: u32,
    /// Ended now.
    pub ended: u32,
}

/// Ends every process but the guest and pid 1, unless the session keeps
/// them. `kill(-1)` signals the whole namespace in one pass, so a fork
/// loop cannot outrun it: a child forked by a process with a pending
/// SIGKILL is never created.
pub fn end_of_cell() -> Leftovers {
    if crate::channel::in_fork_child() {
        // A copy of the guest forked by a cell: kill(-1) would end the guest.
        return Leftovers::default();
    }
    let before = running_besides_guest();
    if before == 0 || KEEP.load(Ordering::SeqCst) || !ENDS.load(Ordering::SeqCst) {
        return Leftovers {
            running: before,
            ended: 0,
        };
    }
    let deadline = Instant::now() + END_WAIT;
    loop {
        // SAFETY: kill(-1) signals every process of this pid namespace the
        // guest may signal, except pid 1 and the guest itself.
        unsafe { libc::kill(-1, libc::SIGKILL) };
        let left = running_besides_guest();
        if left == 0 || Instant::now() >= deadline {
            return Leftovers {
                running: left,
                ended: before.saturating_sub(left),
            };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Live processes other than the guest itself and pid 1 when pid 1 is not
/// the guest (the init of bubblewrap or the engine); zombies do not count.
pub fn running_besides_guest() -> u32 {
    let own = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut n = 0u32;
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == own || pid == 1 {
            continue;
        }
        if is_live(pid) {
            n = n.saturating_add(1);
        }
    }
    n
}

/// Not a zombie (and still there): the state letter after the command
/// name in `/proc/<pid>/stat`, which may itself contain ')'.
fn is_live(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    stat.rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next())
        .is_some_and(|state| state != "Z" && state != "X")
}
