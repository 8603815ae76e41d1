//! Which of a sandbox's limits this host really enforces, and how: what
//! `codemode doctor` reports. The answer depends on the backend, on root,
//! on the cgroup version and on what this user may create, so it is probed
//! here (a bubblewrap cgroup is created and removed again) rather than
//! assumed.

use super::allowance::{per_namespace_nproc, Allowance};
use super::cgroup::{self, CgroupLimits, SandboxCgroup};
use super::identity::is_root;
use super::{Backend, Limits};

/// How well a limit holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Per sandbox, as configured.
    Enforced,
    /// Bounded, but not per sandbox as configured (said how).
    Partial,
    /// Sandboxes share it, or nothing bounds it.
    Missing,
}

/// One limit's line.
#[derive(Debug, Clone)]
pub struct LimitReport {
    pub what: &'static str,
    pub level: Level,
    pub detail: String,
}

fn line(what: &'static str, level: Level, detail: String) -> LimitReport {
    LimitReport {
        what,
        level,
        detail,
    }
}

fn mib(bytes: u64) -> u64 {
    bytes >> 20
}

fn cpus_text(cpus: f64) -> String {
    if cpus == 1.0 {
        "1 CPU".into()
    } else {
        format!("{cpus} CPUs")
    }
}

/// The limits of `limits` on `backend`, one line each, and what happens to
/// processes a cell leaves running.
pub fn report(backend: &Backend, limits: &Limits) -> Vec<LimitReport> {
    let mut lines = match backend {
        Backend::Bubblewrap(_) => bwrap(limits),
        Backend::Oci(oci) => engine(oci.engine.name(), limits),
    };
    lines.push(line(
        "leftover processes",
        Level::Enforced,
        "what a cell leaves running is ended when the cell ends (unless it called \
         runtime.keep_processes()); everything in a sandbox ends with its session and with codemode"
            .into(),
    ));
    lines
}

fn bwrap(limits: &Limits) -> Vec<LimitReport> {
    let probe = SandboxCgroup::create(
        &format!("probe-{}", std::process::id()),
        CgroupLimits {
            memory_bytes: limits.memory_bytes,
            pids: limits.pids,
            cpus: limits.cpus,
        },
    );
    let cpu_in_cgroup = probe.as_ref().is_some_and(|c| c.cpu_enforced);
    let has_cgroup = probe.is_some();
    if let Some(cg) = probe {
        cg.remove_or_defer();
    }
    let version = cgroup::version_name();
    let mut lines = Vec::new();
    let nproc_note = format!(
        "{} per sandbox, counted in the sandbox's own user namespace (RLIMIT_NPROC)",
        limits.pids
    );
    lines.push(if has_cgroup {
        line(
            "processes",
            Level::Enforced,
            format!("{} per sandbox (cgroup {version} pids)", limits.pids),
        )
    } else if per_namespace_nproc() {
        line("processes", Level::Enforced, nproc_note)
    } else {
        line(
            "processes",
            Level::Missing,
            format!(
                "{} for all of this user's processes together: this kernel (before 5.14) counts \
                 RLIMIT_NPROC per user, not per sandbox, so one session's processes can stop \
                 others from starting. Fix: Linux 5.14 or later, or run codemode as root",
                limits.pids
            ),
        )
    });
    lines.push(users_share());
    lines.push(if has_cgroup {
        line(
            "memory",
            Level::Enforced,
            format!(
                "{} MiB per sandbox (cgroup {version} memory)",
                mib(limits.memory_bytes)
            ),
        )
    } else {
        line(
            "memory",
            Level::Partial,
            format!(
                "{} MiB of address space per process (RLIMIT_AS), not per sandbox: this user \
                 cannot create cgroups here. Fix: run codemode as root (see the README's \
                 security section for cgroup v2 delegation)",
                mib(limits.memory_bytes)
            ),
        )
    });
    lines.push(match limits.cpus {
        None => line(
            "cpu",
            Level::Partial,
            format!(
                "no quota (--cpus none); {} CPU-seconds per process (RLIMIT_CPU)",
                limits.cpu_seconds
            ),
        ),
        Some(cpus) if cpu_in_cgroup => line(
            "cpu",
            Level::Enforced,
            format!(
                "{} per sandbox (cgroup {version} cpu quota)",
                cpus_text(cpus)
            ),
        ),
        Some(cpus) => line(
            "cpu",
            Level::Partial,
            format!(
                "the quota of {} is not enforced (no cpu cgroup this user can write); \
                 each process may use {} CPU-seconds (RLIMIT_CPU)",
                cpus_text(cpus),
                limits.cpu_seconds
            ),
        ),
    });
    lines
}

/// What sandboxes together may take of the user's own process allowance.
fn users_share() -> LimitReport {
    let a = Allowance::current();
    match (a.user_limit, a.sandbox_cap) {
        (Some(limit), Some(cap)) => line(
            "your processes",
            Level::Enforced,
            format!(
                "sandboxes together stop at {cap} of this user's {limit} processes \
                 (RLIMIT_NPROC); the other {} stay yours",
                limit - cap
            ),
        ),
        _ => line(
            "your processes",
            Level::Enforced,
            "this user has no process limit (RLIMIT_NPROC unlimited); each sandbox is held to its own"
                .into(),
        ),
    }
}

fn engine(name: &'static str, limits: &Limits) -> Vec<LimitReport> {
    let per = |what: &str| format!("{what} per sandbox ({name}, cgroups)");
    if is_root() {
        let mut lines = vec![
            line("processes", Level::Enforced, per(&limits.pids.to_string())),
            line(
                "memory",
                Level::Enforced,
                per(&format!("{} MiB", mib(limits.memory_bytes))),
            ),
        ];
        if let Some(cpus) = limits.cpus {
            lines.push(line("cpu", Level::Enforced, per(&cpus_text(cpus))));
        }
        return lines;
    }
    if !cgroup::is_v2() {
        let why = format!(
            "not enforced: rootless {name} on a cgroup v1 host ignores --pids-limit, --memory and \
             --cpus, and all its containers share one user namespace. Fix: use --runtime \
             bubblewrap (per-sandbox process limits), boot with cgroup v2, or run codemode as root"
        );
        return vec![
            line("processes", Level::Missing, why.clone()),
            line("memory", Level::Missing, why.clone()),
            line("cpu", Level::Missing, why),
        ];
    }
    let delegated = cgroup::delegated_controllers();
    let has = |c: &str| delegated.iter().any(|d| d == c);
    let needs = |c: &str| {
        format!(
            "not enforced: the {c} controller is not delegated to this user \
             (systemd: Delegate=yes on user@.service, see the README)"
        )
    };
    let mut lines = Vec::new();
    for (what, ctrl, value) in [
        ("processes", "pids", limits.pids.to_string()),
        (
            "memory",
            "memory",
            format!("{} MiB", mib(limits.memory_bytes)),
        ),
    ] {
        lines.push(if has(ctrl) {
            line(what, Level::Enforced, per(&value))
        } else {
            line(what, Level::Missing, needs(ctrl))
        });
    }
    if let Some(cpus) = limits.cpus {
        lines.push(if has("cpu") {
            line("cpu", Level::Enforced, per(&cpus_text(cpus)))
        } else {
            line("cpu", Level::Partial, needs("cpu"))
        });
    }
    lines
}
