//! Fuzzing entry points, shared by the cargo-fuzz targets in `proto/fuzz/`
//! and by the stable smoke test in the normal test suite, so both exercise
//! exactly the same code on the same inputs.
//!
//! Each entry point accepts any byte string and panics only when an
//! invariant of this crate is broken; a panic is the finding a fuzzer
//! reports. None of this runs in production.

use std::fmt::Debug;
use std::io::{self, Read};

use bytes::BytesMut;

use crate::frame::{
    decode_payload, encode_frame, read_frame, FrameDecoder, FrameError, FrameMessage,
    FRAME_HEADER_BYTES,
};
use crate::v1::{GuestMessage, HostMessage};

/// Bytes at the front of a [`fuzz_frame_stream`] input that choose the
/// maximum frame size and the chunking instead of being part of the stream.
pub const STREAM_CONTROL_BYTES: usize = 3;

/// Largest maximum frame size [`fuzz_frame_stream`] picks: small, so that
/// fuzz-sized inputs contain whole frames as well as oversized ones.
pub const FUZZ_MAX_FRAME_LIMIT: usize = 4096;

/// Largest chunk the stream is split into.
pub const FUZZ_CHUNK_LIMIT: usize = 64;

/// Bound on the decoder buffer's capacity, as a multiple of what it ever has
/// to hold (one frame short of a byte, plus one unread chunk). `BytesMut`
/// grows by doubling and may keep consumed bytes in front of the live ones,
/// which costs a constant factor; what this bounds is that a length prefix
/// claiming more than the maximum (up to 4 GiB) reserves nothing.
pub const CAPACITY_FACTOR: usize = 4;

/// Feeds `data` (after [`STREAM_CONTROL_BYTES`] control bytes) as a byte
/// stream, split into chunks, through every frame reader of this crate: the
/// incremental [`FrameDecoder`], the blocking [`read_frame`], and with the
/// `codec` feature the tokio codec including `decode_eof`. Checks that they
/// agree frame by frame and error by error, that every decoded message
/// survives re-encoding, and that the decoder reserves buffer space only for
/// lengths it has validated against the maximum.
pub fn fuzz_frame_stream(data: &[u8]) {
    let Some((control, stream)) = data.split_first_chunk::<STREAM_CONTROL_BYTES>() else {
        return;
    };
    let max = 1 + usize::from(u16::from_le_bytes([control[0], control[1]])) % FUZZ_MAX_FRAME_LIMIT;
    let chunks = chunk_sizes(control[2], stream.len());
    check_stream::<HostMessage>(stream, &chunks, max);
    check_stream::<GuestMessage>(stream, &chunks, max);
}

/// Decodes `data` as the payload of a `HostMessage` frame and of a
/// `GuestMessage` frame. A payload either fails with one of the two payload
/// errors or decodes to a message whose encoding is a fixed point: it
/// decodes back to the same message and re-encodes to the same bytes.
pub fn fuzz_decode_message(data: &[u8]) {
    check_payload::<HostMessage>(data);
    check_payload::<GuestMessage>(data);
}

/// What a reader made of one frame, comparable across readers.
#[derive(Debug, PartialEq)]
enum Outcome<M> {
    Message(M),
    Failed(String),
}

fn failed<M>(err: &FrameError) -> Outcome<M> {
    Outcome::Failed(format!("{err:?}"))
}

/// Chunk sizes from one seed byte: seed 0 delivers the stream in one piece,
/// any other seed drives a small xorshift generator over `1..=limit`.
fn chunk_sizes(seed: u8, total: usize) -> Vec<usize> {
    if seed == 0 {
        return vec![total.max(1)];
    }
    let limit = 1 + usize::from(seed) % FUZZ_CHUNK_LIMIT;
    let mut state = u32::from(seed) | 0x9e37_7900;
    let mut sizes = Vec::new();
    let mut covered = 0;
    while covered < total {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let size = 1 + state as usize % limit;
        sizes.push(size);
        covered += size;
    }
    sizes
}

fn check_stream<M: FrameMessage + PartialEq + Debug>(stream: &[u8], chunks: &[usize], max: usize) {
    let largest_chunk = chunks.iter().copied().max().unwrap_or(0);
    let incremental = decode_incrementally::<M>(stream, chunks, max, largest_chunk);
    let blocking = read_blocking::<M>(stream, chunks, max);
    assert_eq!(
        incremental, blocking,
        "FrameDecoder and read_frame disagree"
    );
    #[cfg(feature = "codec")]
    {
        let codec = codec::decode_with_codec::<M>(stream, chunks, max);
        assert_eq!(incremental, codec, "FrameDecoder and FrameCodec disagree");
    }
    for outcome in &incremental {
        if let Outcome::Message(msg) = outcome {
            check_reencodes(msg);
        }
    }
}

fn decode_incrementally<M: FrameMessage>(
    stream: &[u8],
    chunks: &[usize],
    max: usize,
    largest_chunk: usize,
) -> Vec<Outcome<M>> {
    let decoder = FrameDecoder::new(max);
    let capacity_bound = CAPACITY_FACTOR * (FRAME_HEADER_BYTES + max + largest_chunk);
    let mut buf = BytesMut::new();
    let mut outcomes = Vec::new();
    let mut rest = stream;
    for &size in chunks {
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        rest = tail;
        buf.extend_from_slice(chunk);
        loop {
            let claimed = claimed_len(&buf);
            let before = buf.capacity();
            let result = decoder.decode::<M>(&mut buf);
            let after = buf.capacity();
            assert!(
                after <= capacity_bound,
                "buffer capacity {after} exceeds {capacity_bound} (max frame {max})"
            );
            match result {
                Ok(Some(msg)) => outcomes.push(Outcome::Message(msg)),
                Ok(None) => {
                    if after > before {
                        let len = claimed.unwrap_or(0);
                        assert!(
                            (1..=max).contains(&len),
                            "decoder reserved space for a claimed length of {len} (max {max})"
                        );
                    }
                    break;
                }
                Err(err) => {
                    assert!(
                        after <= before,
                        "decoder reserved space, then failed: {err}"
                    );
                    outcomes.push(failed(&err));
                    return outcomes;
                }
            }
        }
    }
    if let Err(err) = decoder.finish(&buf) {
        outcomes.push(failed(&err));
    }
    outcomes
}

fn claimed_len(buf: &[u8]) -> Option<usize> {
    let header = buf.first_chunk::<FRAME_HEADER_BYTES>()?;
    usize::try_from(u32::from_be_bytes(*header)).ok()
}

fn read_blocking<M: FrameMessage>(stream: &[u8], chunks: &[usize], max: usize) -> Vec<Outcome<M>> {
    let mut reader = ChunkedReader::new(stream, chunks);
    let mut outcomes = Vec::new();
    loop {
        match read_frame::<M, _>(&mut reader, max) {
            Ok(Some(msg)) => outcomes.push(Outcome::Message(msg)),
            Ok(None) => return outcomes,
            Err(err) => {
                outcomes.push(failed(&err));
                return outcomes;
            }
        }
    }
}

/// A reader that hands out at most one chunk per `read`, the way a pipe
/// delivers whatever the writer has flushed so far.
struct ChunkedReader<'a> {
    rest: &'a [u8],
    chunks: std::slice::Iter<'a, usize>,
    current: usize,
}

impl<'a> ChunkedReader<'a> {
    fn new(stream: &'a [u8], chunks: &'a [usize]) -> Self {
        Self {
            rest: stream,
            chunks: chunks.iter(),
            current: 0,
        }
    }
}

impl Read for ChunkedReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.current == 0 {
            self.current = self.chunks.next().copied().unwrap_or(self.rest.len());
        }
        let n = self.current.min(out.len()).min(self.rest.len());
        let (now, later) = self.rest.split_at(n);
        out[..n].copy_from_slice(now);
        self.rest = later;
        self.current -= n;
        Ok(n)
    }
}

/// Re-encodes without the stream's limit: a canonical encoding may be longer
/// than what arrived (an int32 enum sent as a 5-byte varint re-encodes as 10).
fn check_reencodes<M: FrameMessage + PartialEq + Debug>(msg: &M) {
    let frame = match encode_frame(msg, u32::MAX as usize) {
        Ok(frame) => frame,
        Err(err) => panic!("a decoded message does not re-encode: {err}"),
    };
    let payload = &frame[FRAME_HEADER_BYTES..];
    match decode_payload::<M>(payload) {
        Ok(again) => assert_eq!(&again, msg, "re-encoded message decodes differently"),
        Err(err) => panic!("re-encoded message does not decode: {err}"),
    }
}

fn check_payload<M: FrameMessage + PartialEq + Debug>(data: &[u8]) {
    let msg = match decode_payload::<M>(data) {
        Ok(msg) => msg,
        Err(FrameError::Undecodable { .. } | FrameError::EmptyMessage { .. }) => return,
        Err(other) => panic!("payload decoding failed with a framing error: {other:?}"),
    };
    let encoded = msg.encode_to_vec();
    assert_eq!(
        encoded.len(),
        msg.encoded_len(),
        "encoded_len disagrees with encode"
    );
    match decode_payload::<M>(&encoded) {
        Ok(again) => {
            assert_eq!(again, msg, "message changed across encode/decode");
            assert_eq!(
                again.encode_to_vec(),
                encoded,
                "encoding is not a fixed point"
            );
        }
        Err(err) => panic!("canonical encoding does not decode: {err}"),
    }
}

#[cfg(feature = "codec")]
mod codec {
    //! The tokio codec's view of the same stream.

    use bytes::BytesMut;
    use tokio_util::codec::Decoder;

    use super::{failed, Outcome};
    use crate::codec::FrameCodec;
    use crate::frame::FrameMessage;

    pub(super) fn decode_with_codec<M: FrameMessage>(
        stream: &[u8],
        chunks: &[usize],
        max: usize,
    ) -> Vec<Outcome<M>> {
        let mut codec = FrameCodec::<M, M>::new(max);
        let mut buf = BytesMut::new();
        let mut outcomes = Vec::new();
        let mut rest = stream;
        for &size in chunks {
            let (chunk, tail) = rest.split_at(size.min(rest.len()));
            rest = tail;
            buf.extend_from_slice(chunk);
            loop {
                match codec.decode(&mut buf) {
                    Ok(Some(msg)) => outcomes.push(Outcome::Message(msg)),
                    Ok(None) => break,
                    Err(err) => {
                        outcomes.push(failed(&err));
                        return outcomes;
                    }
                }
            }
        }
        // FramedRead calls decode_eof until it yields None.
        loop {
            match codec.decode_eof(&mut buf) {
                Ok(Some(msg)) => outcomes.push(Outcome::Message(msg)),
                Ok(None) => return outcomes,
                Err(err) => {
                    outcomes.push(failed(&err));
                    return outcomes;
                }
            }
        }
    }
}
