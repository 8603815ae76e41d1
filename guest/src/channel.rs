//! The guest's end of the channel: one writer for every frame the guest
//! sends (so frames never interleave), the real stderr for diagnostics, and
//! the process exits that end a session.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};
use std::thread;
use std::time::{Duration, Instant};

use codemode_proto::frame::{encode_frame, FrameError};
use codemode_proto::v1::{guest_message, GuestMessage, ProtocolError};

/// How long an exit path waits for a lock held by a thread that may be stuck
/// writing to a host that stopped reading: long enough for a healthy write
/// to finish, short enough that exiting never hangs.
const EXIT_LOCK_WAIT: Duration = Duration::from_millis(500);

/// Set in a child forked by user code: the child has copies of the guest's
/// locks in whatever state they were, and must never write frames.
static IN_FORK_CHILD: AtomicBool = AtomicBool::new(false);

extern "C" fn mark_fork_child() {
    IN_FORK_CHILD.store(true, Ordering::SeqCst);
}

/// Registers the fork hook; call once at start-up.
pub fn watch_forks() {
    // SAFETY: registers a handler that only stores to an atomic, which is
    // async-signal-safe as a fork child handler must be.
    unsafe {
        libc::pthread_atfork(None, None, Some(mark_fork_child));
    }
}

pub fn in_fork_child() -> bool {
    IN_FORK_CHILD.load(Ordering::Relaxed)
}

/// Locks a mutex, ignoring poisoning: the guest never panics while holding
/// one, and a poisoned lock must not turn into a second failure.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Tries to lock for at most `wait`; exit paths use it so a writer blocked on
/// a full pipe cannot keep the process alive.
pub fn lock_for<T>(mutex: &Mutex<T>, wait: Duration) -> Option<MutexGuard<'_, T>> {
    let deadline = Instant::now() + wait;
    loop {
        match mutex.try_lock() {
            Ok(guard) => return Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => return Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                thread::sleep(Duration::from_millis(2));
            }
            Err(TryLockError::WouldBlock) => return None,
        }
    }
}

/// Frames to the host plus the guest's diagnostics stream.
pub struct Channel {
    out: Mutex<File>,
    diag: Mutex<File>,
    /// Largest frame the guest may send; the host lowers it in `Init`.
    send_max: AtomicUsize,
}

impl Channel {
    pub fn new(out: File, diag: File, send_max: usize) -> Self {
        Self {
            out: Mutex::new(out),
            diag: Mutex::new(diag),
            send_max: AtomicUsize::new(send_max),
        }
    }

    pub fn send_max(&self) -> usize {
        self.send_max.load(Ordering::Relaxed)
    }

    pub fn set_send_max(&self, max: usize) {
        self.send_max.store(max, Ordering::Relaxed);
    }

    /// Encodes and writes one frame.
    pub fn send(&self, kind: guest_message::Kind) -> Result<(), FrameError> {
        let bytes = self.encode(kind)?;
        self.send_encoded(&bytes)
    }

    /// Writes one frame produced by [`Self::encode`].
    pub fn send_encoded(&self, bytes: &[u8]) -> Result<(), FrameError> {
        let mut out = lock(&self.out);
        out.write_all(bytes)?;
        out.flush()?;
        Ok(())
    }

    /// Encodes without sending, so callers can react to an oversized frame.
    pub fn encode(&self, kind: guest_message::Kind) -> Result<Vec<u8>, FrameError> {
        if in_fork_child() {
            return Err(FrameError::Io(std::io::Error::other(
                "a process forked from a cell cannot talk to the host",
            )));
        }
        encode_frame(&GuestMessage { kind: Some(kind) }, self.send_max())
    }

    /// Writes a line to the real stderr (never to the capture pipes).
    pub fn diag(&self, message: &str) {
        if let Some(mut diag) = lock_for(&self.diag, EXIT_LOCK_WAIT) {
            let _ = writeln!(diag, "codemode-guest: {message}");
        }
    }

    /// Reports a protocol violation to the host and on stderr, then exits 2.
    pub fn fail(&self, message: &str) -> ! {
        self.diag(message);
        let frame = self.encode(guest_message::Kind::ProtocolError(ProtocolError {
            message: message.to_owned(),
        }));
        if let (Ok(bytes), Some(mut out)) = (frame, lock_for(&self.out, EXIT_LOCK_WAIT)) {
            let _ = out.write_all(&bytes);
            let _ = out.flush();
        }
        exit_now(2)
    }
}

/// Ends the process at once: no destructors, no interpreter finalization
/// (other threads may be inside Python), no stdio buffers to flush.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit is always safe to call; it never returns.
    unsafe { libc::_exit(code) }
}

/// The wait an exit path grants for a lock held elsewhere.
pub fn exit_lock_wait() -> Duration {
    EXIT_LOCK_WAIT
}
