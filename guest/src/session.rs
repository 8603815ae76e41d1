//! The state shared by the guest's threads: where the session is in the
//! protocol, the running cell and its interrupt, outstanding RPC ids, the
//! inbox the Python thread drains, and the answers that Python callers wait
//! for synchronously. The reader thread, the timer and the Python thread
//! meet here; none of them holds the GIL while inside.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use codemode_proto::v1::{Init, RpcResponse, ServerInfo};

use crate::channel::{lock, Channel};
use crate::fds::WakePipe;
use crate::output::Output;
use crate::timer::Timer;

/// Why a cell was interrupted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupt {
    Cancelled,
    Timeout,
}

impl Interrupt {
    pub fn as_str(self) -> &'static str {
        match self {
            Interrupt::Cancelled => "cancelled",
            Interrupt::Timeout => "timeout",
        }
    }
}

/// Work for the Python thread, in arrival order.
pub enum Inbound {
    Init(Init),
    Execute { id: u64, code: String },
    Rpc(RpcResponse),
    AddServers(Vec<ServerInfo>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    AwaitingInit,
    Initialized,
}

pub struct RunningCell {
    pub id: u64,
    pub timeout_ms: u64,
    pub interrupt: Option<Interrupt>,
    pub started: Option<Instant>,
}

pub struct Control {
    pub phase: Phase,
    pub cell: Option<RunningCell>,
    pub last_execute: Option<u64>,
    /// The cell RPCs are attributed to (the running one, else the last).
    pub last_cell: u64,
    pub next_rpc: u64,
    pub pending_rpcs: HashSet<u64>,
}

/// RPCs whose caller blocks for the answer instead of awaiting it (an
/// `import` cannot await): id -> the answer once it arrived. The reader
/// routes their answers here, past the event loop, which is blocked.
#[derive(Default)]
pub struct Waiting {
    answers: Mutex<HashMap<u64, Option<RpcResponse>>>,
    arrived: Condvar,
}

pub struct Session {
    pub channel: Channel,
    pub output: Output,
    pub control: Mutex<Control>,
    pub inbox: Mutex<VecDeque<Inbound>>,
    pub waiting: Waiting,
    pub wake: WakePipe,
    pub timer: Timer,
    /// Largest frame accepted from the host.
    pub read_max: usize,
    main_thread: libc::pthread_t,
}

static SESSION: OnceLock<Session> = OnceLock::new();

/// The session, once [`install`] ran.
pub fn get() -> Option<&'static Session> {
    SESSION.get()
}

/// Makes `session` the process's session; call once, from the main thread
/// (which is the thread interrupts are delivered to).
pub fn install(
    channel: Channel,
    output: Output,
    wake: WakePipe,
    read_max: usize,
) -> &'static Session {
    SESSION.get_or_init(|| Session {
        channel,
        output,
        control: Mutex::new(Control {
            phase: Phase::AwaitingInit,
            cell: None,
            last_execute: None,
            last_cell: 0,
            next_rpc: 1,
            pending_rpcs: HashSet::new(),
        }),
        inbox: Mutex::new(VecDeque::new()),
        waiting: Waiting::default(),
        wake,
        timer: Timer::default(),
        read_max,
        // SAFETY: pthread_self has no preconditions.
        main_thread: unsafe { libc::pthread_self() },
    })
}

impl Session {
    /// Queues work for the Python thread and wakes its event loop.
    pub fn deliver(&self, item: Inbound) {
        lock(&self.inbox).push_back(item);
        self.wake.wake();
    }

    /// Hands an RPC answer to whoever waits for it: a blocked caller, else
    /// the event loop through the inbox.
    pub fn deliver_rpc(&self, response: RpcResponse) {
        {
            let mut answers = lock(&self.waiting.answers);
            if let Some(slot) = answers.get_mut(&response.id) {
                *slot = Some(response);
                self.waiting.arrived.notify_all();
                return;
            }
        }
        self.deliver(Inbound::Rpc(response));
    }

    /// Marks RPC `id` as one a caller will wait for; call before sending it.
    pub fn expect_answer(&self, id: u64) {
        lock(&self.waiting.answers).insert(id, None);
    }

    /// Waits up to `wait` for the answer to `id` (registered with
    /// [`Session::expect_answer`]); takes it when it came.
    pub fn wait_answer(&self, id: u64, wait: Duration) -> Option<RpcResponse> {
        let answers = lock(&self.waiting.answers);
        let (mut answers, _) = self
            .waiting
            .arrived
            .wait_timeout_while(answers, wait, |a| matches!(a.get(&id), Some(None)))
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match answers.get(&id) {
            Some(Some(_)) => answers.remove(&id).flatten(),
            _ => None,
        }
    }

    /// The caller stopped waiting for `id` (interrupted): a late answer
    /// goes to the inbox, where nobody claims it.
    pub fn forget_answer(&self, id: u64) {
        lock(&self.waiting.answers).remove(&id);
    }

    /// Interrupts cell `id` if it is the running one. The first reason
    /// sticks; a repeated request signals again, for code that swallowed the
    /// first KeyboardInterrupt.
    pub fn interrupt(&self, id: u64, why: Interrupt) {
        {
            let mut control = lock(&self.control);
            match control.cell.as_mut() {
                Some(cell) if cell.id == id => {
                    cell.interrupt.get_or_insert(why);
                }
                _ => return,
            }
        }
        // A real signal (rather than only PyErr_SetInterrupt) also breaks
        // blocking calls such as time.sleep or select out with EINTR, and
        // Python's C handler trips its flag so the Python handler runs.
        // SAFETY: the main thread lives as long as the process, so its id
        // stays valid; Python installed a SIGINT handler before any cell.
        unsafe {
            libc::pthread_kill(self.main_thread, libc::SIGINT);
        }
        self.wake.wake();
        // A caller blocked on an answer checks for the interrupt now.
        self.waiting.arrived.notify_all();
    }

    /// Sends what is buffered and exits 0: Shutdown or end of the channel.
    pub fn exit_clean(&self) -> ! {
        self.output.flush_before_exit(&self.channel);
        crate::channel::exit_now(0)
    }
}
