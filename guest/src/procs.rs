//! Counting the processes a cell left running, so the model is told that
//! they keep using the sandbox's CPU and memory. The sandbox has its own
//! pid namespace, so every process listed in `/proc` belongs to it.

/// Live processes other than the guest itself and pid 1 when pid 1 is not
/// the guest (bubblewrap's init); zombies do not count.
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
