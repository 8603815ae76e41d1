//! Output capture: Python-level writes, raw fd writes and child processes
//! are captured in order, streamed while a cell runs, and capped.

use std::time::{Duration, Instant};

use codemode_proto::v1::{guest_message, Init, Limits, Stream};

use crate::common::*;

#[test]
fn print_stderr_and_raw_fd_writes_are_captured_in_order() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run(
        "import os, sys\nprint('a')\nos.write(1, b'b\\n')\nprint('c')\n\
         sys.stderr.write('e1\\n')\nos.write(2, b'e2\\n')\nsys.stdout.buffer.write(b'd\\n')",
    );
    out.assert_success();
    assert_eq!(out.stdout, "a\nb\nc\nd\n");
    assert_eq!(out.stderr, "e1\ne2\n");
}

#[test]
fn child_processes_and_c_stdio_are_captured() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run(
        "import subprocess, ctypes\nsubprocess.run(['echo', 'from child'])\n\
         subprocess.run(['sh', '-c', 'echo child err >&2'])\n\
         libc = ctypes.CDLL(None)\nlibc.printf(b'from printf\\n')",
    );
    out.assert_success();
    assert_eq!(out.stdout, "from child\nfrom printf\n");
    assert_eq!(out.stderr, "child err\n");
}

#[test]
fn output_streams_before_a_long_cell_ends() {
    let mut guest = Guest::started(vec![]);
    let started = Instant::now();
    let id = guest.execute("import time, os\nprint('early')\nos.write(2, b'raw early\\n')\ntime.sleep(4)\nprint('late')", 0);
    let mut seen = String::new();
    while seen.len() < "early\nraw early\n".len() {
        match guest.recv() {
            Some(guest_message::Kind::Output(out)) => {
                seen.push_str(&String::from_utf8_lossy(&out.data))
            }
            other => panic!("expected streamed output, got {other:?}"),
        }
    }
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "output came late"
    );
    assert!(
        seen.contains("early\n") && seen.contains("raw early\n"),
        "{seen}"
    );
    let out = guest.collect(id, |_, _| {});
    assert_eq!(out.stdout, "late\n");
}

#[test]
fn output_over_the_limit_keeps_head_and_tail() {
    let mut guest = Guest::spawn();
    guest.init(Init {
        limits: Some(Limits {
            max_output_bytes: 1000,
            ..Limits::default()
        }),
        ..default_init()
    });
    let out = guest.run("for i in range(10000):\n    print(f'line {i:05d}')");
    out.assert_success();
    let total = 10000 * "line 00000\n".len() as u64;
    let dropped = out.finished.dropped_output_bytes;
    assert!(dropped >= total - 1000 && dropped <= total, "{dropped}");
    assert!(
        out.stdout.starts_with("line 00000\nline 00001\n"),
        "{}",
        &out.stdout[..80]
    );
    assert!(out.stdout.ends_with("line 09999\n"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains(&format!("[... {dropped} bytes of output dropped")),
        "{}",
        out.stdout
    );
    assert!(out.stdout.len() < 1300, "{}", out.stdout.len());
    // The next cell starts with a fresh budget.
    let out = guest.run("print('fresh')");
    assert_eq!(out.stdout, "fresh\n");
    assert_eq!(out.finished.dropped_output_bytes, 0);
}

#[test]
fn a_huge_single_write_is_capped_too() {
    let mut guest = Guest::spawn();
    guest.init(Init {
        limits: Some(Limits {
            max_output_bytes: 4096,
            ..Limits::default()
        }),
        ..default_init()
    });
    let out = guest.run("import os\nos.write(1, b'x' * 5_000_000)\nprint('END')");
    out.assert_success();
    assert!(
        out.stdout.ends_with("xxxEND\n"),
        "{}",
        &out.stdout[out.stdout.len() - 20..]
    );
    assert!(out.finished.dropped_output_bytes > 4_990_000);
    assert!(out.stdout.len() < 4096 + 200);
}

#[test]
fn small_writes_are_batched_into_few_frames() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run("for i in range(2000):\n    print(i)");
    out.assert_success();
    assert_eq!(out.stdout.lines().count(), 2000);
    assert!(
        out.outputs.len() < 50,
        "{} frames for 2000 prints",
        out.outputs.len()
    );
    assert!(out
        .outputs
        .iter()
        .all(|o| o.stream == Stream::Stdout as i32));
}

#[test]
fn output_between_cells_is_not_attributed_to_the_next_cell() {
    let mut guest = Guest::started(vec![]);
    guest
        .run("import asyncio\nasync def later():\n    await asyncio.sleep(0.1)\n    print('stray')\nt = asyncio.create_task(later())")
        .assert_success();
    std::thread::sleep(Duration::from_millis(300));
    let out = guest.run("print('mine')");
    assert_eq!(out.stdout, "mine\n");
}

#[test]
fn non_utf8_and_surrogates_do_not_break_capture() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run("import sys\nsys.stdout.buffer.write(b'\\xff\\n')\nprint('\\udc80 ok')");
    out.assert_success();
    assert_eq!(
        out.outputs
            .iter()
            .flat_map(|o| o.data.clone())
            .collect::<Vec<u8>>()[..2],
        [0xff, b'\n']
    );
    assert!(out.stdout.ends_with(" ok\n"), "{}", out.stdout);
}

#[test]
fn a_forked_child_writes_through_the_capture_not_the_channel() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run(
        "import os\npid = os.fork()\nif pid == 0:\n    print('child')\n    os._exit(0)\n\
         os.waitpid(pid, 0)\nprint('parent')",
    );
    out.assert_success();
    assert_eq!(out.stdout, "child\nparent\n");
    guest.run("print('still framed')").assert_success();
}
