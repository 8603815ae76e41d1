//! codemode-guest: the agent inside the sandbox. It owns the embedded
//! CPython, speaks the codemode protocol with the host over length-prefixed
//! frames on its stdin/stdout, runs cells (persistent globals, top-level
//! await), streams their output, forwards MCP tool calls as RPC frames and
//! obeys cancels and timeouts.
//!
//! Threads: the main thread runs Python (the `_codemode_driver` event loop);
//! the reader thread reads frames and never takes the GIL; the drain,
//! flusher and timer threads move output and deliver timeouts. They meet in
//! [`session::Session`].

mod args;
mod cell;
mod channel;
mod embedded;
mod error;
mod fds;
mod frozen;
mod interpreter;
mod output;
mod procs;
mod pymod;
mod reader;
mod records;
mod session;
mod timer;

use std::os::fd::AsRawFd;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicI32, Ordering};
use std::thread;

use codemode_proto::v1::{guest_message::Kind, Ready};
use codemode_proto::{PROTOCOL_MAJOR, PROTOCOL_MINOR};

pub use error::{ProtocolViolation, StartupError};

use channel::{exit_now, Channel};
use interpreter::{Interpreter, PythonConfig};
use output::Output;

/// The fd of the real stderr: 2 until the take-over, its saved copy after.
static DIAG_FD: AtomicI32 = AtomicI32::new(2);

/// Runs the guest; never returns. Exit codes: 0 after Shutdown or the end of
/// the channel, 2 on a protocol violation or start-up failure.
pub fn run_main() -> ! {
    match run() {
        Ok(never) => match never {},
        Err(err) => {
            write_diag(&format!("codemode-guest: {err}\n"));
            exit_now(2)
        }
    }
}

fn run() -> Result<std::convert::Infallible, StartupError> {
    let args = args::Args::parse(std::env::args_os().skip(1))?;
    if let Some(dir) = &args.compile_all {
        interpreter::compile_all(dir)?;
        exit_now(0)
    }
    if let Some(max) = args.max_processes {
        // Before any thread: threads count against the cap too.
        procs::limit(max).map_err(|source| StartupError::Setup {
            what: "the process limit (RLIMIT_NPROC)",
            source,
        })?;
    }
    if args.end_cell_processes && !procs::enable_ending() {
        write_diag("codemode-guest: not in a pid namespace of its own; processes cells leave running are not ended\n");
    }
    let stdio = fds::take_over_stdio(args.channel_fd)?;
    DIAG_FD.store(stdio.diag.as_raw_fd(), Ordering::SeqCst);
    std::panic::set_hook(Box::new(|info| {
        write_diag(&format!("codemode-guest: internal error: {info}\n"));
    }));
    channel::watch_forks();

    let wake = fds::WakePipe::new()?;
    let wake_fd = wake.read_fd();
    let channel = Channel::new(stdio.channel_out, stdio.diag, args.max_frame_bytes);
    let output = Output::new(stdio.stdout_pipe, stdio.stderr_pipe);
    let session = session::install(channel, output, wake, args.max_frame_bytes);
    spawn("output-drain", move || {
        session.output.run_drain(&session.channel)
    })?;
    spawn("output-flush", move || {
        session.output.run_flusher(&session.channel)
    })?;
    spawn("timer", move || session.timer.run(session))?;

    let (interpreter, python_version) = Interpreter::start(&PythonConfig::resolve(), wake_fd)?;
    let ready = Ready {
        guest_version: env!("CARGO_PKG_VERSION").to_owned(),
        python_version,
        protocol_major: PROTOCOL_MAJOR,
        protocol_minor: PROTOCOL_MINOR,
    };
    session
        .channel
        .send(Kind::Ready(ready))
        .map_err(StartupError::Ready)?;

    let input = stdio.channel_in;
    spawn("reader", move || reader::run(session, input))?;
    let why = interpreter.run();
    session.channel.fail(&format!(
        "internal error: the guest's event loop stopped: {why}"
    ))
}

/// Starts a guest thread. A panic in one (a bug) ends the session cleanly
/// rather than leaving the host waiting on a half-dead guest.
fn spawn(name: &'static str, body: impl FnOnce() + Send + 'static) -> Result<(), StartupError> {
    thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            if std::panic::catch_unwind(AssertUnwindSafe(body)).is_err() {
                match session::get() {
                    Some(session) => session.channel.fail(&format!(
                        "internal error: the guest's {name} thread panicked"
                    )),
                    None => exit_now(2),
                }
            }
        })
        .map(drop)
        .map_err(|source| StartupError::Thread { name, source })
}

/// Writes to the real stderr without any lock: usable from the panic hook.
fn write_diag(text: &str) {
    let _ = fds::write_raw(DIAG_FD.load(Ordering::SeqCst), text.as_bytes());
}
