//! Kernel surface a cell never needs, probed the way exploits start: a
//! user namespace with full capabilities from a single-threaded child (the
//! guest itself is multi-threaded, where unshare fails anyway), mounts and
//! keyrings, and netlink/vsock sockets.

use crate::common::Fixture;
use crate::per_runtime;

async fn user_namespace_cannot_be_created_from_a_forked_child(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let code = format!(
        "{}{}",
        super::SYSCALL_PY,
        r#"
import os
probes = {
    "unshare_user": (272, 0x10000000),
    "unshare_mount": (272, 0x00020000),
    "unshare_net": (272, 0x40000000),
    "keyctl": (250, 0, 0, 0, 0, 0),
    "add_key": (248, b"user", b"k", b"v", 1, 0xfffffffd),
}
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    out = []
    for name, args in probes.items():
        out.append(f"{name} {syscall(*args)[1]}")
    os.write(w, ("\n".join(out) + "\n").encode())
    os._exit(0)
os.close(w)
print(os.read(r, 4096).decode(), end="")
os.waitpid(pid, 0)
"#
    );
    let r = c.run(&code).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let out = r.stdout();
    for name in [
        "unshare_user",
        "unshare_mount",
        "unshare_net",
        "keyctl",
        "add_key",
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} probed: {out}"));
        assert_ne!(line, format!("{name} 0"), "{name} must fail: {out}");
    }
    c.close().await;
}
per_runtime!(user_namespace_cannot_be_created_from_a_forked_child);

async fn netlink_and_vsock_sockets_are_refused(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let code = r#"
import errno, socket
def make(family, kind, proto=0):
    try:
        socket.socket(family, kind, proto).close()
        return "created"
    except OSError as e:
        return "refused:" + errno.errorcode.get(e.errno, str(e.errno))
print("netlink_route", make(16, socket.SOCK_RAW, 0))
print("netlink_netfilter", make(16, socket.SOCK_RAW, 12))
print("vsock", make(40, socket.SOCK_STREAM))
print("unix", make(socket.AF_UNIX, socket.SOCK_STREAM))
"#;
    let r = c.run(code).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let out = r.stdout();
    for name in ["netlink_route", "netlink_netfilter", "vsock"] {
        let line = out.lines().find(|l| l.starts_with(name)).unwrap_or("");
        assert!(line.contains("refused"), "{name}: {out}");
    }
    assert!(
        out.contains("unix created"),
        "Unix sockets still work: {out}"
    );
    c.close().await;
}
per_runtime!(netlink_and_vsock_sockets_are_refused);
