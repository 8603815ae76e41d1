//! Byte streams split at arbitrary points: valid streams decode to exactly
//! the frames that were sent, through every reader; arbitrary and hostile
//! streams never panic and never make the decoder reserve space for a length
//! it has not validated (the checks live in `fuzzing::fuzz_frame_stream`).

use std::io::{self, Read};

use bytes::BytesMut;
use codemode_proto::codec::FrameCodec;
use codemode_proto::frame::{encode_frame, read_frame, FrameDecoder};
use codemode_proto::fuzzing::{fuzz_frame_stream, FUZZ_MAX_FRAME_LIMIT};
use codemode_proto::v1::GuestMessage;
use proptest::collection::vec;
use proptest::prelude::*;
use tokio_util::codec::Decoder;

use crate::common::strategies::{guest_message, hostile_stream};

const MAX: usize = 1 << 20;

/// Cuts `stream` before each of `cuts` (taken modulo its length).
fn split(stream: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    points.push(0);
    points.push(stream.len());
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|w| stream[w[0]..w[1]].to_vec())
        .collect()
}

/// A reader that returns one piece per call, like a pipe.
struct Pieces(std::vec::IntoIter<Vec<u8>>, Vec<u8>);

impl Read for Pieces {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.1.is_empty() {
            match self.0.next() {
                Some(piece) => self.1 = piece,
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.1.len());
        out[..n].copy_from_slice(&self.1[..n]);
        self.1.drain(..n);
        Ok(n)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn split_valid_streams_decode_to_the_sent_frames(
        messages in vec(guest_message(), 0..6),
        cuts in vec(any::<usize>(), 0..24),
    ) {
        let stream: Vec<u8> = messages
            .iter()
            .flat_map(|m| encode_frame(m, MAX).expect("encodes"))
            .collect();
        let pieces = split(&stream, &cuts);

        let decoder = FrameDecoder::new(MAX);
        let mut buf = BytesMut::new();
        let mut incremental = Vec::new();
        for piece in &pieces {
            buf.extend_from_slice(piece);
            while let Some(msg) = decoder.decode::<GuestMessage>(&mut buf).expect("valid frame") {
                incremental.push(msg);
            }
        }
        decoder.finish(&buf).expect("stream ends at a frame boundary");
        prop_assert_eq!(&incremental, &messages);

        let mut reader = Pieces(pieces.clone().into_iter(), Vec::new());
        let mut blocking = Vec::new();
        while let Some(msg) = read_frame::<GuestMessage, _>(&mut reader, MAX).expect("valid frame") {
            blocking.push(msg);
        }
        prop_assert_eq!(&blocking, &messages);

        let mut codec = FrameCodec::<GuestMessage, GuestMessage>::new(MAX);
        let mut buf = BytesMut::new();
        let mut framed = Vec::new();
        for piece in &pieces {
            buf.extend_from_slice(piece);
            while let Some(msg) = codec.decode(&mut buf).expect("valid frame") {
                framed.push(msg);
            }
        }
        prop_assert_eq!(codec.decode_eof(&mut buf).expect("clean end"), None);
        prop_assert_eq!(&framed, &messages);
    }

    #[test]
    fn arbitrary_streams_never_panic_or_overreserve(data in vec(any::<u8>(), 0..2048)) {
        fuzz_frame_stream(&data);
    }

    #[test]
    fn hostile_streams_never_panic_or_overreserve(
        max in 1..FUZZ_MAX_FRAME_LIMIT,
        chunk_seed in any::<u8>(),
        stream in hostile_stream(1024),
    ) {
        // The control bytes `fuzz_frame_stream` reads: max - 1, then the seed.
        let max_minus_one = u16::try_from(max - 1).expect("limit fits in u16");
        let mut data = max_minus_one.to_le_bytes().to_vec();
        data.push(chunk_seed);
        data.extend(stream);
        fuzz_frame_stream(&data);
    }
}
