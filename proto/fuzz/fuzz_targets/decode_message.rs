//! Arbitrary payloads decoded as both message types; see
//! `codemode_proto::fuzzing::fuzz_decode_message`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    codemode_proto::fuzzing::fuzz_decode_message(data);
});
