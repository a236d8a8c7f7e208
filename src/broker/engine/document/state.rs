//! A document's life in Lean, as one state machine: whether it is open, in
//! which Lean server, whether Lean's report of the latest thing it was sent
//! is final, and whether Lean holds the file as stopped. Every change is a
//! named event; the events that make the broker speak to Lean return the
//! notification to send. Pure: no lock, no I/O, so the whole table is tested
//! below, the races of the past included.
//!
//! The orderings that made those races (each fixed once, and pinned here):
//!
//! * Lean writes a crash's `-32902` answer before the crash's fatal
//!   progress report, so the report can reach the document after the next
//!   request already reopened it: only a report marks the file stopped then
//!   ([`Stop::Reported`]), and the new worker's reports end it.
//! * A `workerCrashed` answer to a request sent before the latest (re)open
//!   or edit is news of a worker Lean no longer runs ([`Lifecycle::crash_answer`]
//!   compares what was sent).
//! * A killed worker counts as gone the moment it was killed, before it is
//!   reaped: a final report is answered from only while its worker runs
//!   ([`Lifecycle::answers_from_report`] asks the process itself).
//! * Lean notices a worker that died between two uses of its document only
//!   when the next message reaches it, and charges the crash to that
//!   message's text: a probe slot's worker is checked before the slot is
//!   edited again ([`Lifecycle::lost_worker_unnoticed`]).
//! * A wait's answer and Lean's notifications travel separate paths: a wait
//!   answered for something sent before the latest send does not settle the
//!   document ([`Lifecycle::wait_answered`]).

use crate::broker::error::MemoryKill;
use crate::process::tree::Seen;

/// How many things Lean was sent for a document (opens and edits), each of
/// which starts an elaboration. Read before a request, it tells whether an
/// answer is about what Lean runs now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Sent(u64);

/// A notification to send to Lean for the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// `textDocument/didOpen`.
    Open,
    /// `textDocument/didChange`.
    Change,
    /// `textDocument/didClose`.
    Close,
}

/// Where a document is in Lean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not open in any Lean server (never opened, closed, or its server gone).
    Closed,
    /// Open in one Lean server.
    Open(Opening),
}

/// A document open in Lean server `generation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opening {
    pub generation: u64,
    pub report: Report,
    /// The file worker Lean runs for the document, once seen
    /// (`beam_stats.workerPid`). Lean reports a crash only once it noticed:
    /// the process itself tells at once.
    pub worker: Option<Seen>,
    /// Lean holds the file as stopped: reopen it before the next use.
    pub stop: Option<Stop>,
}

/// Lean's report of the latest thing it was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// Elaboration may still add to it.
    Pending,
    /// Final: Lean answered `waitForDiagnostics` after the latest send.
    Final,
}

/// What a `$/lean/fileProgress` report says of the file's worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worker {
    /// Processing, or done: the worker runs the file.
    Alive,
    /// A fatal error (kind 2): the worker stopped.
    Stopped,
}

/// Why the document must be reopened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Only Lean's latest report of the version is fatal. A worker that runs
    /// the file again reports it alive, which ends this.
    Reported,
    /// A crash answer, a wait given up on a stopped worker, rebuilt imports or
    /// a send that failed: stays until the document is reopened.
    Marked,
}

/// The state machine of one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lifecycle {
    sent: Sent,
    phase: Phase,
    /// The worker was killed for using more memory than allowed: the calls
    /// on it get that error instead of a crash, until Lean is sent anything
    /// for the document again (which starts a new worker).
    memory_kill: Option<MemoryKill>,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Lifecycle {
            sent: Sent::default(),
            phase: Phase::Closed,
            memory_kill: None,
        }
    }
}

impl Lifecycle {
    pub fn sent(&self) -> Sent {
        self.sent
    }

    /// The Lean server the document is open in, stopped or not.
    pub fn generation(&self) -> Option<u64> {
        match self.phase {
            Phase::Open(o) => Some(o.generation),
            Phase::Closed => None,
        }
    }

    /// Open in server `generation`, and not stopped: requests on it are
    /// answered there without a reopen.
    pub fn is_open_in(&self, generation: u64) -> bool {
        matches!(self.phase, Phase::Open(o) if o.generation == generation && o.stop.is_none())
    }

    /// Lean's report of the current text is final and nothing was sent
    /// since: another `waitForDiagnostics` could only answer the same.
    pub fn is_settled(&self) -> bool {
        matches!(
            self.phase,
            Phase::Open(Opening {
                report: Report::Final,
                stop: None,
                ..
            })
        )
    }

    /// The final report may stand for Lean's answer without asking it: only
    /// while the worker that gave it still runs (`runs` asks the process).
    /// Lean holds a file as crashed once its worker is gone, and a worker
    /// counts as gone from the moment it was killed.
    pub fn answers_from_report(&self, runs: impl Fn(&Seen) -> bool) -> bool {
        self.is_settled() && self.worker().is_some_and(|w| runs(&w))
    }

    pub fn worker(&self) -> Option<Seen> {
        match self.phase {
            Phase::Open(o) => o.worker,
            Phase::Closed => None,
        }
    }

    pub fn memory_kill(&self) -> Option<MemoryKill> {
        self.memory_kill
    }

    /// Something new is sent: what Lean reported so far is not final, and a
    /// memory kill is news of the worker before it.
    fn send(&mut self) {
        self.sent.0 += 1;
        self.memory_kill = None;
    }

    /// Open (or reopen) the document in server `generation`: a new worker,
    /// nothing reported yet. The caller closed any opening in that server
    /// first ([`Lifecycle::close`]).
    pub fn open(&mut self, generation: u64) -> Notice {
        self.send();
        self.phase = Phase::Open(Opening {
            generation,
            report: Report::Pending,
            worker: None,
            stop: None,
        });
        Notice::Open
    }

    /// Edit the open document in place: its worker goes on.
    pub fn change(&mut self) -> Notice {
        self.send();
        if let Phase::Open(o) = &mut self.phase {
            o.report = Report::Pending;
            o.stop = None;
        }
        Notice::Change
    }

    /// Close the document; `live` is the server running now. Lean hears of
    /// it only when it is open there (a dead server has closed it anyway).
    pub fn close(&mut self, live: Option<u64>) -> Option<Notice> {
        let Phase::Open(o) = self.phase else {
            return None;
        };
        self.phase = Phase::Closed;
        (live == Some(o.generation)).then_some(Notice::Close)
    }

    /// Server `generation` is gone, with every document open in it.
    pub fn server_gone(&mut self, generation: u64) {
        if self.generation() == Some(generation) {
            self.phase = Phase::Closed;
        }
    }

    /// Lean reported the current version's progress. A stopped worker
    /// (kind 2) makes Lean hold every later request for the file until the
    /// next didOpen/didChange. A report alive again ends a stop that only a
    /// report asked for.
    pub fn progress(&mut self, worker: Worker) {
        let Phase::Open(o) = &mut self.phase else {
            return;
        };
        match (worker, o.stop) {
            (Worker::Stopped, None) => o.stop = Some(Stop::Reported),
            (Worker::Alive, Some(Stop::Reported)) => o.stop = None,
            _ => {}
        }
    }

    /// A request sent when Lean had been sent `sent_at` failed because the
    /// worker crashed or exited. Returns whether that is the worker Lean
    /// runs now (then the document is reopened at its next use); after a
    /// reopen or an edit it is not (an edit makes Lean restart a crashed
    /// worker).
    pub fn crash_answer(&mut self, sent_at: Sent) -> bool {
        let current = self.sent == sent_at;
        if current {
            self.mark_for_reopen();
        }
        current
    }

    /// A wait gave up on a worker Lean reported stopped.
    pub fn stopped_wait(&mut self) {
        self.mark_for_reopen();
    }

    /// Reopen before the next use, whatever Lean reports meanwhile (a crash,
    /// rebuilt imports, a send that failed).
    pub fn mark_for_reopen(&mut self) {
        if let Phase::Open(o) = &mut self.phase {
            o.stop = Some(Stop::Marked);
        }
    }

    /// Lean answered `waitForDiagnostics` for what was sent as `sent_at`, and
    /// `worker` runs the file: the report is final, unless something was
    /// sent since.
    pub fn wait_answered(&mut self, sent_at: Sent, worker: Option<Seen>) {
        if self.sent != sent_at {
            return;
        }
        if let Phase::Open(o) = &mut self.phase {
            o.report = Report::Final;
            o.worker = worker;
        }
    }

    /// `worker` was seen running the file after Lean reported on what was
    /// sent as `sent_at`; the report stays as it is (a probe slot's, read
    /// from Lean's notifications, not from a `waitForDiagnostics` answer).
    /// Nothing is recorded if something was sent since.
    pub fn worker_seen(&mut self, sent_at: Sent, worker: Seen) {
        if self.sent != sent_at {
            return;
        }
        if let Phase::Open(o) = &mut self.phase {
            o.worker = Some(worker);
        }
    }

    /// Open in server `generation`, not stopped as far as Lean said, but
    /// its worker, once seen, no longer runs: Lean notices a worker that died
    /// between two uses only when the next message reaches it, and then
    /// charges the crash to that message's text (issue 26 item 7).
    pub fn lost_worker_unnoticed(&self, generation: u64, runs: impl Fn(&Seen) -> bool) -> bool {
        self.is_open_in(generation) && self.worker().is_some_and(|w| !runs(&w))
    }

    /// The worker was killed for its memory.
    pub fn memory_killed(&mut self, kill: MemoryKill) {
        self.memory_kill = Some(kill);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The states of the table, by name.
    fn state(name: &str) -> Lifecycle {
        let open = |stop, report| Lifecycle {
            sent: Sent(3),
            phase: Phase::Open(Opening {
                generation: 1,
                report,
                worker: None,
                stop,
            }),
            memory_kill: None,
        };
        match name {
            "closed" => Lifecycle {
                sent: Sent(3),
                ..Lifecycle::default()
            },
            "pending" => open(None, Report::Pending),
            "settled" => open(None, Report::Final),
            "reported" => open(Some(Stop::Reported), Report::Pending),
            "marked" => open(Some(Stop::Marked), Report::Pending),
            "settled, reported" => open(Some(Stop::Reported), Report::Final),
            other => panic!("no state {other}"),
        }
    }

    /// What a state is, in the table's words.
    fn name(lc: &Lifecycle) -> String {
        match lc.phase {
            Phase::Closed => "closed".into(),
            Phase::Open(o) => {
                let mut name = match (o.stop, o.report) {
                    (None, Report::Pending) => "pending",
                    (None, Report::Final) => "settled",
                    (Some(Stop::Reported), Report::Pending) => "reported",
                    (Some(Stop::Marked), Report::Pending) => "marked",
                    (Some(Stop::Reported), Report::Final) => "settled, reported",
                    (Some(Stop::Marked), Report::Final) => "settled, marked",
                }
                .to_string();
                if o.generation != 1 {
                    name.push_str(&format!(" in {}", o.generation));
                }
                name
            }
        }
    }

    type Event = fn(&mut Lifecycle) -> Option<Notice>;

    /// Every event on every state: the state after it, the notification it
    /// sends, and whether it counts as a send.
    #[test]
    fn transitions() {
        let events: &[(&str, Event)] = &[
            ("open in 1", |lc| Some(lc.open(1))),
            ("open in 2", |lc| Some(lc.open(2))),
            ("change", |lc| Some(lc.change())),
            ("close, 1 live", |lc| lc.close(Some(1))),
            ("close, 2 live", |lc| lc.close(Some(2))),
            ("close, none live", |lc| lc.close(None)),
            ("server 1 gone", |lc| {
                lc.server_gone(1);
                None
            }),
            ("server 2 gone", |lc| {
                lc.server_gone(2);
                None
            }),
            ("fatal report", |lc| {
                lc.progress(Worker::Stopped);
                None
            }),
            ("alive report", |lc| {
                lc.progress(Worker::Alive);
                None
            }),
            ("crash answer, current", |lc| {
                lc.crash_answer(Sent(3));
                None
            }),
            ("crash answer, stale", |lc| {
                lc.crash_answer(Sent(2));
                None
            }),
            ("wait given up", |lc| {
                lc.stopped_wait();
                None
            }),
            ("marked", |lc| {
                lc.mark_for_reopen();
                None
            }),
            ("wait answered, current", |lc| {
                lc.wait_answered(Sent(3), None);
                None
            }),
            ("wait answered, stale", |lc| {
                lc.wait_answered(Sent(2), None);
                None
            }),
        ];
        use Notice::*;
        // (state, event, state after, notice); a `*` state after means a send.
        let table: &[(&str, &str, &str, Option<Notice>)] = &[
            ("closed", "open in 1", "pending*", Some(Open)),
            ("closed", "open in 2", "pending in 2*", Some(Open)),
            ("closed", "close, 1 live", "closed", None),
            ("closed", "server 1 gone", "closed", None),
            ("closed", "fatal report", "closed", None),
            ("closed", "crash answer, current", "closed", None),
            ("closed", "marked", "closed", None),
            ("closed", "wait answered, current", "closed", None),
            ("pending", "open in 1", "pending*", Some(Open)),
            ("pending", "open in 2", "pending in 2*", Some(Open)),
            ("pending", "change", "pending*", Some(Change)),
            ("pending", "close, 1 live", "closed", Some(Close)),
            ("pending", "close, 2 live", "closed", None),
            ("pending", "close, none live", "closed", None),
            ("pending", "server 1 gone", "closed", None),
            ("pending", "server 2 gone", "pending", None),
            ("pending", "fatal report", "reported", None),
            ("pending", "alive report", "pending", None),
            ("pending", "crash answer, current", "marked", None),
            ("pending", "crash answer, stale", "pending", None),
            ("pending", "wait given up", "marked", None),
            ("pending", "marked", "marked", None),
            ("pending", "wait answered, current", "settled", None),
            ("pending", "wait answered, stale", "pending", None),
            ("settled", "change", "pending*", Some(Change)),
            ("settled", "open in 1", "pending*", Some(Open)),
            ("settled", "fatal report", "settled, reported", None),
            ("settled", "alive report", "settled", None),
            ("settled", "crash answer, current", "settled, marked", None),
            ("settled", "server 1 gone", "closed", None),
            // The crash's fatal report reaches the document after the next
            // request reopened it: the new worker's reports end it.
            ("reported", "alive report", "pending", None),
            ("settled, reported", "alive report", "settled", None),
            ("reported", "fatal report", "reported", None),
            ("reported", "marked", "marked", None),
            ("reported", "open in 1", "pending*", Some(Open)),
            (
                "reported",
                "wait answered, current",
                "settled, reported",
                None,
            ),
            // A reopen asked for otherwise stays asked for, whatever Lean
            // reports meanwhile.
            ("marked", "alive report", "marked", None),
            ("marked", "fatal report", "marked", None),
            ("marked", "open in 1", "pending*", Some(Open)),
            ("marked", "close, 1 live", "closed", Some(Close)),
            ("marked", "server 1 gone", "closed", None),
        ];
        for (from, event, to, notice) in table {
            let (_, apply) = events
                .iter()
                .find(|(name, _)| name == event)
                .unwrap_or_else(|| panic!("no event {event}"));
            let mut lc = state(from);
            let before = lc.sent;
            let sent = apply(&mut lc);
            let mut after = name(&lc);
            if lc.sent != before {
                after.push('*');
            }
            assert_eq!((after.as_str(), sent), (*to, *notice), "{from} + {event}");
        }
    }

    #[test]
    fn requests_are_answered_only_in_an_open_unstopped_document() {
        for (name, open) in [
            ("closed", false),
            ("pending", true),
            ("settled", true),
            ("reported", false),
            ("marked", false),
        ] {
            assert_eq!(state(name).is_open_in(1), open, "{name}");
            assert!(!state(name).is_open_in(2), "{name} in another server");
        }
        assert!(state("settled").is_settled());
        assert!(!state("settled, reported").is_settled());
        assert!(!state("pending").is_settled());
    }

    /// A crash answer marks the document only when it answers what Lean runs
    /// now: a request sent before the latest (re)open or edit.
    #[test]
    fn a_stale_crash_answer_leaves_the_new_opening_alone() {
        let mut lc = Lifecycle::default();
        lc.open(1);
        let before_edit = lc.sent();
        lc.change();
        assert!(!lc.crash_answer(before_edit));
        assert!(lc.is_open_in(1));
        assert!(lc.crash_answer(lc.sent()));
        assert!(!lc.is_open_in(1));
    }

    /// A slot's worker, seen after its report, is checked before the slot's
    /// next use: gone, the slot is recovered (reopened) instead of edited.
    /// What is seen for an older send is not recorded.
    #[test]
    fn a_worker_seen_gone_is_a_lost_worker_lean_has_not_noticed() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep runs");
        let worker = Seen::of(child.id()).expect("a running child is seen");
        let mut lc = Lifecycle::default();
        lc.open(1);
        let stale = lc.sent();
        lc.change();
        lc.worker_seen(stale, worker);
        assert_eq!(lc.worker(), None, "seen for an older send");
        lc.worker_seen(lc.sent(), worker);
        assert_eq!(lc.worker(), Some(worker));
        assert!(!lc.is_settled(), "seeing the worker settles nothing");
        assert!(!lc.lost_worker_unnoticed(1, Seen::is_running));
        child.kill().unwrap();
        assert!(lc.lost_worker_unnoticed(1, Seen::is_running));
        assert!(
            !lc.lost_worker_unnoticed(2, Seen::is_running),
            "another server"
        );
        lc.progress(Worker::Stopped);
        assert!(
            !lc.lost_worker_unnoticed(1, Seen::is_running),
            "Lean noticed: the stop reopens it anyway"
        );
        child.wait().unwrap();
    }

    /// A send clears a memory kill: the next worker is a new one.
    #[test]
    fn a_memory_kill_lasts_until_the_next_send() {
        let kill = MemoryKill {
            pid: 7,
            rss: 1 << 30,
            limit: 1 << 29,
            server: false,
        };
        let mut lc = Lifecycle::default();
        lc.open(1);
        lc.memory_killed(kill);
        lc.close(Some(1));
        assert_eq!(lc.memory_kill(), Some(kill), "closing sends nothing new");
        lc.open(1);
        assert_eq!(lc.memory_kill(), None);
    }

    /// A killed worker counts as gone before it is reaped: a settled
    /// document whose worker was killed is asked again, not answered from
    /// its report. The worker here is a real child process, killed and left
    /// unreaped (a zombie), as Lean's worker is in the moment after a kill.
    #[test]
    fn a_killed_worker_is_gone_before_its_zombie_is_reaped() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep runs");
        let worker = Seen::of(child.id()).expect("a running child is seen");
        let mut lc = Lifecycle::default();
        lc.open(1);
        lc.wait_answered(lc.sent(), Some(worker));
        assert!(lc.answers_from_report(Seen::is_running));
        child.kill().unwrap();
        // Not waited for: the child is a zombie (or about to be) now.
        assert!(
            !lc.answers_from_report(Seen::is_running),
            "a worker counts as gone from the moment it was killed"
        );
        assert!(lc.is_settled(), "the report itself stays final");
        child.wait().unwrap();
        // Without a worker seen there is nothing to answer from either.
        let mut unseen = Lifecycle::default();
        unseen.open(1);
        unseen.wait_answered(unseen.sent(), None);
        assert!(!unseen.answers_from_report(|_| true));
    }
}
