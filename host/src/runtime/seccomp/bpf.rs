//! The deny list as a classic-BPF program for `bwrap --seccomp FD`: an
//! array of `struct sock_filter` in native byte order. Built by a tiny
//! assembler with named targets, since BPF jumps are relative, forward
//! and one byte wide.

#[cfg(target_arch = "x86_64")]
use super::DENIED;
use super::{ALLOWED_SOCKET_FAMILIES, CLONE_NAMESPACE_FLAGS};

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

/// Where a conditional jump goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum To {
    Next,
    Native,
    Allow,
    Eperm,
    Enosys,
    CloneCheck,
    SocketCheck,
}

/// An instruction before jump resolution.
#[derive(Debug, Clone, Copy)]
enum Op {
    Load(u32),
    Jump { code: u16, k: u32, jt: To, jf: To },
    Ret(u32),
    Label(To),
}

/// The syscall numbers a program is built from (x86_64's in production,
/// the same ones in tests).
struct Numbers<'a> {
    denied: &'a [i64],
    clone: i64,
    clone3: i64,
    socket: i64,
}

/// The filter as the bytes `bwrap --seccomp FD` reads, or `None` on
/// architectures it is not written for.
pub fn program() -> Option<Vec<u8>> {
    #[cfg(target_arch = "x86_64")]
    {
        let denied: Vec<i64> = DENIED.iter().map(|(_, nr)| *nr).collect();
        let numbers = Numbers {
            denied: &denied,
            clone: libc::SYS_clone,
            clone3: libc::SYS_clone3,
            socket: libc::SYS_socket,
        };
        Some(encode(&assemble(&ops(&numbers))?))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Layout: arch check, x32 check, one test per denied syscall, clone3 ->
/// ENOSYS (glibc falls back to clone), clone -> flag check, socket ->
/// family check, allow; then the shared returns.
fn ops(n: &Numbers<'_>) -> Vec<Op> {
    let jeq = |k: u32, jt: To| Op::Jump {
        code: JEQ_K,
        k,
        jt,
        jf: To::Next,
    };
    let mut p = vec![
        Op::Load(OFF_ARCH),
        Op::Jump {
            code: JEQ_K,
            k: AUDIT_ARCH_X86_64,
            jt: To::Native,
            jf: To::Next,
        },
        // Another ABI entirely (i386 on x86_64) is killed, not answered:
        // its syscall numbers mean other things.
        Op::Ret(RET_KILL_PROCESS),
        Op::Label(To::Native),
        Op::Load(OFF_NR),
        Op::Jump {
            code: JGE_K,
            k: X32_SYSCALL_BIT,
            jt: To::Eperm,
            jf: To::Next,
        },
    ];
    p.extend(n.denied.iter().map(|nr| jeq(*nr as u32, To::Eperm)));
    p.push(jeq(n.clone3 as u32, To::Enosys));
    p.push(jeq(n.clone as u32, To::CloneCheck));
    p.push(jeq(n.socket as u32, To::SocketCheck));
    p.push(Op::Ret(RET_ALLOW));
    p.push(Op::Label(To::CloneCheck));
    p.push(Op::Load(OFF_ARG0_LOW));
    p.push(Op::Jump {
        code: JSET_K,
        k: CLONE_NAMESPACE_FLAGS,
        jt: To::Eperm,
        jf: To::Allow,
    });
    p.push(Op::Label(To::SocketCheck));
    p.push(Op::Load(OFF_ARG0_LOW));
    p.extend(ALLOWED_SOCKET_FAMILIES.iter().map(|f| jeq(*f, To::Allow)));
    p.push(Op::Ret(RET_ERRNO | libc::EAFNOSUPPORT as u32));
    p.push(Op::Label(To::Allow));
    p.push(Op::Ret(RET_ALLOW));
    p.push(Op::Label(To::Eperm));
    p.push(Op::Ret(RET_ERRNO | libc::EPERM as u32));
    p.push(Op::Label(To::Enosys));
    p.push(Op::Ret(RET_ERRNO | libc::ENOSYS as u32));
    p
}

/// Resolves labels into relative one-byte offsets; `None` if a jump would
/// go backwards or further than 255 instructions.
fn assemble(ops: &[Op]) -> Option<Vec<Insn>> {
    let mut at = Vec::new();
    let mut pc = 0usize;
    for op in ops {
        match op {
            Op::Label(l) => at.push((*l, pc)),
            _ => pc += 1,
        }
    }
    let target = |l: To, from: usize| -> Option<u8> {
        if l == To::Next {
            return Some(0);
        }
        let to = at.iter().find(|(x, _)| *x == l)?.1;
        u8::try_from(to.checked_sub(from + 1)?).ok()
    };
    let mut out = Vec::with_capacity(pc);
    for op in ops {
        let from = out.len();
        let insn = match *op {
            Op::Label(_) => continue,
            Op::Load(k) => Insn {
                code: LD_W_ABS,
                jt: 0,
                jf: 0,
                k,
            },
            Op::Ret(k) => Insn {
                code: RET_K,
                jt: 0,
                jf: 0,
                k,
            },
            Op::Jump { code, k, jt, jf } => Insn {
                code,
                jt: target(jt, from)?,
                jf: target(jf, from)?,
                k,
            },
        };
        out.push(insn);
    }
    Some(out)
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

    fn filter() -> Vec<Insn> {
        let denied: Vec<i64> = DENIED.iter().map(|(_, nr)| *nr).collect();
        assemble(&ops(&Numbers {
            denied: &denied,
            clone: libc::SYS_clone,
            clone3: libc::SYS_clone3,
            socket: libc::SYS_socket,
        }))
        .unwrap()
    }

    #[test]
    fn denies_namespaces_and_mounts_allows_the_rest() {
        let p = filter();
        let eperm = RET_ERRNO | libc::EPERM as u32;
        let x86 = AUDIT_ARCH_X86_64;
        for (name, nr) in DENIED {
            assert_eq!(run(&p, x86, *nr as u32, 0), eperm, "syscall {name}");
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
    }

    #[test]
    fn only_unix_and_ip_sockets_can_be_created() {
        let p = filter();
        let socket = libc::SYS_socket as u32;
        let x86 = AUDIT_ARCH_X86_64;
        for family in [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6] {
            assert_eq!(run(&p, x86, socket, family as u32), RET_ALLOW);
        }
        let refused = RET_ERRNO | libc::EAFNOSUPPORT as u32;
        for family in [
            libc::AF_NETLINK,
            libc::AF_VSOCK,
            libc::AF_PACKET,
            libc::AF_ALG,
        ] {
            assert_eq!(run(&p, x86, socket, family as u32), refused, "{family}");
        }
    }

    #[test]
    fn jumps_that_do_not_fit_are_refused_not_truncated() {
        let denied: Vec<i64> = (0..300).collect();
        let ops = ops(&Numbers {
            denied: &denied,
            clone: 1000,
            clone3: 1001,
            socket: 1002,
        });
        assert!(assemble(&ops).is_none());
    }
}
