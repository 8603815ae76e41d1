//! Memory bounds, measured with a counting global allocator (which is why
//! this is a test binary of its own): the frame decoder never allocates in
//! proportion to what a length prefix claims, only to the maximum frame
//! size; and decoding one frame into a message allocates at most a known
//! multiple of the frame's size.

#![allow(
    clippy::expect_used,
    reason = "test helpers: a failed expectation is a test failure"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bytes::BytesMut;
use codemode_proto::frame::{decode_payload, encode_frame, FrameDecoder};
use codemode_proto::fuzzing::CAPACITY_FACTOR;
use codemode_proto::v1::{
    guest_message, host_message, Finished, GuestMessage, HostMessage, Init, RichOutput, ServerInfo,
};
use codemode_proto::FRAME_HEADER_BYTES;
use proptest::collection::vec;
use proptest::prelude::*;

#[path = "common/strategies.rs"]
#[allow(dead_code, reason = "shared with tests/all.rs, which uses the rest")]
mod strategies;

thread_local! {
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

/// Counts, per thread and only while tracking, the largest single request
/// and the peak of bytes live since tracking began.
struct Counting;

fn grew(size: usize) {
    let _ = TRACKING.try_with(|on| {
        if on.get() {
            LARGEST.with(|l| l.set(l.get().max(size)));
            LIVE.with(|live| {
                let now = live.get() + size;
                live.set(now);
                PEAK.with(|p| p.set(p.get().max(now)));
            });
        }
    });
}

fn shrank(size: usize) {
    let _ = TRACKING.try_with(|on| {
        if on.get() {
            LIVE.with(|live| live.set(live.get().saturating_sub(size)));
        }
    });
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// bookkeeping touches only const-initialised thread-locals, which never
// allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrank(layout.size());
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        grew(new_size);
        shrank(layout.size());
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What `f` allocated: (largest single request, peak live bytes).
fn measure<T>(f: impl FnOnce() -> T) -> (T, usize, usize) {
    LARGEST.with(|l| l.set(0));
    LIVE.with(|l| l.set(0));
    PEAK.with(|p| p.set(0));
    TRACKING.with(|t| t.set(true));
    let out = f();
    TRACKING.with(|t| t.set(false));
    (out, LARGEST.with(Cell::get), PEAK.with(Cell::get))
}

const MAX: usize = 1024;
const CHUNK_LIMIT: usize = 64;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Streams whose prefixes claim anything up to 4 GiB, fed in small
    /// chunks: nothing the decoder allocates outgrows a constant multiple of
    /// one maximum frame plus one chunk.
    #[test]
    fn framing_allocates_by_the_maximum_not_by_the_claim(
        stream in strategies::hostile_stream(MAX),
        chunks in vec(1..=CHUNK_LIMIT, 1..64),
    ) {
        let decoder = FrameDecoder::new(MAX);
        let mut buf = BytesMut::new();
        let mut rest = stream.as_slice();
        let mut largest = 0;
        'feed: for size in chunks.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (chunk, tail) = rest.split_at((*size).min(rest.len()));
            rest = tail;
            buf.extend_from_slice(chunk);
            loop {
                let (result, big, _) = measure(|| decoder.decode_payload_bytes(&mut buf));
                largest = largest.max(big);
                match result {
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(_) => break 'feed,
                }
            }
        }
        let bound = CAPACITY_FACTOR * (FRAME_HEADER_BYTES + MAX + CHUNK_LIMIT);
        prop_assert!(largest <= bound, "decoder allocated {} bytes, bound {}", largest, bound);
    }
}

#[test]
fn a_prefix_over_the_maximum_allocates_nothing() {
    let decoder = FrameDecoder::new(MAX);
    for claimed in [MAX as u32 + 1, 1 << 30, u32::MAX] {
        let mut buf = BytesMut::from(&claimed.to_be_bytes()[..]);
        let (result, largest, _) = measure(|| decoder.decode_payload_bytes(&mut buf));
        assert!(result.is_err(), "claimed {claimed} was accepted");
        assert_eq!(largest, 0, "refusing a claim of {claimed} allocated");
    }
}

#[test]
fn a_prefix_within_the_maximum_reserves_that_frame_once() {
    let decoder = FrameDecoder::new(MAX);
    let mut buf = BytesMut::from(&(MAX as u32).to_be_bytes()[..]);
    let (result, largest, peak) = measure(|| decoder.decode_payload_bytes(&mut buf));
    assert!(matches!(result, Ok(None)), "{result:?}");
    assert!(
        buf.capacity() >= FRAME_HEADER_BYTES + MAX,
        "the whole frame fits without regrowth"
    );
    assert!(
        largest <= 2 * (FRAME_HEADER_BYTES + MAX),
        "reserved {largest}"
    );
    assert!(peak <= 2 * (FRAME_HEADER_BYTES + MAX), "peak {peak}");
}

/// Bytes in memory per byte on the wire when decoding a payload made of
/// the cheapest repeated element: each costs two bytes on the wire (tag and
/// zero length) and a whole struct in memory. Measured: see the asserts.
fn amplification<M: codemode_proto::frame::FrameMessage>(payload: &[u8]) -> usize {
    let (result, _, peak) = measure(|| decode_payload::<M>(payload));
    assert!(result.is_ok(), "worst-case payload decodes");
    peak / payload.len()
}

/// Bytes of the worst-case frames; large enough that fixed costs vanish.
const WORST_CASE_BYTES: usize = 1 << 20;

/// Upper bound on decoded bytes per wire byte, from struct sizes: a
/// two-byte `RichOutput` is 48 bytes in memory, a two-byte `ServerInfo`
/// 120, and `Vec` growth may hold the old and the new buffer at once (up to
/// three times the final length). The host must budget memory for decoding
/// a guest frame as this multiple of the maximum frame size.
const GUEST_AMPLIFICATION_LIMIT: usize = 3 * 48 / 2;
const HOST_AMPLIFICATION_LIMIT: usize = 3 * 120 / 2;

#[test]
fn decoding_amplification_is_bounded_and_known() {
    let empty = WORST_CASE_BYTES / 2;
    let finished = GuestMessage {
        kind: Some(guest_message::Kind::Finished(Finished {
            rich: vec![RichOutput::default(); empty],
            ..Finished::default()
        })),
    };
    let frame = encode_frame(&finished, usize::MAX).expect("encodes");
    let guest = amplification::<GuestMessage>(&frame[FRAME_HEADER_BYTES..]);

    let init = HostMessage {
        kind: Some(host_message::Kind::Init(Init {
            servers: vec![ServerInfo::default(); empty],
            ..Init::default()
        })),
    };
    let frame = encode_frame(&init, usize::MAX).expect("encodes");
    let host = amplification::<HostMessage>(&frame[FRAME_HEADER_BYTES..]);

    eprintln!("decoding amplification: GuestMessage {guest}x, HostMessage {host}x");
    assert!(
        guest <= GUEST_AMPLIFICATION_LIMIT,
        "GuestMessage amplification {guest}x"
    );
    assert!(
        host <= HOST_AMPLIFICATION_LIMIT,
        "HostMessage amplification {host}x"
    );
    assert!(
        guest >= 8,
        "the worst case is no longer worst ({guest}x): revisit this test"
    );
}
