//! The syscall policy every sandbox gets, on both backends, from one deny
//! list: a classic-BPF program for bubblewrap (`bwrap --seccomp FD`,
//! [`bpf`]) and an OCI profile for podman/docker (`--security-opt
//! seccomp=FILE`, [`oci`]) that adds the same denials on top of the
//! engine's default profile. The engines' defaults allow `unshare`,
//! `mount` and `keyctl`, so without this a cell could create a user
//! namespace with full capabilities: the usual first step of kernel
//! privilege escalations. x86_64 only for the BPF program (other
//! architectures run bubblewrap without one and say so in the log).

mod bpf;
mod oci;

pub use bpf::program;
pub use oci::{engine_default_profile, profile as oci_profile};

/// Syscalls answered with EPERM: namespaces and mounts, kernel modules and
/// kexec, BPF and perf, keyrings, tracing other processes, clock and swap
/// administration, io_uring. Names as in the OCI profile, numbers for x86_64.
#[cfg(target_arch = "x86_64")]
const DENIED: &[(&str, i64)] = &[
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("kcmp", libc::SYS_kcmp),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("reboot", libc::SYS_reboot),
    ("acct", libc::SYS_acct),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("iopl", libc::SYS_iopl),
    ("ioperm", libc::SYS_ioperm),
    ("quotactl", libc::SYS_quotactl),
    ("settimeofday", libc::SYS_settimeofday),
    ("clock_settime", libc::SYS_clock_settime),
    ("clock_adjtime", libc::SYS_clock_adjtime),
    ("adjtimex", libc::SYS_adjtimex),
    ("syslog", libc::SYS_syslog),
    ("lookup_dcookie", libc::SYS_lookup_dcookie),
    ("vhangup", libc::SYS_vhangup),
    ("uselib", libc::SYS_uselib),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
];
#[cfg(not(target_arch = "x86_64"))]
const DENIED: &[(&str, i64)] = &[];

/// clone(2) flags that create namespaces: refused with EPERM.
const CLONE_NAMESPACE_FLAGS: u32 = 0x0002_0000 // CLONE_NEWNS
    | 0x0200_0000 // CLONE_NEWCGROUP
    | 0x0400_0000 // CLONE_NEWUTS
    | 0x0800_0000 // CLONE_NEWIPC
    | 0x1000_0000 // CLONE_NEWUSER
    | 0x2000_0000 // CLONE_NEWPID
    | 0x4000_0000; // CLONE_NEWNET

/// The only socket families a cell may create: Unix sockets (asyncio,
/// subprocess pipes) and IP sockets (there is no network, but libraries
/// expect to create them and fail on connect). Netlink and vsock, the
/// families kernel exploits and host services listen on, get
/// EAFNOSUPPORT, as does everything else.
const ALLOWED_SOCKET_FAMILIES: &[u32] = &[
    libc::AF_UNIX as u32,
    libc::AF_INET as u32,
    libc::AF_INET6 as u32,
];

/// Families named explicitly in the OCI profile so they fail with
/// EAFNOSUPPORT instead of the engine's default errno.
const REFUSED_SOCKET_FAMILIES: &[u32] = &[libc::AF_NETLINK as u32, libc::AF_VSOCK as u32];
