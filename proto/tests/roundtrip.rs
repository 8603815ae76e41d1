//! Arbitrary messages survive encode/decode, and every writer of this crate
//! (`encode_frame`, `write_frame`, the tokio codec) produces the same bytes.

use std::fmt::Debug;

use bytes::BytesMut;
use codemode_proto::codec::FrameCodec;
use codemode_proto::frame::{
    decode_payload, encode_frame, read_frame, write_frame, FrameMessage, FRAME_HEADER_BYTES,
};
use codemode_proto::v1::{GuestMessage, HostMessage};
use proptest::prelude::*;
use tokio_util::codec::{Decoder, Encoder};

use crate::common::strategies::{guest_message, host_message};

/// Large enough for any generated message; the limit itself is tested elsewhere.
const MAX: usize = 1 << 20;

fn round_trip<M: FrameMessage + PartialEq + Debug + Clone>(msg: M) {
    let frame = encode_frame(&msg, MAX).expect("encodes");
    let (prefix, payload) = frame.split_at(FRAME_HEADER_BYTES);
    let prefix: [u8; 4] = prefix.try_into().expect("4-byte prefix");
    assert_eq!(u32::from_be_bytes(prefix) as usize, payload.len());
    assert_eq!(payload.len(), msg.encoded_len());

    assert_eq!(decode_payload::<M>(payload).expect("decodes"), msg);

    let mut reader = frame.as_slice();
    assert_eq!(
        read_frame::<M, _>(&mut reader, MAX).expect("reads"),
        Some(msg.clone())
    );
    assert_eq!(
        read_frame::<M, _>(&mut reader, MAX).expect("clean end"),
        None
    );

    let mut written = Vec::new();
    write_frame(&mut written, &msg, MAX).expect("writes");
    assert_eq!(written, frame, "write_frame differs from encode_frame");

    let mut codec = FrameCodec::<M, M>::new(MAX);
    let mut buf = BytesMut::new();
    codec.encode(msg.clone(), &mut buf).expect("codec encodes");
    assert_eq!(
        &buf[..],
        &frame[..],
        "codec encoding differs from encode_frame"
    );
    assert_eq!(
        codec.decode_eof(&mut buf).expect("codec decodes"),
        Some(msg)
    );
    assert!(buf.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn host_messages_round_trip(msg in host_message()) {
        round_trip::<HostMessage>(msg);
    }

    #[test]
    fn guest_messages_round_trip(msg in guest_message()) {
        round_trip::<GuestMessage>(msg);
    }
}
