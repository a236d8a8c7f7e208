//! One workspace's index: the declarations of every listed file, replaced
//! file by file when a file's stamp changes, and the query over them.
//!
//! Every query scans all declarations (a name comparison, or a token match
//! for patterns): on 100k declarations that is milliseconds, and there is no
//! secondary structure to keep in step. Bounded by declarations: past
//! `max_declarations`, further files are left out (the workspace's own come
//! first in the listing) and every answer says so.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::decls::{self, Kind};
use super::pattern::Compiled;
use super::query::Query;
use super::rank::{NameQuery, Tier, byte_mask};
use super::source::LineIndex;
use super::terms::{Interner, conclusion_start};
use super::walk::{Listed, Origin, Stamp};
use crate::results::{Range, SearchHit, SearchIndex};

/// A declaration as the index keeps it.
#[derive(Debug)]
struct Entry {
    name: Box<str>,
    lower: Box<str>,
    mask: u64,
    kind: Kind,
    statement: Box<str>,
    doc: Option<Box<str>>,
    range: [u32; 4],
    toks: Box<[u32]>,
    conclusion: u32,
}

impl Entry {
    fn bytes(&self) -> usize {
        std::mem::size_of::<Entry>()
            + 2 * self.name.len()
            + self.statement.len()
            + self.doc.as_ref().map_or(0, |d| d.len())
            + 4 * self.toks.len()
    }
}

#[derive(Debug)]
struct File {
    stamp: (Stamp, Option<Stamp>),
    shown: String,
    module: String,
    origin: Origin,
    entries: Vec<Entry>,
}

/// Progress of a refresh, read by the caller's task while it runs.
#[derive(Debug, Default)]
pub struct Progress {
    pub done: AtomicUsize,
    pub total: AtomicUsize,
}

/// A refresh stopped by its caller's cancellation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

/// A match and its sort key: (name tier, origin, length, name).
type Match<'a> = (Option<Tier>, u8, usize, &'a str, &'a File, &'a Entry);

/// What a query found.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub hits: Vec<SearchHit>,
    pub matched: usize,
    pub index: SearchIndex,
}

pub struct Index {
    files: HashMap<PathBuf, File>,
    interner: Interner,
    declarations: usize,
    max_declarations: usize,
    /// Files the bound left out.
    left_out: std::collections::HashSet<PathBuf>,
    refreshed: usize,
}

impl Index {
    pub fn new(max_declarations: usize) -> Index {
        Index {
            files: HashMap::new(),
            interner: Interner::default(),
            declarations: 0,
            max_declarations,
            left_out: Default::default(),
            refreshed: 0,
        }
    }

    /// Bytes held: entries, interned tokens, tables (an estimate within a
    /// small factor of the allocator's count).
    pub fn bytes(&self) -> usize {
        self.files
            .values()
            .map(|f| {
                128 + f.shown.len()
                    + f.module.len()
                    + f.entries.iter().map(Entry::bytes).sum::<usize>()
            })
            .sum::<usize>()
            + self.interner.bytes()
    }

    #[cfg(test)]
    pub fn declarations(&self) -> usize {
        self.declarations
    }

    /// Bring the index in line with `listing`: files gone are dropped,
    /// new or changed ones read with `read` (`None`: unreadable, left out).
    /// Stops between files when `cancel` is set; what was read stays.
    pub fn refresh(
        &mut self,
        listing: Vec<Listed>,
        read: &dyn Fn(&Listed) -> Option<String>,
        cancel: &AtomicBool,
        progress: &Progress,
    ) -> Result<(), Cancelled> {
        let listed: std::collections::HashSet<&PathBuf> = listing.iter().map(|l| &l.path).collect();
        let gone: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|p| !listed.contains(p))
            .cloned()
            .collect();
        for path in gone {
            if let Some(file) = self.files.remove(&path) {
                self.declarations -= file.entries.len();
            }
        }
        let changed: Vec<&Listed> = listing
            .iter()
            .filter(|l| self.files.get(&l.path).is_none_or(|f| f.stamp != l.stamp))
            .collect();
        progress.total.store(changed.len(), Ordering::Relaxed);
        progress.done.store(0, Ordering::Relaxed);
        self.refreshed = 0;
        self.left_out.clear();
        for listed in changed {
            if cancel.load(Ordering::Relaxed) {
                return Err(Cancelled);
            }
            self.read_file(listed, read);
            progress.done.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Bring the files the watch saw change in line, each read again whatever
    /// its stamp says (`None`: gone, dropped). Each is taken out of
    /// `pending` once done, so a cancelled update leaves the rest there.
    pub fn update(
        &mut self,
        pending: &mut std::collections::BTreeSet<PathBuf>,
        look: &dyn Fn(&std::path::Path) -> Option<Listed>,
        read: &dyn Fn(&Listed) -> Option<String>,
        cancel: &AtomicBool,
        progress: &Progress,
    ) -> Result<(), Cancelled> {
        progress.total.store(pending.len(), Ordering::Relaxed);
        progress.done.store(0, Ordering::Relaxed);
        self.refreshed = 0;
        while let Some(path) = pending.first().cloned() {
            if cancel.load(Ordering::Relaxed) {
                return Err(Cancelled);
            }
            match look(&path) {
                Some(listed) => self.read_file(&listed, read),
                None => {
                    if let Some(file) = self.files.remove(&path) {
                        self.declarations -= file.entries.len();
                    }
                    self.left_out.remove(&path);
                }
            }
            pending.remove(&path);
            progress.done.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Read one listed file in place of what the index held for it.
    fn read_file(&mut self, listed: &Listed, read: &dyn Fn(&Listed) -> Option<String>) {
        let old = self
            .files
            .remove(&listed.path)
            .map_or(0, |f| f.entries.len());
        self.declarations -= old;
        self.left_out.remove(&listed.path);
        let Some(text) = read(listed) else {
            return;
        };
        let found = decls::declarations(&text);
        if self.declarations + found.len() > self.max_declarations {
            self.left_out.insert(listed.path.clone());
            return;
        }
        let entries = self.entries(&text, found);
        self.declarations += entries.len();
        self.refreshed += 1;
        self.files.insert(
            listed.path.clone(),
            File {
                stamp: listed.stamp,
                shown: listed.shown.clone(),
                module: listed.module.clone(),
                origin: listed.origin.clone(),
                entries,
            },
        );
    }

    fn entries(&mut self, text: &str, found: Vec<decls::Decl>) -> Vec<Entry> {
        let lines = LineIndex::new(text);
        found
            .into_iter()
            .map(|d| {
                let toks = self.interner.statement(&d.statement);
                let conclusion = conclusion_start(&toks, &self.interner) as u32;
                let (sl, sc) = lines.position(text, d.start);
                let (el, ec) = lines.position(text, d.end);
                let lower = d.name.to_lowercase();
                Entry {
                    mask: byte_mask(&lower),
                    lower: lower.into(),
                    name: d.name.into(),
                    kind: d.kind,
                    statement: d.statement.into(),
                    doc: d.doc.map(Into::into),
                    range: [sl, sc, el, ec],
                    toks: toks.into(),
                    conclusion,
                }
            })
            .collect()
    }

    /// The hits for `query`, best first, at most `limit`.
    pub fn search(&self, query: &Query, limit: usize, max_declarations_var: &str) -> Found {
        let names: Vec<NameQuery> = query.names.iter().map(|n| NameQuery::new(n)).collect();
        let occurs: Vec<Compiled> = query
            .occurs
            .iter()
            .map(|p| p.compile(&self.interner))
            .collect();
        let conclusions: Vec<Compiled> = query
            .conclusions
            .iter()
            .map(|p| p.compile(&self.interner))
            .collect();
        let impossible = occurs.iter().chain(&conclusions).any(Compiled::impossible);
        // (tier, origin, length, name) for name queries; statement queries
        // without a name part rank by statement length.
        let mut matches: Vec<Match> = Vec::new();
        if !impossible {
            for file in self.files.values() {
                let origin = match file.origin {
                    Origin::Workspace => 0,
                    Origin::Package(_) => 1,
                    Origin::Toolchain => 2,
                };
                for e in &file.entries {
                    let mut tier = None;
                    let mut all = true;
                    for n in &names {
                        match n.tier(&e.name, &e.lower, e.mask) {
                            Some(t) => tier = tier.max(Some(t)),
                            None => {
                                all = false;
                                break;
                            }
                        }
                    }
                    if !all
                        || !occurs.iter().all(|p| p.occurs_in(&e.toks))
                        || !conclusions
                            .iter()
                            .all(|p| p.matches_whole(&e.toks[e.conclusion as usize..]))
                    {
                        continue;
                    }
                    let length = if names.is_empty() {
                        e.toks.len()
                    } else {
                        e.name.len()
                    };
                    matches.push((tier, origin, length, &e.name, file, e));
                }
            }
        }
        let matched = matches.len();
        fn key<'a>(m: &Match<'a>) -> (Option<Tier>, u8, usize, &'a str) {
            (m.0, m.1, m.2, m.3)
        }
        if matches.len() > limit && limit > 0 {
            matches.select_nth_unstable_by(limit - 1, |a, b| key(a).cmp(&key(b)));
        }
        matches.truncate(limit);
        matches.sort_by(|a, b| key(a).cmp(&key(b)));
        let hits = matches
            .into_iter()
            .map(|(tier, _, _, _, file, e)| SearchHit {
                name: e.name.to_string(),
                kind: e.kind.as_str().to_string(),
                statement: e.statement.to_string(),
                doc: e.doc.as_ref().map(|d| d.to_string()),
                module: file.module.clone(),
                path: file.shown.clone(),
                range: Range::new((e.range[0], e.range[1]), (e.range[2], e.range[3])),
                origin: match file.origin {
                    Origin::Workspace => "workspace",
                    Origin::Package(_) => "package",
                    Origin::Toolchain => "toolchain",
                }
                .to_string(),
                name_match: tier.map(|t| t.as_str().to_string()),
            })
            .collect();
        Found {
            hits,
            matched,
            index: SearchIndex {
                files: self.files.len(),
                declarations: self.declarations,
                bytes: self.bytes(),
                refreshed_files: self.refreshed,
                complete: self.left_out.is_empty(),
                left_out: (!self.left_out.is_empty()).then(|| {
                    format!(
                        "{} file(s) past the bound of {} declarations ({max_declarations_var})",
                        self.left_out.len(),
                        self.max_declarations
                    )
                }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::query;

    fn listed(path: &str, module: &str, origin: Origin, stamp: Stamp) -> Listed {
        Listed {
            path: PathBuf::from(path),
            shown: path.to_string(),
            module: module.to_string(),
            origin,
            stamp: (stamp, None),
        }
    }

    fn stamp_of_this_file() -> Stamp {
        Stamp::of(std::path::Path::new(file!()))
            .or_else(|| Stamp::of(std::path::Path::new("Cargo.toml")))
            .expect("a file to stamp")
    }

    const A: &str = "namespace Nat\ntheorem add_comm (a b : Nat) : a + b = b + a := sorry\n/-- Zero on the right. -/\ntheorem add_zero (n : Nat) : n + 0 = n := sorry\nend Nat\n";
    const B: &str =
        "theorem my_add_comm (x y : Nat) : x + y = y + x := sorry\ndef comm_helper : Nat := 0\n";

    fn index(files: &[(&str, &str, Origin)]) -> Index {
        let mut index = Index::new(1000);
        let texts: HashMap<PathBuf, String> = files
            .iter()
            .map(|(p, t, _)| (PathBuf::from(p), t.to_string()))
            .collect();
        let listing = files
            .iter()
            .map(|(p, _, o)| listed(p, &p.replace(".lean", ""), o.clone(), stamp_of_this_file()))
            .collect();
        index
            .refresh(
                listing,
                &|l| texts.get(&l.path).cloned(),
                &AtomicBool::new(false),
                &Progress::default(),
            )
            .unwrap();
        index
    }

    fn names(index: &Index, q: &str, limit: usize) -> (Vec<String>, usize) {
        let found = index.search(&query::parse(q).unwrap(), limit, "VAR");
        (
            found.hits.into_iter().map(|h| h.name).collect(),
            found.matched,
        )
    }

    #[test]
    fn name_queries_rank_and_count() {
        let index = index(&[
            ("A.lean", A, Origin::Package("p".into())),
            ("B.lean", B, Origin::Workspace),
        ]);
        assert_eq!(
            names(&index, "Nat.add_comm", 10),
            (vec!["Nat.add_comm".into()], 1)
        );
        assert_eq!(
            names(&index, "add_comm", 10),
            (vec!["Nat.add_comm".into(), "my_add_comm".into()], 2)
        );
        // Same tier (prefix of a component): the workspace's own first.
        assert_eq!(
            names(&index, "comm", 10).0,
            ["comm_helper", "my_add_comm", "Nat.add_comm"]
        );
        assert_eq!(names(&index, "comm", 1), (vec!["comm_helper".into()], 3));
        assert_eq!(
            names(&index, "nadd", 10).0,
            ["Nat.add_comm", "Nat.add_zero"]
        );
    }

    #[test]
    fn statement_queries() {
        let index = index(&[
            ("A.lean", A, Origin::Package("p".into())),
            ("B.lean", B, Origin::Workspace),
        ]);
        assert_eq!(
            names(&index, "?a + ?b = ?b + ?a", 10).0,
            ["my_add_comm", "Nat.add_comm"]
        );
        assert_eq!(names(&index, "⊢ _ + 0 = _", 10).0, ["Nat.add_zero"]);
        assert_eq!(
            names(&index, "\"add\", _ = _", 10).0,
            ["my_add_comm", "Nat.add_comm", "Nat.add_zero"]
        );
        assert_eq!(names(&index, "Nat, ⊢ ?n + 0 = ?n", 10).0, ["Nat.add_zero"]);
        assert_eq!(names(&index, "Nat, ⊢ _ = ?n", 10).1, 3);
        assert_eq!(names(&index, "Int, _ = _", 10), (vec![], 0));
        let found = index.search(&query::parse("add_zero").unwrap(), 1, "VAR");
        let hit = &found.hits[0];
        assert_eq!(hit.doc.as_deref(), Some("Zero on the right."));
        assert_eq!((hit.range.start.line, hit.range.start.character), (2, 0));
        assert_eq!((hit.range.end.line, hit.range.end.character), (3, 47));
        assert_eq!((hit.module.as_str(), hit.origin.as_str()), ("A", "package"));
    }

    #[test]
    fn refresh_replaces_changed_files_and_bounds_declarations() {
        let mut index = index(&[("A.lean", A, Origin::Workspace)]);
        assert_eq!(index.declarations(), 2);
        // Same stamp: nothing read.
        let same = vec![listed(
            "A.lean",
            "A",
            Origin::Workspace,
            stamp_of_this_file(),
        )];
        index
            .refresh(
                same,
                &|_| panic!("read"),
                &AtomicBool::new(false),
                &Progress::default(),
            )
            .unwrap();
        assert_eq!(
            index
                .search(&query::parse("add").unwrap(), 5, "V")
                .index
                .refreshed_files,
            0
        );
        // A file gone, another new, past the bound.
        let mut small = Index::new(3);
        let listing = vec![
            listed("A.lean", "A", Origin::Workspace, stamp_of_this_file()),
            listed("B.lean", "B", Origin::Workspace, stamp_of_this_file()),
        ];
        let read = |l: &Listed| Some(if l.module == "A" { A } else { B }.to_string());
        small
            .refresh(
                listing,
                &read,
                &AtomicBool::new(false),
                &Progress::default(),
            )
            .unwrap();
        let found = small.search(&query::parse("comm").unwrap(), 5, "LEAN_BEAM_X");
        assert!(!found.index.complete);
        assert_eq!(
            found.index.left_out.as_deref(),
            Some("1 file(s) past the bound of 3 declarations (LEAN_BEAM_X)")
        );
        // Cancelled before the first file: nothing read, an error.
        let mut fresh = Index::new(10);
        let listing = vec![listed(
            "A.lean",
            "A",
            Origin::Workspace,
            stamp_of_this_file(),
        )];
        assert_eq!(
            fresh.refresh(listing, &read, &AtomicBool::new(true), &Progress::default()),
            Err(Cancelled)
        );
        assert_eq!(fresh.declarations(), 0);
    }
}
