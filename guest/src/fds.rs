//! Takes the process's standard fds away from user code before Python starts.
//!
//! The host talks to the guest over stdin/stdout. User code can write to fds
//! 1 and 2 in many ways (`print`, `os.write(1, ...)`, C `printf`, child
//! processes), so the channel moves to private close-on-exec fds and fds 1/2
//! become pipes whose read ends the output capture drains. fd 0 becomes
//! `/dev/null` so nothing in a cell can read the host's frames.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::error::StartupError;

/// The channel and capture fds, after the take-over.
pub struct Stdio {
    /// Frames from the host (the original stdin).
    pub channel_in: File,
    /// Frames to the host (the original stdout).
    pub channel_out: File,
    /// The original stderr, for the guest's own diagnostics.
    pub diag: File,
    /// Read end of the pipe now installed as fd 1 (non-blocking).
    pub stdout_pipe: OwnedFd,
    /// Read end of the pipe now installed as fd 2 (non-blocking).
    pub stderr_pipe: OwnedFd,
}

/// Moves the channel off fds 0/1/2 and installs the capture pipes. Any
/// other fd the guest inherited is closed first: nothing of the launcher's
/// (a host pipe, a jobserver, a socket) may reach user code. With
/// `channel_fd`, that socket becomes the channel both ways (it is put on
/// fds 0 and 1 first, then closed with the rest).
pub fn take_over_stdio(channel_fd: Option<RawFd>) -> Result<Stdio, StartupError> {
    if let Some(fd) = channel_fd {
        for target in [0, 1] {
            // SAFETY: dup2 onto a standard fd; a bad `fd` fails with EBADF.
            if unsafe { libc::dup2(fd, target) } < 0 {
                return Err(StartupError::StdioFd {
                    fd,
                    source: io::Error::last_os_error(),
                });
            }
        }
    }
    close_inherited_fds();
    let channel_in = dup_cloexec(0).map_err(|source| StartupError::StdioFd { fd: 0, source })?;
    let channel_out = dup_cloexec(1).map_err(|source| StartupError::StdioFd { fd: 1, source })?;
    let diag = dup_cloexec(2).map_err(|source| StartupError::StdioFd { fd: 2, source })?;

    let null = open_null_input().map_err(|source| StartupError::Setup {
        what: "/dev/null as stdin",
        source,
    })?;
    redirect(&null, 0).map_err(|source| StartupError::Setup {
        what: "/dev/null as stdin",
        source,
    })?;

    let stdout_pipe = capture_pipe(1).map_err(|source| StartupError::Setup {
        what: "the stdout capture pipe",
        source,
    })?;
    let stderr_pipe = capture_pipe(2).map_err(|source| StartupError::Setup {
        what: "the stderr capture pipe",
        source,
    })?;

    Ok(Stdio {
        channel_in: File::from(channel_in),
        channel_out: File::from(channel_out),
        diag: File::from(diag),
        stdout_pipe,
        stderr_pipe,
    })
}

/// Closes every fd from 3 up. Runs first thing, so the guest owns none yet.
fn close_inherited_fds() {
    // SAFETY: close_range takes plain integers; on kernels without it the
    // call fails with ENOSYS and the fallback below runs.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    if rc == 0 {
        return;
    }
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<RawFd> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in fds {
        // SAFETY: closing an fd number nothing in this process uses yet
        // (read_dir's own fd is closed already and fails harmlessly).
        unsafe {
            libc::close(fd);
        }
    }
}

/// A pipe whose write end becomes `target`; returns the non-blocking read end.
fn capture_pipe(target: RawFd) -> io::Result<OwnedFd> {
    let (read, write) = pipe_cloexec()?;
    redirect(&write, target)?;
    set_nonblocking(&read)?;
    Ok(read)
}

/// `/dev/null`, or when a minimal sandbox has no `/dev`, a pipe whose write
/// end is already closed: both read as end of file.
fn open_null_input() -> io::Result<OwnedFd> {
    match File::open("/dev/null") {
        Ok(file) => Ok(OwnedFd::from(file)),
        Err(_) => {
            let (read, _write) = pipe_cloexec()?;
            Ok(read)
        }
    }
}

fn dup_cloexec(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC only reads `fd`; a closed fd makes it fail with
    // EBADF, which is reported.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` is a freshly created fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// A close-on-exec pipe: (read end, write end).
pub fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both fds are new and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Installs `src` as `target` (without close-on-exec, so child processes
/// inherit it).
fn redirect(src: &OwnedFd, target: RawFd) -> io::Result<()> {
    // SAFETY: dup2 on two valid fds; `target` is one of the standard fds,
    // which this process deliberately replaces.
    if unsafe { libc::dup2(src.as_raw_fd(), target) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    // SAFETY: F_GETFL/F_SETFL on a valid fd owned by the caller.
    unsafe {
        let flags = libc::fcntl(raw, libc::F_GETFL);
        if flags < 0 || libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Reads what is available from a non-blocking fd into `buf`: `Ok(0)` at end
/// of file, `Err(WouldBlock)` when nothing is there.
pub fn read_some(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is valid for `buf.len()` writable bytes.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n.unsigned_abs());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Writes all of `data` to a raw fd, retrying on EINTR. Used where no Rust
/// handle may be taken (a forked child of user code).
pub fn write_raw(fd: RawFd, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        // SAFETY: `data` is valid for `data.len()` readable bytes.
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        data = &data[n.unsigned_abs()..];
    }
    Ok(())
}

/// The self-pipe that wakes the asyncio loop when the inbox has work.
pub struct WakePipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl WakePipe {
    pub fn new() -> Result<Self, StartupError> {
        let setup = |source| StartupError::Setup {
            what: "the wake-up pipe",
            source,
        };
        let (read, write) = pipe_cloexec().map_err(setup)?;
        set_nonblocking(&read).map_err(setup)?;
        set_nonblocking(&write).map_err(setup)?;
        Ok(Self { read, write })
    }

    /// The fd the event loop watches.
    pub fn read_fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// Makes the read end readable. A full pipe already is, so EAGAIN is fine.
    pub fn wake(&self) {
        let byte = [1u8];
        // SAFETY: a one-byte write from a valid buffer to an fd we own.
        let _ = unsafe { libc::write(self.write.as_raw_fd(), byte.as_ptr().cast(), 1) };
    }
}
