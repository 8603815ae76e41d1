//! A cell's life on the Rust side: starting it (output capture, timeout) and
//! finishing it (flush, drop marker, rich outputs, `Finished`), in the order
//! the host relies on: every Output frame of a cell precedes its Finished,
//! and the cell stops counting as running before Finished is sent.

use std::time::Instant;

use codemode_proto::frame::FrameError;
use codemode_proto::v1::{guest_message::Kind, Display, Finished, PyError, Status};

use crate::channel::lock;
use crate::output::StreamId;
use crate::session::{Interrupt, Session};

/// Error texts beyond this are cut in the middle: a message holding a huge
/// repr or a deep traceback must not make Finished exceed the frame limit.
const MAX_ERROR_TEXT: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum CellError {
    #[error("cell {id} is not the running cell (running: {running:?})")]
    NotRunning { id: u64, running: Option<u64> },
    #[error("cannot send Finished for cell {id}: {source}")]
    Send {
        id: u64,
        #[source]
        source: FrameError,
    },
}

/// A cell's shown value beyond this is cut in the middle; the driver cuts
/// it first, this keeps a frame within bounds whatever the Python side did.
const MAX_DISPLAY_TEXT: usize = 64 * 1024;
/// The JSON of a cell's value beyond this is not sent (JSON cut in the
/// middle is no JSON); the driver's own bound is smaller.
const MAX_RESULT_JSON: usize = 256 * 1024;

/// The error part of Finished, as the driver reports it.
pub struct CellFailure {
    pub type_name: String,
    pub message: String,
    pub traceback: String,
}

/// Starts capturing and timing cell `id`. Returns an interrupt that arrived
/// before the cell started, if any.
pub fn start(session: &Session, id: u64) -> Result<Option<Interrupt>, CellError> {
    let (timeout_ms, early) = {
        let mut control = lock(&session.control);
        let running = control.cell.as_ref().map(|c| c.id);
        let Some(cell) = control.cell.as_mut().filter(|c| c.id == id) else {
            return Err(CellError::NotRunning { id, running });
        };
        cell.started = Some(Instant::now());
        (cell.timeout_ms, cell.interrupt)
    };
    session.output.begin(&session.channel, id);
    session.timer.arm(id, timeout_ms);
    Ok(early)
}

/// The interrupt requested for cell `id`, if it is running and was asked to stop.
pub fn interrupt_reason(session: &Session, id: u64) -> Option<Interrupt> {
    lock(&session.control)
        .cell
        .as_ref()
        .filter(|c| c.id == id)
        .and_then(|c| c.interrupt)
}

/// Sends everything cell `id` produced, then its Finished.
pub fn finish(
    session: &Session,
    id: u64,
    status: Status,
    failure: Option<CellFailure>,
    display: Option<Display>,
) -> Result<(), CellError> {
    session.timer.disarm();
    // First, so what the ended processes wrote is this cell's output.
    let leftovers = crate::procs::end_of_cell();
    // SAFETY: fflush(NULL) flushes every C stdio stream; C extensions' printf
    // output belongs to this cell and must reach the pipe before it is drained.
    unsafe {
        libc::fflush(std::ptr::null_mut());
    }
    let end = session.output.end(&session.channel, id);
    let duration_us = {
        let mut control = lock(&session.control);
        let running = control.cell.as_ref().map(|c| c.id);
        if running != Some(id) {
            return Err(CellError::NotRunning { id, running });
        }
        let started = control.cell.take().and_then(|c| c.started);
        started.map_or(0, |s| {
            u64::try_from(s.elapsed().as_micros()).unwrap_or(u64::MAX)
        })
    };
    let error = failure.map(|f| PyError {
        r#type: f.type_name,
        message: clip_middle(f.message),
        traceback: clip_middle(f.traceback),
    });
    let finished = Finished {
        id,
        status: status as i32,
        error,
        duration_us,
        rich: end.rich,
        dropped_output_bytes: end.dropped_output_bytes,
        running_processes: leftovers.running,
        ended_processes: leftovers.ended,
        display: display.map(bound_display),
    };
    let frame = encode_finished(session, finished);
    let bytes = frame.map_err(|source| CellError::Send { id, source })?;
    session
        .channel
        .send_encoded(&bytes)
        .map_err(|source| CellError::Send { id, source })
}

fn bound_display(display: Display) -> Display {
    let result_json = if display.result_json.len() <= MAX_RESULT_JSON {
        display.result_json
    } else {
        String::new()
    };
    Display {
        text: clip_middle_to(display.text, MAX_DISPLAY_TEXT),
        result_json,
    }
}

/// Encodes Finished within the frame limit, shedding what does not fit:
/// first the rich outputs (with a note on stderr), then the shown value,
/// then the traceback, then the message. The host must always get a
/// Finished.
fn encode_finished(session: &Session, mut finished: Finished) -> Result<Vec<u8>, FrameError> {
    loop {
        let err = match session.channel.encode(Kind::Finished(finished.clone())) {
            Err(err @ FrameError::Oversized { .. }) => err,
            other => return other,
        };
        if !finished.rich.is_empty() {
            if let FrameError::Oversized { len, max } = err {
                let note = format!(
                    "[codemode: {} rich output(s) dropped: Finished would be {len} bytes, the frame limit is {max}]\n",
                    finished.rich.len()
                );
                send_note(session, finished.id, &note);
            }
            finished.rich.clear();
            continue;
        }
        if finished.display.take().is_some() {
            continue;
        }
        match finished.error.as_mut() {
            Some(error) if !error.traceback.is_empty() => error.traceback.clear(),
            Some(error) if !error.message.is_empty() => error.message.clear(),
            _ => return Err(err),
        }
    }
}

fn send_note(session: &Session, id: u64, note: &str) {
    let output = codemode_proto::v1::Output {
        execution_id: id,
        stream: crate::output::stream_proto(StreamId::Stderr) as i32,
        data: note.as_bytes().to_vec(),
    };
    let _ = session.channel.send(Kind::Output(output));
}

fn clip_middle(text: String) -> String {
    clip_middle_to(text, MAX_ERROR_TEXT)
}

/// `text` within `max` bytes (plus a marker): a quarter of it from the
/// head, the rest from the tail, where the exception or the last rows are.
fn clip_middle_to(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let head_end = floor_boundary(&text, max / 4);
    let tail_start = ceil_boundary(&text, text.len() - max * 3 / 4);
    format!(
        "{}\n[... {} bytes cut ...]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_error_text_keeps_both_ends() {
        let text = format!("START{}END", "é".repeat(100_000));
        let clipped = clip_middle(text);
        assert!(clipped.len() <= MAX_ERROR_TEXT + 100);
        assert!(clipped.starts_with("START") && clipped.ends_with("END"));
        assert!(clipped.contains("bytes cut"));
    }

    #[test]
    fn a_shown_value_is_bounded_and_oversized_json_is_dropped() {
        let display = bound_display(Display {
            text: "x".repeat(MAX_DISPLAY_TEXT * 2),
            result_json: format!("\"{}\"", "y".repeat(MAX_RESULT_JSON)),
        });
        assert!(display.text.len() <= MAX_DISPLAY_TEXT + 100);
        assert!(display.result_json.is_empty());
        let small = bound_display(Display {
            text: "42".into(),
            result_json: "42".into(),
        });
        assert_eq!(
            (small.text.as_str(), small.result_json.as_str()),
            ("42", "42")
        );
    }
}
