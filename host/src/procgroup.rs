//! Signalling the process groups codemode creates for its children
//! (sandboxes and proxied servers each get their own group, so a signal
//! reaches every process they started).

use std::time::Duration;

/// Sends `signal` to the group `pgid` (ignored for no group, 0 or 1).
pub fn signal_group(pgid: Option<i32>, signal: i32) {
    if let Some(pgid) = pgid.filter(|p| *p > 1) {
        // SAFETY: killpg only sends a signal; the group id belongs to a
        // child codemode spawned with process_group(0).
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}

/// Polls until no process is left in the group, or `bound` passes.
pub async fn wait_group_gone(pgid: Option<i32>, bound: Duration) -> bool {
    let Some(pgid) = pgid.filter(|p| *p > 1) else {
        return true;
    };
    let until = tokio::time::Instant::now() + bound;
    loop {
        // SAFETY: signal 0 only checks whether the group has members.
        let alive = unsafe { libc::killpg(pgid, 0) } == 0;
        if !alive {
            return true;
        }
        if tokio::time::Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
