//! tokio-util codec for the host side: decodes `GuestMessage` frames and
//! encodes `HostMessage` frames (or the reverse, for tests that play guest).

use std::marker::PhantomData;

use bytes::{BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::frame::{encode_frame, FrameDecoder, FrameError, FrameMessage};

/// Decodes frames of `In`, encodes frames of `Out`.
#[derive(Debug)]
pub struct FrameCodec<In, Out> {
    decoder: FrameDecoder,
    _types: PhantomData<fn(Out) -> In>,
}

impl<In, Out> FrameCodec<In, Out> {
    pub fn new(max_frame_bytes: usize) -> Self {
        Self {
            decoder: FrameDecoder::new(max_frame_bytes),
            _types: PhantomData,
        }
    }
}

impl<In: FrameMessage, Out> Decoder for FrameCodec<In, Out> {
    type Item = In;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<In>, FrameError> {
        self.decoder.decode(src)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<In>, FrameError> {
        match self.decoder.decode(src)? {
            Some(msg) => Ok(Some(msg)),
            None => {
                self.decoder.finish(src)?;
                Ok(None)
            }
        }
    }
}

impl<In, Out: FrameMessage> Encoder<Out> for FrameCodec<In, Out> {
    type Error = FrameError;

    fn encode(&mut self, item: Out, dst: &mut BytesMut) -> Result<(), FrameError> {
        let bytes = encode_frame(&item, self.decoder.max())?;
        dst.put_slice(&bytes);
        Ok(())
    }
}
