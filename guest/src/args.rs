//! The command line: no required arguments. `--max-frame-bytes N` bounds
//! the frames accepted from the host (and sent, until `Init` says
//! otherwise); `--max-processes N` caps the tasks (processes and threads)
//! of this sandbox's user namespace with RLIMIT_NPROC, which the kernel
//! (5.14 and later) counts per user namespace: the sandbox's own budget,
//! not one shared with every other process of the host user.
//! `--end-cell-processes` ends what a cell leaves running (see `procs`);
//! the host passes it only to a guest inside a sandbox's pid namespace.
//! `--channel-fd N` speaks the protocol on the socket at fd N instead of
//! stdin/stdout (podman passes one with `--preserve-fds`, so frames skip
//! conmon and the podman client).
//! `--compile-all DIR` is the image builder's: it compiles the packages
//! installed into an image with this guest's own CPython and exits.

use std::ffi::OsString;
use std::io::Write;

use codemode_proto::DEFAULT_MAX_FRAME_BYTES;

use crate::error::StartupError;

/// Frames smaller than this could not carry an `Init` of any real session.
const MIN_FRAME_BYTES: usize = 4 * 1024;
/// The guest's own threads and a little room: fewer could not run a cell.
const MIN_PROCESSES: u64 = 16;

pub struct Args {
    pub max_frame_bytes: usize,
    pub max_processes: Option<u64>,
    pub end_cell_processes: bool,
    pub channel_fd: Option<i32>,
    /// Compile the Python files under this directory, then exit.
    pub compile_all: Option<std::path::PathBuf>,
}

const USAGE: &str =
    "usage: codemode-guest [--max-frame-bytes N] [--max-processes N] [--end-cell-processes] [--channel-fd N]\n\n\
    The codemode sandbox entrypoint: speaks codemode protocol frames on stdin/stdout.\n";

impl Args {
    /// Parses the arguments; `--version` and `--help` print and exit 0.
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Self, StartupError> {
        let mut parsed = Args {
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_processes: None,
            end_cell_processes: false,
            channel_fd: None,
            compile_all: None,
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let arg = arg
                .into_string()
                .map_err(|a| StartupError::Args(format!("argument {a:?} is not UTF-8")))?;
            let (name, inline) = match arg.split_once('=') {
                Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
                None => (arg, None),
            };
            match name.as_str() {
                "--version" => exit_with(&format!(
                    "codemode-guest {} (CPython {}, {})\n",
                    env!("CARGO_PKG_VERSION"),
                    env!("CODEMODE_PYTHON_SERIES"),
                    if cfg!(target_feature = "crt-static") {
                        "static"
                    } else {
                        "dynamic"
                    }
                )),
                "--help" | "-h" => exit_with(USAGE),
                "--max-frame-bytes" => {
                    let value = value_of(&name, inline, &mut args)?;
                    let max = u64::from(u32::MAX);
                    parsed.max_frame_bytes = number(&name, &value, MIN_FRAME_BYTES as u64, max)?
                        .try_into()
                        .map_err(|_| {
                            StartupError::Args(format!("{name} {value:?} is too large"))
                        })?;
                }
                "--end-cell-processes" if inline.is_none() => parsed.end_cell_processes = true,
                "--max-processes" => {
                    let value = value_of(&name, inline, &mut args)?;
                    let max = u64::from(u32::MAX);
                    parsed.max_processes = Some(number(&name, &value, MIN_PROCESSES, max)?);
                }
                "--channel-fd" => {
                    let value = value_of(&name, inline, &mut args)?;
                    let fd = number(&name, &value, 3, 1023)?;
                    parsed.channel_fd = Some(i32::try_from(fd).unwrap_or(3));
                }
                "--compile-all" => {
                    parsed.compile_all = Some(value_of(&name, inline, &mut args)?.into());
                }
                other => return Err(StartupError::Args(format!("unknown argument {other:?}"))),
            }
        }
        Ok(parsed)
    }
}

/// The value after `--name` (or after its `=`).
fn value_of(
    name: &str,
    inline: Option<String>,
    rest: &mut impl Iterator<Item = OsString>,
) -> Result<String, StartupError> {
    inline
        .or_else(|| rest.next().and_then(|v| v.into_string().ok()))
        .ok_or_else(|| StartupError::Args(format!("{name} needs a value")))
}

fn number(name: &str, value: &str, min: u64, max: u64) -> Result<u64, StartupError> {
    value
        .parse::<u64>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| {
            StartupError::Args(format!(
                "{name} {value:?} is not a whole number between {min} and {max}"
            ))
        })
}

/// Prints to stdout (the channel is not set up yet) and exits 0.
fn exit_with(text: &str) -> ! {
    let mut out = std::io::stdout();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    std::process::exit(0)
}
