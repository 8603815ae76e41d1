//! A seccomp filter for the bubblewrap backend (containers get the engine's
//! default profile). Without it a cell could create nested user namespaces,
//! mount filesystems or load BPF: kernel attack surface a Python cell never
//! needs. Modeled on the container engines' default deny list; x86_64 only
//! (other architectures run without it and say so in the log).

/// One classic-BPF instruction (`struct sock_filter`).
#[derive(Debug, Clone, Copy)]
struct Insn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const JSET_K: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;

/// `struct seccomp_data` offsets.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARG0_LOW: u32 = 16;

const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
/// x32 syscalls on x86_64 carry this bit; none are allowed.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// clone(2) flags that create namespaces.
const CLONE_NAMESPACE_FLAGS: u32 = 0x0002_0000 // CLONE_NEWNS
    | 0x0200_0000 // CLONE_NEWCGROUP
    | 0x0400_0000 // CLONE_NEWUTS
    | 0x0800_0000 // CLONE_NEWIPC
    | 0x1000_0000 // CLONE_NEWUSER
    | 0x2000_0000 // CLONE_NEWPID
    | 0x4000_0000; // CLONE_NEWNET

/// Syscalls answered with EPERM: namespaces and mounts, kernel modules and
/// kexec, BPF and perf, keyrings, tracing other processes, clock and swap
/// administration, io_uring.
#[cfg(target_arch = "x86_64")]
const DENIED: &[i64] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_iopl,
    libc::SYS_ioperm,
    libc::SYS_quotactl,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_syslog,
    libc::SYS_lookup_dcookie,
    libc::SYS_vhangup,
    libc::SYS_uselib,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
];

fn ld(k: u32) -> Insn {
    Insn {
        code: LD_W_ABS,
        jt: 0,
        jf: 0,
        k,
    }
}

fn ret(k: u32) -> Insn {
    Insn {
        code: RET_K,
        jt: 0,
        jf: 0,
        k,
    }
}

/// The filter as the bytes `bwrap --seccomp FD` reads (an array of
/// `struct sock_filter` in native byte order), or `None` on architectures
/// it is not written for.
pub fn program() -> Option<Vec<u8>> {
    #[cfg(target_arch = "x86_64")]
    {
        Some(encode(&build(DENIED, libc::SYS_clone, libc::SYS_clone3)))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Layout: arch check, load nr, x32 check, one JEQ per denied syscall,
/// clone3 -> ENOSYS (glibc falls back to clone), clone -> check its flags,
/// allow; then the shared EPERM and ENOSYS returns. Jumps are relative and
/// one byte wide, which bounds the deny list to about 250 entries.
fn build(denied: &[i64], clone: i64, clone3: i64) -> Vec<Insn> {
    let first_check = 4;
    let clone3_at = first_check + 1 + denied.len();
    let clone_at = clone3_at + 1;
    let jset_at = clone_at + 2;
    let allow_at = jset_at + 1;
    let eperm_at = allow_at + 1;
    let enosys_at = eperm_at + 1;
    let jump = |from: usize, to: usize| -> u8 { u8::try_from(to - from - 1).unwrap_or(u8::MAX) };

    let mut p = Vec::with_capacity(enosys_at + 1);
    p.push(ld(OFF_ARCH));
    p.push(Insn {
        code: JEQ_K,
        jt: 1,
        jf: 0,
        k: AUDIT_ARCH_X86_64,
    });
    p.push(ret(RET_KILL_PROCESS)); // another ABI entirely
    p.push(ld(OFF_NR));
    p.push(Insn {
        code: JGE_K,
        jt: jump(first_check, eperm_at),
        jf: 0,
        k: X32_SYSCALL_BIT,
    });
    for (j, nr) in denied.iter().enumerate() {
        let at = first_check + 1 + j;
        p.push(Insn {
            code: JEQ_K,
            jt: jump(at, eperm_at),
            jf: 0,
            k: *nr as u32,
        });
    }
    p.push(Insn {
        code: JEQ_K,
        jt: jump(clone3_at, enosys_at),
        jf: 0,
        k: clone3 as u32,
    });
    p.push(Insn {
        code: JEQ_K,
        jt: 0,
        jf: jump(clone_at, allow_at),
        k: clone as u32,
    });
    p.push(ld(OFF_ARG0_LOW));
    p.push(Insn {
        code: JSET_K,
        jt: jump(jset_at, eperm_at),
        jf: 0,
        k: CLONE_NAMESPACE_FLAGS,
    });
    p.push(ret(RET_ALLOW));
    p.push(ret(RET_ERRNO | libc::EPERM as u32));
    p.push(ret(RET_ERRNO | libc::ENOSYS as u32));
    p
}

fn encode(p: &[Insn]) -> Vec<u8> {
    let mut out = Vec::with_capacity(p.len() * 8);
    for i in p {
        out.extend_from_slice(&i.code.to_ne_bytes());
        out.push(i.jt);
        out.push(i.jf);
        out.extend_from_slice(&i.k.to_ne_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny classic-BPF interpreter for the instructions the filter uses.
    fn run(p: &[Insn], arch: u32, nr: u32, arg0: u32) -> u32 {
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let i = p[pc];
            match i.code {
                LD_W_ABS => {
                    acc = match i.k {
                        OFF_NR => nr,
                        OFF_ARCH => arch,
                        OFF_ARG0_LOW => arg0,
                        other => panic!("load of offset {other}"),
                    }
                }
                JEQ_K | JGE_K | JSET_K => {
                    let hit = match i.code {
                        JEQ_K => acc == i.k,
                        JGE_K => acc >= i.k,
                        _ => acc & i.k != 0,
                    };
                    pc += usize::from(if hit { i.jt } else { i.jf });
                }
                RET_K => return i.k,
                other => panic!("opcode {other:#x}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn denies_namespaces_and_mounts_allows_the_rest() {
        let p = build(DENIED, libc::SYS_clone, libc::SYS_clone3);
        let eperm = RET_ERRNO | libc::EPERM as u32;
        let x86 = AUDIT_ARCH_X86_64;
        for nr in DENIED {
            assert_eq!(run(&p, x86, *nr as u32, 0), eperm, "syscall {nr}");
        }
        for nr in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_openat,
            libc::SYS_epoll_wait,
            libc::SYS_mmap,
            libc::SYS_execve,
        ] {
            assert_eq!(run(&p, x86, nr as u32, 0), RET_ALLOW, "syscall {nr}");
        }
        // fork/threads via clone stay allowed; namespace flags do not.
        let fork_flags = 0x0120_0011; // CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD
        assert_eq!(run(&p, x86, libc::SYS_clone as u32, fork_flags), RET_ALLOW);
        assert_eq!(
            run(&p, x86, libc::SYS_clone as u32, fork_flags | 0x1000_0000),
            eperm
        );
        assert_eq!(
            run(&p, x86, libc::SYS_clone3 as u32, 0),
            RET_ERRNO | libc::ENOSYS as u32
        );
        assert_eq!(run(&p, x86, X32_SYSCALL_BIT | 1, 0), eperm, "x32 ABI");
        assert_eq!(run(&p, 0x4000_0003, 1, 0), RET_KILL_PROCESS, "i386 ABI");
        assert_eq!(encode(&p).len(), p.len() * 8);
        assert!(DENIED.len() < 240, "jump offsets must fit a byte");
    }
}
