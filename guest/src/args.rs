//! The command line: no required arguments; `--max-frame-bytes N` bounds the
//! frames accepted from the host (and sent, until `Init` says otherwise).

use std::ffi::OsString;
use std::io::Write;

use codemode_proto::DEFAULT_MAX_FRAME_BYTES;

use crate::error::StartupError;

/// Frames smaller than this could not carry an `Init` of any real session.
const MIN_FRAME_BYTES: usize = 4 * 1024;

pub struct Args {
    pub max_frame_bytes: usize,
}

const USAGE: &str = "usage: codemode-guest [--max-frame-bytes N]\n\n\
    The codemode sandbox entrypoint: speaks codemode protocol frames on stdin/stdout.\n";

impl Args {
    /// Parses the arguments; `--version` and `--help` print and exit 0.
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Self, StartupError> {
        let mut parsed = Args {
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let arg = arg
                .into_string()
                .map_err(|a| StartupError::Args(format!("argument {a:?} is not UTF-8")))?;
            let value = match arg.as_str() {
                "--version" => {
                    exit_with(&format!("codemode-guest {}\n", env!("CARGO_PKG_VERSION")))
                }
                "--help" | "-h" => exit_with(USAGE),
                "--max-frame-bytes" => args
                    .next()
                    .and_then(|v| v.into_string().ok())
                    .ok_or_else(|| StartupError::Args("--max-frame-bytes needs a value".into()))?,
                other => match other.strip_prefix("--max-frame-bytes=") {
                    Some(v) => v.to_owned(),
                    None => return Err(StartupError::Args(format!("unknown argument {other:?}"))),
                },
            };
            parsed.max_frame_bytes = value
                .parse::<usize>()
                .ok()
                .filter(|n| (MIN_FRAME_BYTES..=u32::MAX as usize).contains(n))
                .ok_or_else(|| {
                    StartupError::Args(format!(
                        "--max-frame-bytes {value:?} is not a byte count between {MIN_FRAME_BYTES} and {}",
                        u32::MAX
                    ))
                })?;
        }
        Ok(parsed)
    }
}

/// Prints to stdout (the channel is not set up yet) and exits 0.
fn exit_with(text: &str) -> ! {
    let mut out = std::io::stdout();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    std::process::exit(0)
}
