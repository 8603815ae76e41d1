//! A zero length, a truncated frame, an oversized frame, an undecodable
//! payload and a payload without a message are distinct typed errors, the
//! same through every reader: the incremental decoder, the blocking
//! `read_frame`, and the tokio codec's `decode` and `decode_eof`.

use bytes::BytesMut;
use codemode_proto::codec::FrameCodec;
use codemode_proto::frame::{encode_frame, read_frame, FrameDecoder, FrameError};
use codemode_proto::v1::{host_message, Cancel, HostMessage};
use prost::Message;
use tokio_util::codec::{Decoder, Encoder};

const MAX: usize = 16;

fn frame(prefix: u32, payload: &[u8]) -> Vec<u8> {
    let mut bytes = prefix.to_be_bytes().to_vec();
    bytes.extend_from_slice(payload);
    bytes
}

/// What each reader makes of `stream` once it has ended.
struct Results {
    decoder: Result<Option<HostMessage>, FrameError>,
    blocking: Result<Option<HostMessage>, FrameError>,
    codec_decode: Result<Option<HostMessage>, FrameError>,
    codec_eof: Result<Option<HostMessage>, FrameError>,
}

fn read_all_ways(stream: &[u8]) -> Results {
    let decoder = FrameDecoder::new(MAX);
    let mut buf = BytesMut::from(stream);
    let decoder = match decoder.decode::<HostMessage>(&mut buf) {
        Ok(None) => decoder.finish(&buf).map(|()| None),
        other => other,
    };

    let mut reader = stream;
    let blocking = read_frame::<HostMessage, _>(&mut reader, MAX);

    let mut codec = FrameCodec::<HostMessage, HostMessage>::new(MAX);
    let mut buf = BytesMut::from(stream);
    let codec_decode = codec.decode(&mut buf);
    let mut codec = FrameCodec::<HostMessage, HostMessage>::new(MAX);
    let mut buf = BytesMut::from(stream);
    let codec_eof = codec.decode_eof(&mut buf);
    Results {
        decoder,
        blocking,
        codec_decode,
        codec_eof,
    }
}

#[test]
fn zero_length_is_its_own_error_everywhere() {
    let r = read_all_ways(&frame(0, &[]));
    for result in [r.decoder, r.blocking, r.codec_decode, r.codec_eof] {
        assert!(
            matches!(result, Err(FrameError::ZeroLength { max: MAX })),
            "{result:?}"
        );
    }
}

#[test]
fn truncated_payload_is_reported_at_end_of_stream() {
    let r = read_all_ways(&frame(10, &[1, 2, 3]));
    // Mid-stream, a partial frame just means "not yet".
    assert!(matches!(r.codec_decode, Ok(None)), "{:?}", r.codec_decode);
    for result in [r.decoder, r.blocking, r.codec_eof] {
        assert!(
            matches!(
                result,
                Err(FrameError::Truncated {
                    expected: 10,
                    got: 3
                })
            ),
            "{result:?}"
        );
    }
}

#[test]
fn truncated_prefix_is_reported_at_end_of_stream() {
    let r = read_all_ways(&[0, 0]);
    assert!(matches!(r.codec_decode, Ok(None)), "{:?}", r.codec_decode);
    for result in [r.decoder, r.blocking, r.codec_eof] {
        assert!(
            matches!(
                result,
                Err(FrameError::Truncated {
                    expected: 4,
                    got: 2
                })
            ),
            "{result:?}"
        );
    }
}

#[test]
fn oversized_is_refused_from_the_prefix_alone() {
    for claimed in [MAX as u32 + 1, u32::MAX] {
        let r = read_all_ways(&frame(claimed, &[]));
        for result in [r.decoder, r.blocking, r.codec_decode, r.codec_eof] {
            assert!(
                matches!(result, Err(FrameError::Oversized { len, max: MAX }) if len == claimed as usize),
                "{result:?}"
            );
        }
    }
}

#[test]
fn a_frame_of_exactly_the_maximum_is_accepted() {
    let cancel = HostMessage {
        kind: Some(host_message::Kind::Cancel(Cancel { id: 1 })),
    };
    let bytes = encode_frame(&cancel, MAX).expect("small message");
    let exact = bytes.len() - 4;
    let mut reader = bytes.as_slice();
    assert_eq!(
        read_frame::<HostMessage, _>(&mut reader, exact).expect("fits"),
        Some(cancel.clone())
    );
    let mut reader = bytes.as_slice();
    let err = read_frame::<HostMessage, _>(&mut reader, exact - 1).expect_err("one byte over");
    assert!(matches!(err, FrameError::Oversized { len, max } if len == exact && max == exact - 1));
}

#[test]
fn undecodable_payload_is_its_own_error_everywhere() {
    // Field 1 with wire type 7, which does not exist.
    let r = read_all_ways(&frame(1, &[0x0f]));
    for result in [r.decoder, r.blocking, r.codec_decode, r.codec_eof] {
        match result {
            Err(err @ FrameError::Undecodable { expected, .. }) => {
                assert_eq!(expected, "HostMessage");
                assert!(err.to_string().contains("not a valid HostMessage"), "{err}");
            }
            other => panic!("expected Undecodable, got {other:?}"),
        }
    }
}

#[test]
fn payload_without_a_message_is_its_own_error_everywhere() {
    // Only an unknown field (15 = 1): valid protobuf, but `kind` stays unset.
    let r = read_all_ways(&frame(2, &[0x78, 0x01]));
    for result in [r.decoder, r.blocking, r.codec_decode, r.codec_eof] {
        assert!(
            matches!(
                result,
                Err(FrameError::EmptyMessage {
                    expected: "HostMessage"
                })
            ),
            "{result:?}"
        );
    }
}

#[test]
fn the_error_kinds_are_distinct_variants() {
    let cases = [
        frame(0, &[]),
        frame(10, &[1, 2, 3]),
        frame(MAX as u32 + 1, &[]),
        frame(1, &[0x0f]),
        frame(2, &[0x78, 0x01]),
    ];
    let kinds: Vec<std::mem::Discriminant<FrameError>> = cases
        .iter()
        .map(|stream| {
            let err = read_all_ways(stream)
                .blocking
                .expect_err("every case fails");
            std::mem::discriminant(&err)
        })
        .collect();
    for (i, a) in kinds.iter().enumerate() {
        for b in &kinds[i + 1..] {
            assert_ne!(a, b, "two failure cases share an error variant");
        }
    }
}

#[test]
fn writers_refuse_what_readers_would_refuse() {
    let empty = HostMessage { kind: None };
    assert!(matches!(
        encode_frame(&empty, MAX),
        Err(FrameError::ZeroLength { .. })
    ));

    let big = HostMessage {
        kind: Some(host_message::Kind::Cancel(Cancel { id: u64::MAX })),
    };
    let len = big.encoded_len();
    assert!(matches!(
        encode_frame(&big, len - 1),
        Err(FrameError::Oversized { len: l, max }) if l == len && max == len - 1
    ));

    let mut codec = FrameCodec::<HostMessage, HostMessage>::new(len - 1);
    let mut dst = BytesMut::new();
    assert!(matches!(
        codec.encode(big, &mut dst),
        Err(FrameError::Oversized { .. })
    ));
    assert!(dst.is_empty(), "a refused frame must not be half-written");
}

#[test]
fn io_errors_from_the_stream_are_not_mistaken_for_frame_errors() {
    struct Broken;
    impl std::io::Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset))
        }
    }
    let err = read_frame::<HostMessage, _>(&mut Broken, MAX).expect_err("reader fails");
    assert!(
        matches!(err, FrameError::Io(ref e) if e.kind() == std::io::ErrorKind::ConnectionReset)
    );
}
