//! Stable-toolchain smoke test of the fuzz entry points: a few thousand
//! random inputs and mutations of the golden frames, from a fixed-seed
//! generator so a failure reproduces. The cargo-fuzz targets in
//! `proto/fuzz/` run the same functions for much longer.

use codemode_proto::frame::{decode_payload, FRAME_HEADER_BYTES};
use codemode_proto::fuzzing::{fuzz_decode_message, fuzz_frame_stream, STREAM_CONTROL_BYTES};
use codemode_proto::v1::{GuestMessage, HostMessage};

use crate::common::fixtures;

const RANDOM_INPUTS: usize = 2_000;
const MUTATED_INPUTS: usize = 4_000;

/// splitmix64: a few lines, good enough to spread inputs, and seedable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// One to four byte-level edits of the kinds fuzzers make.
fn mutate(rng: &mut Rng, input: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(input.len());
        match rng.below(7) {
            0 if !input.is_empty() => input[at] ^= 1 << rng.below(8),
            1 if !input.is_empty() => input[at] = rng.next() as u8,
            2 => input.insert(at.min(input.len()), rng.next() as u8),
            3 if !input.is_empty() => {
                input.remove(at);
            }
            4 => input.truncate(at),
            5 => {
                let len = rng.below(8);
                let extra = rng.bytes(len);
                input.splice(at..at, extra);
            }
            // Boundary values where lengths and varints live.
            _ if !input.is_empty() => {
                input[at] = [0x00, 0x01, 0x7f, 0x80, 0xff][rng.below(5)];
            }
            _ => input.push(rng.next() as u8),
        }
    }
}

fn decodes(payload: &[u8]) -> bool {
    decode_payload::<HostMessage>(payload).is_ok()
        || decode_payload::<GuestMessage>(payload).is_ok()
}

#[test]
fn random_inputs_pass_both_entry_points() {
    let mut rng = Rng(0x00c0_de00);
    for _ in 0..RANDOM_INPUTS {
        let len = rng.below(512);
        let input = rng.bytes(len);
        fuzz_frame_stream(&input);
        fuzz_decode_message(&input);
    }
}

#[test]
fn mutated_golden_frames_pass_both_entry_points() {
    let frames: Vec<Vec<u8>> = fixtures::all()
        .iter()
        .map(fixtures::Fixture::frame)
        .collect();
    let mut rng = Rng(0x5eed);
    let mut payloads_still_decoding = 0;
    for _ in 0..MUTATED_INPUTS {
        let mut stream = Vec::new();
        for _ in 0..1 + rng.below(3) {
            stream.extend_from_slice(&frames[rng.below(frames.len())]);
        }
        mutate(&mut rng, &mut stream);
        // Control bytes: a maximum around the frames' sizes, any chunking.
        let max = (16 + rng.below(400)) as u16 - 1;
        let mut input = max.to_le_bytes().to_vec();
        input.push(rng.next() as u8);
        assert_eq!(input.len(), STREAM_CONTROL_BYTES);
        input.extend(stream);
        fuzz_frame_stream(&input);

        let mut payload = frames[rng.below(frames.len())][FRAME_HEADER_BYTES..].to_vec();
        mutate(&mut rng, &mut payload);
        if decodes(&payload) {
            payloads_still_decoding += 1;
        }
        fuzz_decode_message(&payload);
    }
    // Mutations that always broke the payload would leave the decoded-message
    // checks unexercised.
    assert!(
        payloads_still_decoding > MUTATED_INPUTS / 10,
        "only {payloads_still_decoding} of {MUTATED_INPUTS} mutated payloads decoded"
    );
}
