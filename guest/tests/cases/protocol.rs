//! The handshake and the protocol's rules: anything out of order or
//! malformed gets a ProtocolError and exit code 2, never a hang.

use std::time::Duration;

use codemode_proto::v1::{
    guest_message, host_message, AddServers, Execute, Init, RpcResponse, Shutdown,
};

use crate::common::*;

/// Expects a ProtocolError containing `needle`, then exit status 2.
#[track_caller]
fn expect_protocol_error(guest: &mut Guest, needle: &str) {
    loop {
        match guest.recv() {
            Some(guest_message::Kind::ProtocolError(err)) => {
                assert!(
                    err.message.contains(needle),
                    "{:?} lacks {needle:?}",
                    err.message
                );
                break;
            }
            Some(guest_message::Kind::Output(_)) => continue,
            other => panic!(
                "expected ProtocolError, got {other:?}; stderr: {}",
                guest.stderr()
            ),
        }
    }
    let status = guest.wait_exit(WAIT).expect("guest did not exit");
    assert_eq!(status.code(), Some(2));
    // The thread collecting stderr may still be reading what the guest
    // wrote just before it exited.
    let deadline = std::time::Instant::now() + WAIT;
    while !guest.stderr().contains(needle) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        guest.stderr().contains(needle),
        "stderr lacks the reason: {}",
        guest.stderr()
    );
}

#[test]
fn ready_comes_first_and_names_versions() {
    let guest = Guest::spawn();
    assert_eq!(guest.ready.guest_version, env!("CARGO_PKG_VERSION"));
    assert!(
        guest.ready.python_version.starts_with("3.13."),
        "{:?}",
        guest.ready
    );
    assert_eq!(guest.ready.protocol_major, codemode_proto::PROTOCOL_MAJOR);
    assert_eq!(guest.ready.protocol_minor, codemode_proto::PROTOCOL_MINOR);
}

#[test]
fn init_of_another_major_version_is_refused() {
    let mut guest = Guest::spawn();
    guest.init(Init {
        protocol_major: codemode_proto::PROTOCOL_MAJOR + 1,
        ..default_init()
    });
    expect_protocol_error(&mut guest, "protocol version mismatch");
}

#[test]
fn execute_before_init_is_refused() {
    let mut guest = Guest::spawn();
    guest.execute("print(1)", 0);
    expect_protocol_error(&mut guest, "expected Init, received Execute");
}

#[test]
fn add_servers_before_init_is_refused() {
    let mut guest = Guest::spawn();
    guest.host.send(host_message::Kind::AddServers(AddServers {
        servers: vec![],
    }));
    expect_protocol_error(&mut guest, "expected Init, received AddServers");
}

#[test]
fn a_second_init_is_refused() {
    let mut guest = Guest::started(vec![]);
    guest.init(default_init());
    expect_protocol_error(&mut guest, "Init was already received");
}

#[test]
fn execute_while_a_cell_runs_is_refused() {
    let mut guest = Guest::started(vec![]);
    guest.execute("import time; time.sleep(30)", 0);
    guest.execute("print(2)", 0);
    expect_protocol_error(&mut guest, "while cell 1 is still running");
}

#[test]
fn execute_ids_must_increase() {
    let mut guest = Guest::started(vec![]);
    guest.run("x = 1").assert_success();
    guest.host.send(host_message::Kind::Execute(Execute {
        id: 1,
        code: "print(1)".into(),
        timeout_ms: 0,
    }));
    expect_protocol_error(&mut guest, "expected increasing execution ids");
}

#[test]
fn a_response_to_no_request_is_refused() {
    let mut guest = Guest::started(vec![]);
    guest.host.respond(RpcResponse {
        id: 77,
        result: Some(codemode_proto::v1::rpc_response::Result::OkJson("1".into())),
    });
    expect_protocol_error(&mut guest, "RpcResponse 77");
}

#[test]
fn garbage_bytes_are_refused_without_a_hang() {
    let mut guest = Guest::spawn();
    guest.host.send_raw(&[0, 0, 0, 3, 0xff, 0xff, 0xff]);
    expect_protocol_error(&mut guest, "not a valid HostMessage");
}

#[test]
fn a_zero_length_frame_is_refused() {
    let mut guest = Guest::started(vec![]);
    guest.host.send_raw(&[0, 0, 0, 0]);
    expect_protocol_error(&mut guest, "frame length is zero");
}

#[test]
fn an_oversized_frame_is_refused_before_reading_it() {
    let mut guest = Guest::spawn_with(&["--max-frame-bytes", "65536"], &[]);
    guest.host.send_raw(&[0, 1, 0, 1]);
    expect_protocol_error(&mut guest, "exceeds the maximum of 65536 bytes");
}

#[test]
fn a_frame_without_a_message_is_refused() {
    let mut guest = Guest::spawn();
    // A valid protobuf (an unknown field 15 = 1) that sets no `kind`.
    guest.host.send_raw(&[0, 0, 0, 2, 0x78, 0x01]);
    expect_protocol_error(&mut guest, "carries no message");
}

#[test]
fn a_truncated_frame_at_the_end_of_the_channel_is_refused() {
    let mut guest = Guest::spawn();
    guest.host.send_raw(&[0, 0, 0, 9, 1, 2]);
    guest.close_stdin();
    expect_protocol_error(&mut guest, "stream ended inside a frame");
}

#[test]
fn shutdown_exits_zero() {
    let mut guest = Guest::started(vec![]);
    guest.run("x = 1").assert_success();
    guest.host.send(host_message::Kind::Shutdown(Shutdown {}));
    let status = guest.wait_exit(WAIT).expect("guest did not exit");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn shutdown_during_a_busy_cell_still_exits() {
    let mut guest = Guest::started(vec![]);
    guest.execute("while True: pass", 0);
    std::thread::sleep(Duration::from_millis(200));
    guest.shutdown();
    let status = guest.wait_exit(WAIT).expect("guest did not exit");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn end_of_channel_exits_zero() {
    let mut guest = Guest::started(vec![]);
    guest.close_stdin();
    let status = guest.wait_exit(WAIT).expect("guest did not exit");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_cancel_for_another_cell_is_ignored() {
    let mut guest = Guest::started(vec![]);
    guest.cancel(99);
    let out = guest.run("import time; time.sleep(0.2); print('done')");
    out.assert_success();
    assert_eq!(out.stdout, "done\n");
}

#[test]
fn bad_command_line_exits_two_with_a_message() {
    let out = std::process::Command::new(BIN)
        .arg("--bogus")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown argument \"--bogus\""));
}

#[test]
fn a_tiny_frame_limit_still_gets_every_cell_a_finished() {
    let mut guest = Guest::spawn();
    guest.init(Init {
        limits: Some(codemode_proto::v1::Limits {
            max_frame_bytes: 200,
            ..Default::default()
        }),
        ..default_init()
    });
    let out = guest.run("print('x' * 1000)\nraise ValueError('y' * 5000)");
    assert_eq!(out.error_type(), "ValueError");
    assert_eq!(out.stdout, format!("{}\n", "x".repeat(1000)));
    assert!(
        out.outputs.len() > 5,
        "output must come in frames within the limit"
    );
}

/// With `--channel-fd 3` the guest speaks on the socket at fd 3 (as podman
/// passes it) and not on stdout; the socket's end is EOF for the guest.
#[test]
fn the_channel_can_be_a_socket_at_fd_3() {
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::os::unix::process::CommandExt;

    let (mut host, guest_end) = UnixStream::pair().unwrap();
    let fd = guest_end.as_raw_fd();
    let mut command = std::process::Command::new(BIN);
    command
        .args(["--channel-fd", "3"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SAFETY: dup2 and fcntl in the forked child, both async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            let placed = if fd == 3 {
                libc::fcntl(fd, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, 3)
            };
            if placed < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().unwrap();
    drop(guest_end);
    host.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let ready = codemode_proto::frame::read_frame::<codemode_proto::v1::GuestMessage, _>(
        &mut host,
        1 << 20,
    )
    .unwrap();
    assert!(
        matches!(
            ready.and_then(|m| m.kind),
            Some(guest_message::Kind::Ready(_))
        ),
        "Ready on the socket"
    );
    // Closing the host's end is EOF for the guest: it exits, having
    // written nothing on stdout.
    drop(host);
    let out = child.wait_with_output().unwrap();
    assert!(out.stdout.is_empty(), "{:?}", out.stdout);
    assert!(
        out.status.success(),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
}
