//! The handshake and the protocol's rules.

use crate::common::*;

#[test]
fn ready_comes_first_and_names_versions() {
    let guest = Guest::spawn();
    assert_eq!(guest.ready.guest_version, env!("CARGO_PKG_VERSION"));
    assert!(guest.ready.python_version.starts_with("3.11."), "{:?}", guest.ready);
    assert_eq!(guest.ready.protocol_major, codemode_proto::PROTOCOL_MAJOR);
}

#[test]
fn a_simple_cell_prints() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run("print('hello', 6 * 7)");
    out.assert_success();
    assert_eq!(out.stdout, "hello 42\n");
}
