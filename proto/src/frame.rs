//! Length-prefixed framing: a u32 big-endian byte count, then one encoded
//! message. Frames are bounded by a maximum size that is checked before any
//! buffer is reserved, so a hostile peer cannot make the reader allocate more
//! than that maximum.

use std::io::{self, Read, Write};

use bytes::{Buf, BytesMut};
use prost::Message;

use crate::v1::{GuestMessage, HostMessage};

/// Bytes in the length prefix.
pub const FRAME_HEADER_BYTES: usize = 4;
/// Default maximum payload size: large enough for a tool list with big
/// schemas or an image, small enough that a bogus length cannot exhaust memory.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;

/// Everything that can go wrong reading or writing a frame.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("frame length is zero; expected a length between 1 and {max} bytes")]
    ZeroLength { max: usize },
    #[error("frame of {len} bytes exceeds the maximum of {max} bytes")]
    Oversized { len: usize, max: usize },
    #[error("stream ended inside a frame: expected {expected} bytes, got {got}")]
    Truncated { expected: usize, got: usize },
    #[error("frame payload is not a valid {expected}: {source}")]
    Undecodable {
        expected: &'static str,
        #[source]
        source: prost::DecodeError,
    },
    #[error("{expected} frame carries no message (its `kind` is unset)")]
    EmptyMessage { expected: &'static str },
    #[error("frame i/o failed: {0}")]
    Io(#[from] io::Error),
}

/// A message that travels as the payload of one frame.
pub trait FrameMessage: Message + Default + Sized {
    /// Name used in errors ("HostMessage", "GuestMessage").
    const NAME: &'static str;
    /// Whether the message's `kind` oneof is set.
    fn has_kind(&self) -> bool;
}

impl FrameMessage for HostMessage {
    const NAME: &'static str = "HostMessage";
    fn has_kind(&self) -> bool {
        self.kind.is_some()
    }
}

impl FrameMessage for GuestMessage {
    const NAME: &'static str = "GuestMessage";
    fn has_kind(&self) -> bool {
        self.kind.is_some()
    }
}

/// Encodes `msg` as a complete frame (prefix + payload).
pub fn encode_frame<M: FrameMessage>(msg: &M, max: usize) -> Result<Vec<u8>, FrameError> {
    let len = msg.encoded_len();
    check_len(len, max)?;
    let mut out = Vec::with_capacity(FRAME_HEADER_BYTES + len);
    // `check_len` bounds `len` by `max`, which callers keep below u32::MAX.
    let prefix = u32::try_from(len).map_err(|_| FrameError::Oversized { len, max })?;
    out.extend_from_slice(&prefix.to_be_bytes());
    msg.encode(&mut out)
        .map_err(|e| FrameError::Io(io::Error::other(e)))?;
    Ok(out)
}

/// Decodes one payload (without its prefix) into a message with its kind set.
pub fn decode_payload<M: FrameMessage>(payload: &[u8]) -> Result<M, FrameError> {
    let msg = M::decode(payload).map_err(|source| FrameError::Undecodable {
        expected: M::NAME,
        source,
    })?;
    if !msg.has_kind() {
        return Err(FrameError::EmptyMessage { expected: M::NAME });
    }
    Ok(msg)
}

fn check_len(len: usize, max: usize) -> Result<(), FrameError> {
    if len == 0 {
        return Err(FrameError::ZeroLength { max });
    }
    if len > max {
        return Err(FrameError::Oversized { len, max });
    }
    Ok(())
}

/// Incremental decoder over a growing buffer: the shared core of the async
/// codec and of tests that split streams at arbitrary points.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    max: usize,
}

impl FrameDecoder {
    pub fn new(max: usize) -> Self {
        Self { max }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Takes one whole frame's payload off the front of `buf`, or returns
    /// `Ok(None)` when more bytes are needed. Reserves at most the frame's
    /// validated length.
    pub fn decode_payload_bytes(&self, buf: &mut BytesMut) -> Result<Option<BytesMut>, FrameError> {
        if buf.len() < FRAME_HEADER_BYTES {
            return Ok(None);
        }
        let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        check_len(len, self.max)?;
        let total = FRAME_HEADER_BYTES + len;
        if buf.len() < total {
            buf.reserve(total - buf.len());
            return Ok(None);
        }
        buf.advance(FRAME_HEADER_BYTES);
        Ok(Some(buf.split_to(len)))
    }

    /// Like [`Self::decode_payload_bytes`], then decodes the message.
    pub fn decode<M: FrameMessage>(&self, buf: &mut BytesMut) -> Result<Option<M>, FrameError> {
        match self.decode_payload_bytes(buf)? {
            Some(payload) => decode_payload(&payload).map(Some),
            None => Ok(None),
        }
    }

    /// Called at end of stream: leftover bytes mean a truncated frame.
    pub fn finish(&self, buf: &BytesMut) -> Result<(), FrameError> {
        if buf.is_empty() {
            return Ok(());
        }
        if buf.len() < FRAME_HEADER_BYTES {
            return Err(FrameError::Truncated {
                expected: FRAME_HEADER_BYTES,
                got: buf.len(),
            });
        }
        let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        check_len(len, self.max)?;
        Err(FrameError::Truncated {
            expected: len,
            got: buf.len() - FRAME_HEADER_BYTES,
        })
    }
}

/// Reads one frame from a blocking stream. `Ok(None)` is a clean end of
/// stream at a frame boundary.
pub fn read_frame<M: FrameMessage, R: Read>(
    reader: &mut R,
    max: usize,
) -> Result<Option<M>, FrameError> {
    let mut header = [0u8; FRAME_HEADER_BYTES];
    let got = read_full(reader, &mut header)?;
    if got == 0 {
        return Ok(None);
    }
    if got < FRAME_HEADER_BYTES {
        return Err(FrameError::Truncated {
            expected: FRAME_HEADER_BYTES,
            got,
        });
    }
    let len = u32::from_be_bytes(header) as usize;
    check_len(len, max)?;
    let mut payload = vec![0u8; len];
    let got = read_full(reader, &mut payload)?;
    if got < len {
        return Err(FrameError::Truncated { expected: len, got });
    }
    decode_payload(&payload).map(Some)
}

/// Writes one frame to a blocking stream and flushes it.
pub fn write_frame<M: FrameMessage, W: Write>(
    writer: &mut W,
    msg: &M,
    max: usize,
) -> Result<(), FrameError> {
    let bytes = encode_frame(msg, max)?;
    writer.write_all(&bytes)?;
    writer.flush()?;
    Ok(())
}

/// Fills `buf` unless the stream ends first; returns the bytes read.
fn read_full<R: Read>(reader: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}
