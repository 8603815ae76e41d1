//! The per-cell output budget: the first half of `max_output_bytes` streams
//! as it is written (the head), the last half is kept in a bounded ring (the
//! tail) and sent when the cell ends, with one line saying how many bytes in
//! between were dropped. Memory stays bounded whatever the cell prints.

use std::collections::VecDeque;

/// Used when the host sets no limit (`Limits` absent or zero).
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 1024 * 1024;

/// The two captured streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamId {
    Stdout = 0,
    Stderr = 1,
}

/// Consecutive bytes of one stream, ready to send.
#[derive(Debug, PartialEq, Eq)]
pub struct Chunk {
    pub stream: StreamId,
    pub data: Vec<u8>,
}

/// The output of one running cell.
#[derive(Debug)]
pub struct CellOutput {
    limit: u64,
    head_left: usize,
    tail_cap: usize,
    pending: Vec<Chunk>,
    pending_bytes: usize,
    tail: VecDeque<u8>,
    tail_segments: VecDeque<(StreamId, usize)>,
    dropped: [u64; 2],
    /// Whether anything was sent on the stream and whether it ended a line,
    /// so the drop marker starts on a line of its own.
    sent_any: [bool; 2],
    ends_line: [bool; 2],
}

impl CellOutput {
    pub fn new(limit: u64) -> Self {
        let limit = if limit == 0 {
            DEFAULT_MAX_OUTPUT_BYTES
        } else {
            limit
        };
        let total = usize::try_from(limit).unwrap_or(usize::MAX);
        let head = total - total / 2;
        Self {
            limit,
            head_left: head,
            tail_cap: total - head,
            pending: Vec::new(),
            pending_bytes: 0,
            tail: VecDeque::new(),
            tail_segments: VecDeque::new(),
            dropped: [0; 2],
            sent_any: [false; 2],
            ends_line: [true; 2],
        }
    }

    /// Bytes waiting to be sent.
    pub fn pending_bytes(&self) -> usize {
        self.pending_bytes
    }

    /// Takes what is ready to send, in write order.
    pub fn take_pending(&mut self) -> Vec<Chunk> {
        self.pending_bytes = 0;
        std::mem::take(&mut self.pending)
    }

    /// Records a write: into the head while its budget lasts, else the tail.
    pub fn push(&mut self, stream: StreamId, mut data: &[u8]) {
        if self.head_left > 0 {
            let mut n = data.len().min(self.head_left);
            if n < data.len() {
                n = floor_char_boundary(data, n);
                self.head_left = 0;
            } else {
                self.head_left -= n;
            }
            self.append_pending(stream, &data[..n]);
            data = &data[n..];
        }
        if !data.is_empty() {
            self.push_tail(stream, data);
        }
    }

    fn push_tail(&mut self, stream: StreamId, mut data: &[u8]) {
        if self.tail_cap == 0 {
            self.dropped[stream as usize] += data.len() as u64;
            return;
        }
        if data.len() >= self.tail_cap {
            // The write alone fills the ring: everything before its last
            // `tail_cap` bytes is dropped without being copied.
            let mut skip = data.len() - self.tail_cap;
            while skip < data.len() && is_continuation(data[skip]) {
                skip += 1;
            }
            self.dropped[stream as usize] += skip as u64;
            data = &data[skip..];
            self.evict(self.tail.len());
        }
        self.tail.extend(data);
        match self.tail_segments.back_mut() {
            Some((last, len)) if *last == stream => *len += data.len(),
            _ => self.tail_segments.push_back((stream, data.len())),
        }
        if self.tail.len() > self.tail_cap {
            let mut excess = self.tail.len() - self.tail_cap;
            // Start the kept tail on a character, not inside one.
            while excess < self.tail.len()
                && self.tail.get(excess).is_some_and(|b| is_continuation(*b))
            {
                excess += 1;
            }
            self.evict(excess);
        }
    }

    /// Drops `n` bytes from the front of the ring, charging their streams.
    fn evict(&mut self, mut n: usize) {
        self.tail.drain(..n.min(self.tail.len()));
        while n > 0 {
            let Some((stream, len)) = self.tail_segments.front_mut() else {
                break;
            };
            let take = n.min(*len);
            self.dropped[*stream as usize] += take as u64;
            *len -= take;
            n -= take;
            if *len == 0 {
                self.tail_segments.pop_front();
            }
        }
    }

    fn append_pending(&mut self, stream: StreamId, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.sent_any[stream as usize] = true;
        self.ends_line[stream as usize] = data.last() == Some(&b'\n');
        self.pending_bytes += data.len();
        match self.pending.last_mut() {
            Some(last) if last.stream == stream => last.data.extend_from_slice(data),
            _ => self.pending.push(Chunk {
                stream,
                data: data.to_vec(),
            }),
        }
    }

    /// Ends the cell: queues the drop marker and the tail behind the head.
    /// Returns the number of bytes dropped.
    pub fn close(&mut self) -> u64 {
        let total = self.dropped[0] + self.dropped[1];
        if total > 0 {
            let stream = if self.dropped[StreamId::Stdout as usize]
                >= self.dropped[StreamId::Stderr as usize]
            {
                StreamId::Stdout
            } else {
                StreamId::Stderr
            };
            let lead = if self.sent_any[stream as usize] && !self.ends_line[stream as usize] {
                "\n"
            } else {
                ""
            };
            let marker = format!(
                "{lead}[... {total} bytes of output dropped: the cell wrote more than {} bytes; \
                 the first and last parts are kept ...]\n",
                self.limit
            );
            self.append_pending(stream, marker.as_bytes());
        }
        let tail: Vec<u8> = self.tail.drain(..).collect();
        let mut rest = tail.as_slice();
        while let Some((stream, len)) = self.tail_segments.pop_front() {
            let (part, after) = rest.split_at(len.min(rest.len()));
            self.append_pending(stream, part);
            rest = after;
        }
        total
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

/// The largest `n' <= n` that does not split a UTF-8 character.
fn floor_char_boundary(data: &[u8], mut n: usize) -> usize {
    let limit = n.saturating_sub(3);
    while n > limit && n < data.len() && is_continuation(data[n]) {
        n -= 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(out: &mut CellOutput) -> Vec<(StreamId, String)> {
        out.take_pending()
            .into_iter()
            .map(|c| (c.stream, String::from_utf8(c.data).unwrap()))
            .collect()
    }

    #[test]
    fn small_output_passes_through_in_order_and_coalesces() {
        let mut out = CellOutput::new(100);
        out.push(StreamId::Stdout, b"a");
        out.push(StreamId::Stdout, b"b");
        out.push(StreamId::Stderr, b"e");
        assert_eq!(out.close(), 0);
        assert_eq!(
            sent(&mut out),
            vec![
                (StreamId::Stdout, "ab".into()),
                (StreamId::Stderr, "e".into())
            ]
        );
    }

    #[test]
    fn overflow_keeps_head_and_tail_and_counts_the_rest() {
        let mut out = CellOutput::new(10);
        for i in 0..100 {
            out.push(StreamId::Stdout, format!("{}", i % 10).as_bytes());
        }
        let head = sent(&mut out);
        assert_eq!(head, vec![(StreamId::Stdout, "01234".into())]);
        assert_eq!(out.close(), 90);
        let rest = sent(&mut out);
        assert!(
            rest[0].1.contains("[... 90 bytes of output dropped"),
            "{rest:?}"
        );
        assert!(rest[0].1.starts_with('\n'));
        assert!(rest[0].1.ends_with("56789"), "{rest:?}");
    }

    #[test]
    fn one_huge_write_is_cut_without_copying_it_whole() {
        let mut out = CellOutput::new(8);
        let big = vec![b'x'; 1_000_000];
        out.push(StreamId::Stderr, &big);
        out.push(StreamId::Stderr, b"END");
        assert_eq!(out.close(), 1_000_003 - 8);
        let all: String = sent(&mut out).into_iter().map(|(_, s)| s).collect();
        assert!(all.starts_with("xxxx\n[... 999995 bytes"), "{all}");
        assert!(all.ends_with("xEND"), "{all}");
    }

    #[test]
    fn cuts_never_split_a_character() {
        let mut out = CellOutput::new(9);
        out.push(StreamId::Stdout, "ééééé".as_bytes());
        out.push(StreamId::Stdout, "ééééé".as_bytes());
        out.close();
        for (_, text) in sent(&mut out) {
            assert!(!text.contains('\u{fffd}'));
        }
    }

    #[test]
    fn drops_are_charged_to_the_stream_that_lost_bytes() {
        let mut out = CellOutput::new(4);
        out.push(StreamId::Stdout, b"ok\n");
        out.push(StreamId::Stderr, b"0123456789");
        assert_eq!(out.close(), 9);
        let chunks = sent(&mut out);
        let marker = chunks.iter().find(|(_, s)| s.contains("dropped")).unwrap();
        assert_eq!(marker.0, StreamId::Stderr);
    }
}
