//! The cell timeout: one thread that interrupts the running cell when its
//! `timeout_ms` is up. It never touches Python; it goes through
//! [`Session::interrupt`](crate::session::Session::interrupt) like a Cancel.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::channel::lock;
use crate::session::{Interrupt, Session};

#[derive(Default)]
pub struct Timer {
    deadline: Mutex<Option<(u64, Instant)>>,
    changed: Condvar,
}

impl Timer {
    /// Interrupts cell `id` after `timeout_ms` (0: never).
    pub fn arm(&self, id: u64, timeout_ms: u64) {
        // A timeout too large to represent is no timeout.
        let at = (timeout_ms > 0)
            .then(|| Instant::now().checked_add(Duration::from_millis(timeout_ms)))
            .flatten();
        self.set(at.map(|at| (id, at)));
    }

    pub fn disarm(&self) {
        self.set(None);
    }

    fn set(&self, deadline: Option<(u64, Instant)>) {
        let mut current = lock(&self.deadline);
        // Cells without a timeout need not wake the timer thread at all.
        if current.is_none() && deadline.is_none() {
            return;
        }
        *current = deadline;
        self.changed.notify_one();
    }

    /// The timer thread.
    pub fn run(&self, session: &Session) {
        let mut deadline = lock(&self.deadline);
        loop {
            match *deadline {
                None => {
                    deadline = self
                        .changed
                        .wait(deadline)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                Some((id, at)) => {
                    let now = Instant::now();
                    if now >= at {
                        *deadline = None;
                        drop(deadline);
                        session.interrupt(id, Interrupt::Timeout);
                        deadline = lock(&self.deadline);
                    } else {
                        deadline = self
                            .changed
                            .wait_timeout(deadline, at - now)
                            .unwrap_or_else(PoisonError::into_inner)
                            .0;
                    }
                }
            }
        }
    }
}
