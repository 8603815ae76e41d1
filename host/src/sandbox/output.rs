//! A cell's captured output on the host side. The guest already caps its
//! output, but it is untrusted: this keeps at most `cap` bytes per stream
//! (head and tail) whatever the guest sends.

use codemode_proto::v1::Stream;

/// Bytes of one stream: the first `cap/2` and the last `cap/2` bytes, with
/// a count of what was cut between them.
#[derive(Debug, Default, Clone)]
pub struct CappedStream {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    dropped: u64,
    cap: usize,
}

impl CappedStream {
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(2),
            ..Self::default()
        }
    }

    pub fn push(&mut self, mut data: &[u8]) {
        let half = self.cap / 2;
        if self.head.len() < half {
            let take = (half - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        for &b in data {
            if self.tail.len() == half {
                self.tail.pop_front();
                self.dropped += 1;
            }
            self.tail.push_back(b);
        }
    }

    /// The kept text, with a line where bytes were dropped.
    pub fn text(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!(
                "[... {} bytes of output dropped ...]\n",
                self.dropped
            ));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

/// Receives output chunks while a cell runs (for progress notifications).
pub trait OutputListener: Send {
    fn chunk(&mut self, stream: Stream, data: &[u8]);
}

/// A listener that ignores everything.
pub struct NoListener;

impl OutputListener for NoListener {
    fn chunk(&mut self, _stream: Stream, _data: &[u8]) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_head_and_tail_and_counts_the_cut() {
        let mut s = CappedStream::new(10);
        s.push(b"0123456789abcdefghij");
        assert_eq!(s.dropped, 10);
        let t = s.text();
        assert!(
            t.starts_with("01234\n[... 10 bytes of output dropped ...]\n"),
            "{t}"
        );
        assert!(t.ends_with("fghij"), "{t}");
    }

    #[test]
    fn small_output_is_untouched() {
        let mut s = CappedStream::new(100);
        s.push(b"hello\n");
        assert_eq!(s.text(), "hello\n");
        assert_eq!(s.dropped, 0);
    }
}
