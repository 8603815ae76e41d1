//! The interpreter the guest embeds: static libpython, Debian's stdlib and
//! C extensions, an isolated configuration.

use std::process::Command;

use crate::common::*;

#[test]
fn libpython_is_linked_statically() {
    let out = Command::new("ldd").arg(BIN).output().expect("ldd");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("libpython"), "{text}");
}

#[test]
fn stdlib_and_c_extension_modules_import() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run(
        "import json, decimal, ssl, sqlite3, asyncio, ctypes, hashlib, zlib, _ssl, _decimal\n\
         print(decimal.Decimal('1.1') + 1, sqlite3.connect(':memory:').execute('select 2').fetchone()[0])\n\
         print(hashlib.sha256(b'x').hexdigest()[:8], ssl.OPENSSL_VERSION.split()[0])",
    );
    out.assert_success();
    assert_eq!(out.stdout, "2.1 2\n2d711642 OpenSSL\n");
}

#[test]
fn the_configuration_is_isolated_and_read_only_friendly() {
    let mut guest = Guest::spawn_with(
        &[],
        &[
            ("PYTHONPATH", "/nonexistent-pythonpath"),
            ("PYTHONSTARTUP", "/nonexistent"),
            ("LANG", "C"),
        ],
    );
    guest.init(default_init());
    let out = guest.run(
        "import sys, os\nprint(sys.flags.isolated, sys.dont_write_bytecode, sys.flags.utf8_mode)\n\
         print([p for p in sys.path if not p.startswith('/proc/self/fd/')])\n\
         print(repr(sys.executable), sys.prefix)\n\
         print(sys.stdin.read() == '', sys.stdout.isatty())",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "1 True 1\n[]\n'' /usr/lib/codemode\nTrue False\n"
    );
}

#[test]
fn the_host_channel_is_out_of_reach_of_user_code() {
    let mut guest = Guest::started(vec![]);
    // fd 0 is /dev/null and the channel fds are close-on-exec: a child that
    // inherits everything it can sees only fds 0-2 (3 is `ls`'s own).
    let out = guest.run(
        "import os, subprocess\nprint(os.readlink('/proc/self/fd/0'))\n\
         r = subprocess.run(['ls', '/proc/self/fd'], capture_output=True, text=True, close_fds=False)\n\
         print(sorted(int(f) for f in r.stdout.split()))",
    );
    out.assert_success();
    assert_eq!(out.stdout, "/dev/null\n[0, 1, 2, 3]\n");
}

#[test]
fn version_flag_prints_and_exits() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        // cargo's own build of the crate is the dynamic flavour; the static
        // one is built with --target and checked by the system suite.
        format!(
            "codemode-guest {} (CPython 3.13, dynamic)\n",
            env!("CARGO_PKG_VERSION")
        )
    );
}
