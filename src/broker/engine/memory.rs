//! The memory budget of the Lean processes (`LEAN_BEAM_MAX_LEAN_MEMORY`):
//! what every Lean server of this process and its workers may hold together,
//! measured as proportional memory (PSS, `/proc/<pid>/smaps_rollup`). The
//! `.olean`s are shared file mappings, so resident sets count them once per
//! worker: with Mathlib's imports that overcounts by gigabytes.
//!
//! The budget decides whether a probe may open one more Lean worker (a new
//! shadow slot, a new snippet header document, a prefix base's compile):
//! [`decide`] is the whole rule, a pure function. A new worker is estimated
//! at the private memory of the probed document's own worker (what another
//! process importing the same modules adds: its shared pages are already
//! counted), and opening one reserves that much until a measurement sees it.
//! Readings are taken off the async runtime and reused for [`MAX_AGE`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::document::SHADOW_MARKER;
use crate::lsp::LspClient;
use crate::process::tree;
use crate::util::lock;

/// The variable that sets the budget.
pub const ENV: &str = "LEAN_BEAM_MAX_LEAN_MEMORY";

/// A reading is reused this long (each costs a scan of `/proc` and a page
/// table walk per Lean process).
pub const MAX_AGE: Duration = Duration::from_secs(1);

/// A reservation for a worker just opened counts until a reading sees the
/// worker, or this long (a closed slot's reservation lapses by itself).
const RESERVATION: Duration = Duration::from_secs(30);

/// Used when the machine's memory cannot be read.
const FALLBACK_MACHINE: u64 = 8 << 30;

const MIB: u64 = 1 << 20;

/// What a Lean process is to the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The server itself, or Lake serving it, or Lake setting a file up.
    Server,
    /// The worker of a document the agent synced.
    Document,
    /// The worker of a probe's shadow slot.
    Shadow,
    /// The worker of a `lean_run_code` header document's slot.
    Snippet,
}

impl Kind {
    /// From a worker's document URI (`None`: not a file worker).
    pub fn of(worker_uri: Option<&str>) -> Kind {
        match worker_uri {
            None => Kind::Server,
            Some(uri) if !uri.contains(SHADOW_MARKER) => Kind::Document,
            Some(uri) if uri.contains("/.snippet-") => Kind::Snippet,
            Some(_) => Kind::Shadow,
        }
    }
}

/// One Lean process measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    pub kind: Kind,
    /// A file worker's document URI.
    pub uri: Option<String>,
    pub pss: u64,
    pub private: u64,
}

/// How the Lean processes of one server are measured (blocking; tests put
/// scripted figures in through [`Meter::new`]).
#[derive(Clone)]
pub struct Meter(Arc<Measure>);

/// One server's processes measured (blocking).
type Measure = dyn Fn(&LspClient) -> Vec<Measured> + Send + Sync;

impl std::fmt::Debug for Meter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Meter")
    }
}

impl Meter {
    pub fn new(f: impl Fn(&LspClient) -> Vec<Measured> + Send + Sync + 'static) -> Self {
        Meter(Arc::new(f))
    }

    /// The server's process tree from `/proc`: each process's PSS.
    pub fn proc() -> Self {
        Meter::new(|client| {
            client
                .tree_usage()
                .into_iter()
                .filter_map(|usage| {
                    let memory = tree::proportional(usage.seen.pid)?;
                    Some(Measured {
                        kind: Kind::of(usage.worker_uri.as_deref()),
                        uri: usage.worker_uri,
                        pss: memory.pss,
                        private: memory.private,
                    })
                })
                .collect()
        })
    }
}

/// The budget and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    pub bytes: u64,
    /// `LEAN_BEAM_MAX_LEAN_MEMORY`, or how the default was derived.
    pub source: String,
}

/// `512M`, `8G`, `1.5G`, `65536`, `4GiB`: bytes with an optional K/M/G/T
/// suffix (powers of 1024). `None` for anything else, and for zero.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let lower = text.trim().to_ascii_lowercase();
    let unit = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (number, shift) = match unit.as_bytes().last()? {
        b'k' => (&unit[..unit.len() - 1], 10),
        b'm' => (&unit[..unit.len() - 1], 20),
        b'g' => (&unit[..unit.len() - 1], 30),
        b't' => (&unit[..unit.len() - 1], 40),
        _ => (unit, 0),
    };
    let number = number.trim();
    let bytes = match number.parse::<u64>() {
        Ok(n) => n.checked_mul(1u64 << shift)?,
        // A fraction (`1.5G`); a negative one saturates to 0.
        Err(_) => {
            let f: f64 = number.parse().ok().filter(|f: &f64| f.is_finite())?;
            (f * (1u64 << shift) as f64) as u64
        }
    };
    (bytes > 0).then_some(bytes)
}

/// The machine's memory as a process here can use it: the smaller of
/// `MemTotal` and the cgroup's limit, named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    pub bytes: u64,
    pub from: &'static str,
}

/// The budget: `LEAN_BEAM_MAX_LEAN_MEMORY` when it is a size, else half of
/// the machine's memory. Half, because the rest is needed beside the Lean
/// servers: the agent's host, the page cache the `.olean`s are read through,
/// and the compiles `lean_verify`, `lean_save` and prefix bases run (`lean`
/// processes outside the servers' trees, not measured here).
pub fn budget(value: Option<&str>, machine: Option<Machine>) -> Budget {
    if let Some(bytes) = value.and_then(parse_bytes) {
        return Budget {
            bytes,
            source: ENV.to_string(),
        };
    }
    let machine = machine.unwrap_or(Machine {
        bytes: FALLBACK_MACHINE,
        from: "an assumed 8 GiB (the machine's memory could not be read)",
    });
    Budget {
        bytes: machine.bytes / 2,
        source: format!(
            "default: half of {} ({} MiB)",
            machine.from,
            machine.bytes / MIB
        ),
    }
}

impl Budget {
    /// From the environment (a value that is not a size is reported, and
    /// the default applies).
    pub fn from_env() -> Budget {
        let value = std::env::var(ENV).ok();
        if let Some(v) = value.as_deref().filter(|v| parse_bytes(v).is_none()) {
            crate::log_warn!(
                "{ENV}={v:?} is not a size (bytes, or with a K/M/G suffix); using the default"
            );
        }
        budget(value.as_deref(), machine())
    }
}

/// `MemTotal` and the cgroup's limit (v2 `memory.max`, v1
/// `memory.limit_in_bytes`), whichever is smaller. Kernel files, read once
/// at start-up before any runtime runs (`main` builds the broker first).
fn machine() -> Option<Machine> {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let kb: u64 = m
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(Machine {
            bytes: kb * 1024,
            from: "MemTotal",
        })
    });
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok()?.trim().parse::<u64>().ok())
    .map(|bytes| Machine {
        bytes,
        from: "the cgroup's memory limit",
    });
    match (total, cgroup) {
        (Some(t), Some(c)) if c.bytes < t.bytes => Some(c),
        (t, c) => t.or(c),
    }
}

/// What a probe that needs a slot faces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Situation {
    /// Slots its pool has (all busy: an idle one is reused before asking).
    pub slots_here: usize,
    /// PSS of every Lean process measured, plus workers reserved since.
    pub used: u64,
    /// What one more worker is estimated to add.
    pub new_worker: u64,
    pub limit: u64,
    /// Idle shadow slots of other documents of the runtime, open in Lean.
    pub idle_elsewhere: usize,
    /// Busy shadow slots of other documents of the runtime.
    pub busy_elsewhere: usize,
}

/// What the probe does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Open a new slot: it fits.
    Open,
    /// Wait for one of its pool's slots and reuse it.
    WaitHere,
    /// Close idle slots of other documents, then look again.
    Reclaim,
    /// Wait until another document's slot is given back (then reclaim it).
    WaitElsewhere,
    /// Open over the budget: the memory is held by the server and the
    /// agent's own documents, which no probe can give back, and a probe
    /// needs one slot.
    OpenOver,
    /// One worker alone is larger than the whole budget: nothing can fit.
    Refuse,
}

/// The rule: open while it fits; else reuse this pool's slots, then take
/// other documents' idle slots, then wait for their busy ones; open over the
/// budget only when nothing a probe holds could make room, and refuse only
/// when one worker is larger than the whole budget.
pub fn decide(s: &Situation) -> Decision {
    if s.used.saturating_add(s.new_worker) <= s.limit {
        Decision::Open
    } else if s.slots_here > 0 {
        Decision::WaitHere
    } else if s.idle_elsewhere > 0 {
        Decision::Reclaim
    } else if s.busy_elsewhere > 0 {
        Decision::WaitElsewhere
    } else if s.new_worker > s.limit {
        Decision::Refuse
    } else {
        Decision::OpenOver
    }
}

/// One measurement of every Lean process of this broker.
#[derive(Debug, Clone)]
pub struct Reading {
    pub at: Instant,
    pub processes: Vec<Measured>,
}

impl Reading {
    pub fn total(&self) -> u64 {
        self.processes.iter().map(|p| p.pss).sum()
    }

    pub fn of(&self, kind: Kind) -> u64 {
        self.processes
            .iter()
            .filter(|p| p.kind == kind)
            .map(|p| p.pss)
            .sum()
    }

    /// What one more worker for document `uri` is estimated to add: the
    /// private memory of its own worker, else the largest any worker has.
    pub fn new_worker(&self, uri: &str) -> u64 {
        let workers = || self.processes.iter().filter(|p| p.uri.is_some());
        workers()
            .find(|p| p.uri.as_deref() == Some(uri))
            .or_else(|| workers().max_by_key(|p| p.private))
            .map_or(0, |p| p.private)
    }
}

struct Reservation {
    uri: String,
    bytes: u64,
    since: Instant,
}

/// What the budget made probes do, counted since the start.
#[derive(Debug, Default)]
pub struct Events {
    pub waited: AtomicU64,
    pub reclaimed: AtomicU64,
    pub over: AtomicU64,
    pub refused: AtomicU64,
    pub headers_reused: AtomicU64,
}

impl Events {
    pub fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The budget, its measurements and its reservations: one per broker (every
/// workspace's Lean server draws on the same machine).
pub struct Memory {
    pub budget: Budget,
    meter: Meter,
    servers: Mutex<Vec<Weak<LspClient>>>,
    last: Mutex<Option<Arc<Reading>>>,
    /// One measurement at a time; the others wait for it and share it.
    measuring: tokio::sync::Mutex<()>,
    reserved: Mutex<Vec<Reservation>>,
    /// Held while a probe decides and reserves (see `slots::acquire`).
    pub deciding: Mutex<()>,
    /// A shadow slot was given back.
    pub returned: Notify,
    pub events: Events,
}

impl Memory {
    pub fn new(budget: Budget, meter: Meter) -> Self {
        Memory {
            budget,
            meter,
            servers: Mutex::default(),
            last: Mutex::default(),
            measuring: tokio::sync::Mutex::new(()),
            reserved: Mutex::default(),
            deciding: Mutex::default(),
            returned: Notify::new(),
            events: Events::default(),
        }
    }

    /// Measure `client`'s processes from now on (for as long as it lives).
    pub fn register(&self, client: &Arc<LspClient>) {
        let mut servers = lock(&self.servers);
        servers.retain(|s| s.strong_count() > 0);
        servers.push(Arc::downgrade(client));
    }

    /// A reading at most [`MAX_AGE`] old, measured off the async runtime.
    pub async fn reading(&self) -> Arc<Reading> {
        if let Some(fresh) = self.fresh() {
            return fresh;
        }
        let _one = self.measuring.lock().await;
        if let Some(fresh) = self.fresh() {
            return fresh;
        }
        let clients: Vec<Arc<LspClient>> = lock(&self.servers)
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|c| c.is_alive())
            .collect();
        let meter = self.meter.clone();
        let processes = tokio::task::spawn_blocking(move || {
            clients.iter().flat_map(|c| (meter.0)(c)).collect()
        })
        .await
        .unwrap_or_default();
        let reading = Arc::new(Reading {
            at: Instant::now(),
            processes,
        });
        *lock(&self.last) = Some(Arc::clone(&reading));
        reading
    }

    fn fresh(&self) -> Option<Arc<Reading>> {
        lock(&self.last)
            .as_ref()
            .filter(|r| r.at.elapsed() < MAX_AGE)
            .cloned()
    }

    /// The last reading, however old (never measures).
    pub fn last(&self) -> Option<Arc<Reading>> {
        lock(&self.last).clone()
    }

    /// The next reading measures again (a slot was closed).
    pub fn invalidate(&self) {
        *lock(&self.last) = None;
    }

    /// `reading`'s total plus the workers reserved and not yet seen in it.
    /// Reservations a reading saw, or that lapsed, are dropped.
    pub fn used(&self, reading: &Reading) -> u64 {
        let mut reserved = lock(&self.reserved);
        reserved.retain(|r| {
            r.since.elapsed() < RESERVATION
                && !(r.since <= reading.at
                    && reading
                        .processes
                        .iter()
                        .any(|p| p.uri.as_deref() == Some(r.uri.as_str())))
        });
        reading.total() + reserved.iter().map(|r| r.bytes).sum::<u64>()
    }

    /// Count `bytes` for the worker of `uri` until a reading sees it.
    pub fn reserve(&self, uri: &str, bytes: u64) {
        lock(&self.reserved).push(Reservation {
            uri: uri.to_string(),
            bytes,
            since: Instant::now(),
        });
    }

    /// The worker of `uri` was closed: its reservation goes.
    pub fn release(&self, uri: &str) {
        lock(&self.reserved).retain(|r| r.uri != uri);
    }

    /// Whether one more worker like `uri`'s fits, by the last reading (for
    /// the decisions that do not wait: snippet headers, prefix bases).
    pub fn room_now(&self, uri: &str) -> bool {
        self.last().is_none_or(|reading| {
            self.used(&reading).saturating_add(reading.new_worker(uri)) <= self.budget.bytes
        })
    }

    /// [`Memory::said`] by the last reading.
    pub fn said_now(&self) -> String {
        let reading = self.last().unwrap_or_else(|| {
            Arc::new(Reading {
                at: Instant::now(),
                processes: Vec::new(),
            })
        });
        self.said(self.used(&reading), reading.new_worker(""))
    }

    /// The budget's figures, said in a probe's note.
    pub fn said(&self, used: u64, new_worker: u64) -> String {
        format!(
            "another Lean worker (~{} MiB) would pass the memory budget ({} of {} MiB in use; {ENV})",
            new_worker.div_ceil(MIB),
            used.div_ceil(MIB),
            self.budget.bytes / MIB
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_their_suffixes() {
        let table = [
            ("65536", Some(65536)),
            ("512M", Some(512 << 20)),
            ("512MiB", Some(512 << 20)),
            ("8G", Some(8 << 30)),
            ("8g", Some(8 << 30)),
            (" 2GB ", Some(2 << 30)),
            ("1.5G", Some(3 << 29)),
            ("64k", Some(64 << 10)),
            ("1T", Some(1 << 40)),
            ("0", None),
            ("0G", None),
            ("", None),
            ("G", None),
            ("lots", None),
            ("-1G", None),
            ("12X", None),
            ("99999999999T", None),
        ];
        for (text, bytes) in table {
            assert_eq!(parse_bytes(text), bytes, "{text:?}");
        }
    }

    #[test]
    fn the_default_is_half_the_machine_and_the_variable_wins() {
        let machine = Some(Machine {
            bytes: 24 << 30,
            from: "MemTotal",
        });
        assert_eq!(
            budget(None, machine),
            Budget {
                bytes: 12 << 30,
                source: "default: half of MemTotal (24576 MiB)".into()
            }
        );
        assert_eq!(budget(Some("bad"), machine).bytes, 12 << 30);
        assert_eq!(
            budget(Some("3G"), machine),
            Budget {
                bytes: 3 << 30,
                source: ENV.into()
            }
        );
        assert_eq!(budget(None, None).bytes, FALLBACK_MACHINE / 2);
    }

    #[test]
    fn workers_are_told_apart_by_their_documents() {
        assert_eq!(Kind::of(None), Kind::Server);
        assert_eq!(Kind::of(Some("file:///w/A.lean")), Kind::Document);
        assert_eq!(
            Kind::of(Some("file:///w/.A.beam-shadow-0.lean")),
            Kind::Shadow
        );
        assert_eq!(
            Kind::of(Some("file:///w/.snippet-2.beam-shadow-0.lean")),
            Kind::Snippet
        );
        assert_eq!(
            Kind::of(Some("file:///w/.snippet-notes.lean")),
            Kind::Document,
            "not a shadow"
        );
    }

    #[test]
    fn a_probe_opens_while_it_fits_and_otherwise_reuses_reclaims_or_waits() {
        use Decision::*;
        let at = |slots_here, used, new_worker, idle_elsewhere, busy_elsewhere| Situation {
            slots_here,
            used,
            new_worker,
            limit: 1000,
            idle_elsewhere,
            busy_elsewhere,
        };
        // (situation, decision, why)
        let table = [
            (at(0, 0, 0, 0, 0), Open, "nothing measured yet"),
            (at(0, 600, 400, 0, 0), Open, "exactly fits"),
            (at(3, 200, 300, 5, 5), Open, "fits, whatever else there is"),
            (at(1, 700, 400, 0, 0), WaitHere, "reuse the pool's own slot"),
            (at(2, 700, 400, 3, 1), WaitHere, "own slots before others'"),
            (at(1, 900, 2000, 0, 0), WaitHere, "a slot exists: reuse it"),
            (at(0, 700, 400, 2, 1), Reclaim, "others' idle slots first"),
            (at(0, 700, 400, 0, 1), WaitElsewhere, "then their busy ones"),
            (at(0, 700, 2000, 0, 0), Refuse, "one worker is over it all"),
            (at(0, 1500, 400, 0, 0), OpenOver, "documents hold it all"),
            (at(0, 700, 400, 0, 0), OpenOver, "no slot anywhere to give"),
            (at(0, u64::MAX, 1, 0, 0), OpenOver, "no overflow"),
        ];
        for (situation, decision, why) in table {
            assert_eq!(decide(&situation), decision, "{why}: {situation:?}");
        }
    }

    fn measured(kind: Kind, uri: Option<&str>, pss: u64, private: u64) -> Measured {
        Measured {
            kind,
            uri: uri.map(str::to_string),
            pss,
            private,
        }
    }

    #[test]
    fn a_new_worker_costs_the_private_memory_of_its_documents_worker() {
        let reading = Reading {
            at: Instant::now(),
            processes: vec![
                measured(Kind::Server, None, 50, 40),
                measured(Kind::Document, Some("file:///A.lean"), 300, 120),
                measured(Kind::Document, Some("file:///B.lean"), 500, 200),
                measured(Kind::Shadow, Some("file:///.A.beam-shadow-0.lean"), 150, 90),
            ],
        };
        assert_eq!(reading.total(), 1000);
        assert_eq!(reading.of(Kind::Document), 800);
        assert_eq!(reading.of(Kind::Snippet), 0);
        assert_eq!(reading.new_worker("file:///A.lean"), 120);
        assert_eq!(reading.new_worker("file:///C.lean"), 200, "the largest");
    }

    #[test]
    fn a_reservation_counts_until_a_reading_sees_its_worker() {
        let memory = Memory::new(
            Budget {
                bytes: 1000,
                source: ENV.into(),
            },
            Meter::new(|_| Vec::new()),
        );
        let before = Reading {
            at: Instant::now(),
            processes: vec![measured(Kind::Document, Some("file:///A.lean"), 300, 100)],
        };
        memory.reserve("file:///.A.beam-shadow-0.lean", 100);
        assert_eq!(memory.used(&before), 400, "not seen by an older reading");
        assert_eq!(memory.used(&before), 400, "still reserved");
        let after = Reading {
            at: Instant::now(),
            processes: vec![
                measured(Kind::Document, Some("file:///A.lean"), 250, 100),
                measured(Kind::Shadow, Some("file:///.A.beam-shadow-0.lean"), 120, 90),
            ],
        };
        assert_eq!(memory.used(&after), 370, "measured, no longer reserved");
        assert_eq!(memory.used(&before), 300, "and dropped");
    }
}
