//! Process accounting without a cgroup. RLIMIT_NPROC is checked against a
//! count the kernel keeps per user *and user namespace* (Linux 5.14 and
//! later): a bubblewrap sandbox has a user namespace of its own, so the cap
//! its guest sets inside counts that sandbox's tasks alone. Each level
//! above is checked against the limit its creator had when the namespace
//! was made, so the cap given to bwrap outside bounds what all sandboxes
//! together may add to the host user's count. This module says what that
//! outer cap is: the user's own allowance less a reserve sandboxes may
//! never take, so a runaway sandbox cannot use up the user's processes.

/// The host user's process allowance and the share sandboxes may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowance {
    /// The user's RLIMIT_NPROC (soft), `None` when unlimited.
    pub user_limit: Option<u64>,
    /// The RLIMIT_NPROC bwrap is started with: the user's processes,
    /// sandboxes' included, may not pass it through a sandbox.
    pub sandbox_cap: Option<u64>,
}

/// Kept out of sandboxes' reach: a quarter of the allowance, at least 256
/// processes (or half of an allowance smaller than 512).
pub fn reserve(limit: u64) -> u64 {
    (limit / 4).max(256.min(limit / 2))
}

impl Allowance {
    pub fn for_limit(user_limit: Option<u64>) -> Self {
        Allowance {
            user_limit,
            sandbox_cap: user_limit.map(|l| l - reserve(l)),
        }
    }

    /// This process's allowance.
    pub fn current() -> Self {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we own.
        let ok = unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut lim) } == 0;
        let limit = (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur);
        Self::for_limit(limit)
    }
}

/// Whether RLIMIT_NPROC is counted per user namespace on this kernel
/// (5.14 and later); before that it counted every process of the uid.
pub fn per_namespace_nproc() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .and_then(|r| parse_release(&r))
        .is_some_and(|v| v >= (5, 14))
}

fn parse_release(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandboxes_never_get_the_users_last_processes() {
        let a = Allowance::for_limit(Some(96_365));
        assert_eq!(a.sandbox_cap, Some(96_365 - 24_091));
        assert_eq!(Allowance::for_limit(Some(4096)).sandbox_cap, Some(3072));
        assert_eq!(Allowance::for_limit(Some(600)).sandbox_cap, Some(344));
        assert_eq!(Allowance::for_limit(Some(300)).sandbox_cap, Some(150));
        assert_eq!(Allowance::for_limit(None).sandbox_cap, None);
    }

    #[test]
    fn kernel_releases_are_compared_by_major_and_minor() {
        assert_eq!(parse_release("6.18.44-fc-v595\n"), Some((6, 18)));
        assert_eq!(parse_release("5.4.0-150-generic"), Some((5, 4)));
        assert!(parse_release("5.14.0-284.el9").is_some_and(|v| v >= (5, 14)));
        assert!(parse_release("5.4.0").is_some_and(|v| v < (5, 14)));
        assert_eq!(parse_release("garbage"), None);
    }
}
