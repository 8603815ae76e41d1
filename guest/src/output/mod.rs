//! Output capture: what a cell writes to `sys.stdout`/`sys.stderr` (handed
//! over by the `_codemode` module) and to fds 1/2 (drained from the capture
//! pipes) becomes `Output` frames of the running cell, batched, capped, and
//! always flushed before the cell's `Finished`. Rich outputs (images) are
//! collected here too, under their own byte cap.

mod cap;

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread;
use std::time::Duration;

use codemode_proto::v1::{guest_message, Output as OutputFrame, RichOutput, Stream};

pub use cap::StreamId;
use cap::{CellOutput, Chunk};

use crate::channel::{lock, lock_for, Channel};
use crate::fds;

/// Buffered output waits at most this long, so a long cell's prints reach
/// the host while it runs without one frame per `print`.
const FLUSH_INTERVAL: Duration = Duration::from_millis(50);
/// Buffered output beyond this is sent at once rather than waiting.
const FLUSH_BYTES: usize = 16 * 1024;
/// Largest `data` of one Output frame (further bounded by the frame limit).
const MAX_CHUNK_BYTES: usize = 64 * 1024;
/// Room for the framing of an Output or Finished around its payload.
const FRAME_OVERHEAD: usize = 64 * 1024;
/// One pipe drain reads at most this many times while holding the capture
/// lock, so a writer that never stops cannot starve the other threads.
const MAX_READS_PER_DRAIN: usize = 16;
/// Used when the host sets no rich-output limit.
const DEFAULT_MAX_RICH_BYTES: u64 = 4 * 1024 * 1024;

/// Why `add_rich` refused an image.
#[derive(Debug, thiserror::Error)]
pub enum RichError {
    #[error("no cell is running; rich output belongs to a cell")]
    NoCell,
    #[error("rich output of {size} bytes exceeds what is left of this cell's {cap}-byte budget ({left} bytes)")]
    OverBudget { size: u64, left: u64, cap: u64 },
}

/// What a finished cell leaves behind.
pub struct CellEnd {
    pub dropped_output_bytes: u64,
    pub rich: Vec<RichOutput>,
}

struct ActiveCell {
    id: u64,
    out: CellOutput,
    rich: Vec<RichOutput>,
    rich_bytes: u64,
    rich_cap: u64,
}

struct Capture {
    cell: Option<ActiveCell>,
    max_output: u64,
    max_rich: u64,
    scratch: Vec<u8>,
}

/// The capture shared by the Python thread, the drain and flusher threads.
pub struct Output {
    state: Mutex<Capture>,
    has_pending: Condvar,
    pipes: [OwnedFd; 2],
}

static SEND_FAILED: AtomicBool = AtomicBool::new(false);

impl Output {
    pub fn new(stdout_pipe: OwnedFd, stderr_pipe: OwnedFd) -> Self {
        Self {
            state: Mutex::new(Capture {
                cell: None,
                max_output: 0,
                max_rich: DEFAULT_MAX_RICH_BYTES,
                scratch: vec![0; MAX_CHUNK_BYTES],
            }),
            has_pending: Condvar::new(),
            pipes: [stdout_pipe, stderr_pipe],
        }
    }

    /// Applies the limits from `Init` (zero keeps the default).
    pub fn configure(&self, max_output: u64, max_rich: u64) {
        let mut state = lock(&self.state);
        state.max_output = max_output;
        if max_rich > 0 {
            state.max_rich = max_rich;
        }
    }

    /// Starts capturing for cell `id`. Whatever the pipes hold from before
    /// belongs to no cell and is discarded.
    pub fn begin(&self, ch: &Channel, id: u64) {
        let mut state = lock(&self.state);
        self.drain(&mut state, ch, StreamId::Stdout);
        self.drain(&mut state, ch, StreamId::Stderr);
        // Rich outputs travel in the Finished frame, so they must fit in one.
        let frame_room = ch.send_max().saturating_sub(FRAME_OVERHEAD) as u64;
        state.cell = Some(ActiveCell {
            id,
            out: CellOutput::new(state.max_output),
            rich: Vec::new(),
            rich_bytes: 0,
            rich_cap: state.max_rich.min(frame_room),
        });
    }

    /// A write to `sys.stdout`/`sys.stderr`. The stream's pipe is drained
    /// first so `print` and `os.write(1, ...)` keep their relative order.
    pub fn write(&self, ch: &Channel, stream: StreamId, data: &[u8]) {
        let mut state = lock(&self.state);
        self.drain(&mut state, ch, stream);
        self.push(&mut state, ch, stream, data);
    }

    pub fn add_rich(&self, mime_type: String, data: Vec<u8>) -> Result<(), RichError> {
        let mut state = lock(&self.state);
        let cell = state.cell.as_mut().ok_or(RichError::NoCell)?;
        let cap = cell.rich_cap;
        let size = data.len() as u64;
        let left = cap.saturating_sub(cell.rich_bytes);
        if size > left {
            return Err(RichError::OverBudget { size, left, cap });
        }
        cell.rich_bytes += size;
        cell.rich.push(RichOutput { mime_type, data });
        Ok(())
    }

    /// Ends cell `id`: drains the pipes, sends the head, marker and tail.
    pub fn end(&self, ch: &Channel, id: u64) -> CellEnd {
        let mut state = lock(&self.state);
        self.drain(&mut state, ch, StreamId::Stdout);
        self.drain(&mut state, ch, StreamId::Stderr);
        let Some(mut cell) = state.cell.take().filter(|c| c.id == id) else {
            return CellEnd {
                dropped_output_bytes: 0,
                rich: Vec::new(),
            };
        };
        let dropped_output_bytes = cell.out.close();
        send_chunks(ch, cell.id, cell.out.take_pending());
        CellEnd {
            dropped_output_bytes,
            rich: cell.rich,
        }
    }

    /// Sends what is buffered, giving up if the capture stays locked; for
    /// exit paths.
    pub fn flush_before_exit(&self, ch: &Channel) {
        if let Some(mut state) = lock_for(&self.state, crate::channel::exit_lock_wait()) {
            self.drain(&mut state, ch, StreamId::Stdout);
            self.drain(&mut state, ch, StreamId::Stderr);
            flush(&mut state, ch);
        }
    }

    /// The flusher thread: sends buffered output `FLUSH_INTERVAL` after it
    /// first appears.
    pub fn run_flusher(&self, ch: &Channel) {
        loop {
            {
                let mut state = lock(&self.state);
                while state
                    .cell
                    .as_ref()
                    .is_none_or(|c| c.out.pending_bytes() == 0)
                {
                    state = self
                        .has_pending
                        .wait(state)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
            }
            thread::sleep(FLUSH_INTERVAL);
            flush(&mut lock(&self.state), ch);
        }
    }

    /// The drain thread: moves what is written to fds 1/2 into the capture.
    pub fn run_drain(&self, ch: &Channel) {
        let mut open = [true, true];
        while open.iter().any(|o| *o) {
            let mut polls: Vec<libc::pollfd> = self
                .pipes
                .iter()
                .zip(open)
                .map(|(fd, is_open)| libc::pollfd {
                    fd: if is_open { fd.as_raw_fd() } else { -1 },
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            // SAFETY: `polls` is a valid array of `polls.len()` pollfd structs.
            let rc = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, -1) };
            if rc <= 0 {
                continue;
            }
            let mut state = lock(&self.state);
            for (i, stream) in [StreamId::Stdout, StreamId::Stderr].into_iter().enumerate() {
                if polls[i].revents != 0 && !self.drain(&mut state, ch, stream) {
                    // Every write end is closed (user code closed the fd
                    // and no child holds it); stop polling it.
                    open[i] = false;
                }
            }
        }
    }

    /// Reads what the stream's pipe holds into the capture. Returns false at
    /// end of file.
    fn drain(&self, state: &mut Capture, ch: &Channel, stream: StreamId) -> bool {
        let fd = &self.pipes[stream as usize];
        for _ in 0..MAX_READS_PER_DRAIN {
            let mut scratch = std::mem::take(&mut state.scratch);
            let result = fds::read_some(fd, &mut scratch);
            if let Ok(n) = result {
                if n > 0 {
                    self.push(state, ch, stream, &scratch[..n]);
                }
            }
            state.scratch = scratch;
            match result {
                Ok(0) => return false,
                Ok(_) => {}
                Err(_) => return true,
            }
        }
        true
    }

    fn push(&self, state: &mut Capture, ch: &Channel, stream: StreamId, data: &[u8]) {
        let Some(cell) = state.cell.as_mut() else {
            return;
        };
        let was_empty = cell.out.pending_bytes() == 0;
        cell.out.push(stream, data);
        if cell.out.pending_bytes() >= FLUSH_BYTES {
            flush(state, ch);
        } else if was_empty && cell.out.pending_bytes() > 0 {
            self.has_pending.notify_one();
        }
    }
}

/// The wire value of a captured stream.
pub fn stream_proto(stream: StreamId) -> Stream {
    match stream {
        StreamId::Stdout => Stream::Stdout,
        StreamId::Stderr => Stream::Stderr,
    }
}

fn flush(state: &mut Capture, ch: &Channel) {
    if let Some(cell) = state.cell.as_mut() {
        let chunks = cell.out.take_pending();
        send_chunks(ch, cell.id, chunks);
    }
}

fn send_chunks(ch: &Channel, execution_id: u64, chunks: Vec<Chunk>) {
    let max = ch
        .send_max()
        .saturating_sub(FRAME_OVERHEAD.min(ch.send_max() / 2))
        .clamp(1, MAX_CHUNK_BYTES);
    for chunk in chunks {
        let stream = stream_proto(chunk.stream);
        for part in chunk.data.chunks(max) {
            let frame = guest_message::Kind::Output(OutputFrame {
                execution_id,
                stream: stream as i32,
                data: part.to_vec(),
            });
            if let Err(err) = ch.send(frame) {
                // The host is gone or refuses the frame; the reader sees the
                // end of the channel. Say so once rather than per chunk.
                if !SEND_FAILED.swap(true, Ordering::Relaxed) {
                    ch.diag(&format!("cannot send output to the host: {err}"));
                }
                return;
            }
        }
    }
}
