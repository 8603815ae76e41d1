//! Arbitrary byte streams, split into arbitrary chunks, through every frame
//! reader; see `codemode_proto::fuzzing::fuzz_frame_stream`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    codemode_proto::fuzzing::fuzz_frame_stream(data);
});
