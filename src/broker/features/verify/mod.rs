//! `lean_verify`: certify declarations of a synced version in one call.
//!
//! The verdict comes from a fresh build (`broker::certify`): the file's
//! module and its whole workspace import closure are compiled from the text
//! the server read, in a private folder, never from the workspace's own
//! `.olean`s (which are only compared with the fresh build and reported
//! stale). The questions go to Lean in a separate generated module that
//! imports the file's module: `#print axioms _root_.<name>` for each
//! declaration, and for each reference a `Prop` definition of the reference
//! (one term, checked to be one before it is sent) and an `example` that
//! states the declaration has that type. An allowed axiom counts only when
//! the toolchain's own library declares it (a second generated module that
//! imports only the toolchain's modules of the closure must know it). Where
//! the toolchain ships `leanchecker`, every workspace module is also replayed
//! through the kernel. The source scan (`broker::hatches`) covers every
//! workspace source of the closure. The verdict names the SHA-256 of every
//! source built, the tier it reached, the Lean version and this server's.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod questions;
mod verdicts;

use super::certify::{self, BuildError, Closure, Origin, PackageStatus};
use super::lake_trace;
use crate::broker::ask::{Declaration, Verify};
use crate::broker::engine::checkpoint;
use crate::broker::engine::compiler::{self, Toolchain};
use crate::broker::engine::runtime::Runtime;
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::engine::workspace::Root;
use crate::broker::error::{Error, Result};
use crate::broker::progress::ProgressSink;
use crate::lean_source::hatches::{self, Hit};
use crate::results::{
    CheckedDeclaration, FailureReason, HatchHit, ImportedSource, PackageModule, Provenance, Range,
    Tier, VerifyFailure, VerifyResult,
};
use crate::safe_fs::{self, FsError};
use crate::sha256;
use questions::{answers, check_module, check_name, check_reference, parse_axioms};
use verdicts::{Verdict, verdict_key};

/// Axioms allowed when the call names none: the three of classical Lean.
pub const DEFAULT_AXIOMS: &[&str] = &["propext", "Classical.choice", "Quot.sound"];

/// Declarations one call may name (the schema says so too).
pub const MAX_DECLARATIONS: usize = 64;

/// How long `lean --version` and `--print-prefix` may take.
const VERSION_LIMIT: Duration = Duration::from_secs(30);

/// The toolchain of the workspace, found once per runtime (a failed search
/// is tried again next time).
async fn toolchain(broker: &Runtimes, rt: &Runtime) -> Result<Toolchain> {
    rt.toolchain
        .get_or_try_init(|| Toolchain::find(broker.launcher(), &rt.root, VERSION_LIMIT))
        .await
        .cloned()
        .map_err(Error::Unexpected)
}

fn hatch(path: &str, text: &str, hit: &Hit) -> HatchHit {
    HatchHit {
        kind: hit.kind.name().to_string(),
        path: path.to_string(),
        range: Range::new(hit.range.0, hit.range.1),
        text: text[hit.start..hit.end].to_string(),
        fails: hit.kind.fails(),
    }
}

/// SHA-256 of a file, or `None` when it cannot be read (off the runtime).
/// Remembered by the file's identity and change times (device, inode,
/// size, modification and status-change times, which no write leaves as
/// they were), so a repeat verify reads no unchanged `.olean` again.
fn file_sha256(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    static KNOWN: std::sync::Mutex<Vec<(PathBuf, [i64; 7], String)>> =
        std::sync::Mutex::new(Vec::new());
    const MAX_KNOWN: usize = 4_096;
    let stamp = |m: &std::fs::Metadata| {
        [
            m.dev() as i64,
            m.ino() as i64,
            m.len() as i64,
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        ]
    };
    let before = std::fs::symlink_metadata(path).ok().map(|m| stamp(&m));
    if let Some(b) = before {
        let known = crate::util::lock(&KNOWN);
        if let Some((_, _, hash)) = known.iter().find(|(p, st, _)| p == path && *st == b) {
            return Some(hash.clone());
        }
    }
    let read = safe_fs::read_regular_blocking(
        path,
        safe_fs::Links::Refuse,
        4 * 1024 * 1024 * 1024,
        safe_fs::Oversize::Refuse,
    )
    .ok()?;
    let hash = sha256::hex(&read.bytes);
    let after = std::fs::symlink_metadata(path).ok().map(|m| stamp(&m));
    // Kept only when nothing changed while it was read.
    if let (Some(b), true) = (before, before == after) {
        let mut known = crate::util::lock(&KNOWN);
        known.retain(|(p, _, _)| p != path);
        if known.len() >= MAX_KNOWN {
            known.remove(0);
        }
        known.push((path.to_path_buf(), b, hash.clone()));
    }
    Some(hash)
}

impl Runtimes {
    /// Certify declarations of a synced version (see the module's account).
    pub async fn verify(&self, sink: &dyn ProgressSink, args: &Verify<'_>) -> Result<VerifyResult> {
        if args.declarations.len() > MAX_DECLARATIONS {
            return Err(Error::Argument {
                what: format!("declarations ({} given)", args.declarations.len()),
                rule: "may name at most 64 declarations: verify in several calls, or name none to cover every declaration of the file",
            });
        }
        let mut named = Vec::new();
        for d in args.declarations {
            let name = check_name(&d.name)?.to_string();
            if let Some(r) = &d.reference {
                check_reference(r)?;
            }
            named.push(Declaration {
                name,
                reference: d.reference.clone(),
            });
        }
        let bound = self
            .bind(sink, args.workspace, args.path, args.version)
            .await?;
        let text = std::sync::Arc::clone(&bound.state.text);
        let shown = bound.doc.path.shown.clone();
        let root = bound.rt.root.clone();
        let module = checkpoint::module_name(&root, &bound.doc.path)?;
        let rel = bound
            .doc
            .path
            .file
            .strip_prefix(root.path())
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| PathBuf::from(&shown));
        let allowed: Vec<String> = if args.allowed_axioms.is_empty() {
            DEFAULT_AXIOMS.iter().map(|a| a.to_string()).collect()
        } else {
            args.allowed_axioms.to_vec()
        };
        let mut failures = Vec::new();
        let mut fail =
            |reason: FailureReason, detail: String| failures.push(VerifyFailure { reason, detail });

        let (tc, disk_changed) = tokio::join!(toolchain(self, &bound.rt), bound.disk_changed());
        let tc = tc?;
        let (closure, checker) = {
            let (root_path, tc2, module, rel, text) = (
                root.path().to_path_buf(),
                tc.clone(),
                module.clone(),
                rel.clone(),
                text.to_string(),
            );
            let read = tokio::task::spawn_blocking(move || {
                let mut closure = certify::closure(&root_path, &tc2.lib, &module, &rel, &text);
                closure.keys = certify::keys(&tc2, &closure);
                // The replay's checker, with what identifies its build (a
                // replaced checker is a new key).
                let checker = tc2.lean.with_file_name("leanchecker");
                let checker = std::fs::metadata(&checker)
                    .ok()
                    .filter(|m| m.is_file())
                    .map(|m| {
                        use std::os::unix::fs::MetadataExt;
                        let stamp =
                            format!("{} {} {} {}", m.ino(), m.len(), m.mtime(), m.mtime_nsec());
                        (checker, stamp)
                    });
                (closure, checker)
            });
            tokio::time::timeout(safe_fs::TIME_LIMIT * 3, read)
                .await
                .map_err(|_| {
                    Error::Fs(FsError::TimedOut {
                        path: root.path().to_path_buf(),
                        op: "read the workspace modules the file imports",
                    })
                })?
                .map_err(|e| Error::Unexpected(format!("import closure: {e}")))?
        };
        for why in &closure.refused {
            fail(FailureReason::ImportRefused, why.clone());
        }
        let mut packages = Vec::new();
        let shown_path = |p: &Path| {
            p.strip_prefix(root.path())
                .unwrap_or(p)
                .to_string_lossy()
                .into_owned()
        };
        for node in &closure.order {
            let Origin::Package { check, .. } = &node.origin else {
                continue;
            };
            match &check.status {
                PackageStatus::Matches { hash } => packages.push(PackageModule {
                    module: node.name.clone(),
                    path: check
                        .source
                        .as_deref()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    olean: shown_path(&check.olean),
                    lake_hash: lake_trace::hex(*hash),
                }),
                PackageStatus::Stale(why) => fail(
                    FailureReason::PackageStale,
                    format!(
                        "{} ({}) is stale: {why}",
                        node.name,
                        shown_path(&check.olean)
                    ),
                ),
                PackageStatus::Unchecked(why) => fail(
                    FailureReason::PackageUnchecked,
                    format!("{} ({}) {why}", node.name, shown_path(&check.olean)),
                ),
            }
        }
        // The lakefile's settings: passed to the fresh build as Lake passes
        // them, unless they cannot be, or they let declarations skip the
        // kernel (a hatch, as in a source).
        let mut settings_hold = true;
        match &closure.settings {
            Err(why) => {
                settings_hold = false;
                fail(FailureReason::BuildFailed, why.clone());
            }
            Ok(settings) => {
                for why in &settings.unread {
                    settings_hold = false;
                    fail(FailureReason::BuildFailed, why.clone());
                }
                for (name, value) in settings.all_options() {
                    if hatches::option_bypasses_kernel(&name, &value) {
                        settings_hold = false;
                        fail(
                            FailureReason::Hatch,
                            format!(
                                "{} sets {name}={value}: declarations would skip the kernel's check",
                                settings.file
                            ),
                        );
                    }
                }
                if let Some(why) = closure
                    .workspace()
                    .find_map(|(n, _, _)| settings.args_for(&n.name).err())
                {
                    settings_hold = false;
                    fail(FailureReason::BuildFailed, why);
                }
            }
        }
        let packages_hold = closure.order.iter().all(|n| match &n.origin {
            Origin::Package { check, .. } => matches!(check.status, PackageStatus::Matches { .. }),
            _ => true,
        });

        // The source scan: every workspace source of the closure.
        let mut found: Vec<HatchHit> = Vec::new();
        for (node, node_rel, source) in closure.workspace() {
            let path = if node.name == module {
                shown.clone()
            } else {
                node_rel.to_string_lossy().into_owned()
            };
            found.extend(
                hatches::scan(source)
                    .iter()
                    .map(|h| hatch(&path, source, h)),
            );
        }
        let failing: BTreeSet<String> = found
            .iter()
            .filter(|h| h.fails)
            .map(|h| format!("{} at {}:{}", h.kind, h.path, h.range.start.line))
            .collect();
        for f in failing {
            fail(FailureReason::Hatch, f);
        }

        let mut tier = Tier::None;
        let mut checked: Vec<CheckedDeclaration> = Vec::new();
        let mut counts = (0, 0);
        let mut stale = BTreeSet::new();
        let mut cached = false;
        if closure.refused.is_empty() && packages_hold && settings_hold {
            let replays = checker.as_ref().map(|(_, stamp)| stamp.as_str());
            let key = verdict_key(&root, &module, &closure, replays, &named, &allowed);
            let hit = match key.as_deref().and_then(verdicts::get) {
                // Answered before for this very key; the workspace's own
                // `.olean`s are compared again (they may have been written
                // since), which needs the fresh ones still in the cache.
                Some(v) => self.stale_oleans(&root, &closure).await.map(|s| (v, s)),
                None => None,
            };
            let verdict = match hit {
                Some((v, s)) => {
                    cached = true;
                    stale = s;
                    Verdict {
                        rebuilt: 0,
                        reused: closure.workspace().count() as u32,
                        ..(*v).clone()
                    }
                }
                None => {
                    let ask = Fresh {
                        tc: &tc,
                        closure: &closure,
                        checker: checker.as_ref().map(|(path, _)| path.as_path()),
                        named: &named,
                        allowed: &allowed,
                        module: &module,
                        shown: &shown,
                    };
                    let (v, s) = self.fresh_verdict(&bound.rt, &root, &ask).await?;
                    stale = s;
                    if let (Some(key), true) = (&key, v.cacheable()) {
                        verdicts::put(key.clone(), v.clone());
                    }
                    v
                }
            };
            for f in &verdict.failures {
                fail(f.reason, f.detail.clone());
            }
            checked = verdict.checked;
            tier = verdict.tier;
            counts = (verdict.rebuilt, verdict.reused);
        }
        if disk_changed {
            fail(
                FailureReason::DiskChanged,
                format!(
                    "{shown} changed on disk since version {}: sync and verify again",
                    args.version
                ),
            );
        }
        let imports = closure
            .workspace()
            .filter(|(n, _, _)| n.name != module)
            .map(|(n, node_rel, source)| ImportedSource {
                module: n.name.clone(),
                path: node_rel.to_string_lossy().into_owned(),
                sha256: sha256::hex(source.as_bytes()),
                stale: stale.contains(&n.name),
            })
            .collect();
        Ok(VerifyResult {
            workspace: root.descriptor(),
            path: shown,
            version: args.version,
            certified: failures.is_empty() && tier != Tier::None,
            tier,
            failures,
            declarations: checked,
            hatches: found,
            allowed_axioms: allowed,
            provenance: Provenance {
                source_sha256: sha256::hex(text.as_bytes()),
                disk_changed,
                imports,
                packages,
                stale: stale.contains(&module),
                rebuilt: counts.0,
                reused: counts.1,
                cached,
                lean_version: Some(tc.version.clone()),
                server: crate::identity::server_info(),
            },
        })
    }

    /// The workspace modules whose own `.olean` is missing or differs from
    /// the fresh build (by content hash); `None` when a fresh one is not in
    /// the cache (pruned, or never built).
    async fn stale_oleans(&self, root: &Root, closure: &Closure) -> Option<BTreeSet<String>> {
        let mut pairs: Vec<(String, PathBuf, PathBuf)> = Vec::new();
        for (n, rel, _) in closure.workspace() {
            let fresh = certify::fresh_artifact(closure, n, "olean")?;
            let own = root
                .path()
                .join(".lake/build/lib/lean")
                .join(rel)
                .with_extension("olean");
            pairs.push((n.name.clone(), own, fresh));
        }
        let compare = tokio::task::spawn_blocking(move || {
            let mut stale = BTreeSet::new();
            for (name, own, fresh) in pairs {
                let fresh = file_sha256(&fresh)?;
                if file_sha256(&own).as_ref() != Some(&fresh) {
                    stale.insert(name);
                }
            }
            Some(stale)
        });
        tokio::time::timeout(safe_fs::TIME_LIMIT * 6, compare)
            .await
            .ok()
            .and_then(|r| r.ok())
            .flatten()
    }

    /// The verdict of a fresh build: the build, the check module, the axiom
    /// origins, the replay; and the workspace `.olean`s that are stale.
    async fn fresh_verdict(
        &self,
        rt: &Runtime,
        root: &Root,
        ask: &Fresh<'_>,
    ) -> Result<(Verdict, BTreeSet<String>)> {
        let mut failures = Vec::new();
        let mut fail =
            |reason: FailureReason, detail: String| failures.push(VerifyFailure { reason, detail });
        let (tc, closure) = (ask.tc, ask.closure);
        let mut verdict = Verdict {
            failures: Vec::new(),
            checked: Vec::new(),
            tier: Tier::None,
            rebuilt: 0,
            reused: 0,
        };
        let mut stale = BTreeSet::new();
        match certify::build(tc, closure, rt.timeouts.sync).await {
            Err(BuildError::Failed { module: m, output }) => fail(
                FailureReason::BuildFailed,
                format!("{m} does not compile: {}", output.trim()),
            ),
            Err(BuildError::TimedOut { module: m, limit }) => fail(
                FailureReason::BuildFailed,
                format!(
                    "building {m} took longer than {} s (LEAN_BEAM_SYNC_TIMEOUT_SECS)",
                    limit.as_secs()
                ),
            ),
            Err(BuildError::Setup(why)) => return Err(Error::Unexpected(why)),
            Ok(built) => {
                verdict.rebuilt = built.rebuilt;
                verdict.reused = built.reused;
                stale = self.stale_oleans(root, closure).await.unwrap_or_default();
                let targets = if ask.named.is_empty() {
                    let file_node = closure.order.last().expect("the file");
                    let ilean = match built.artifact(file_node, "ilean") {
                        Some(p) => {
                            let at = p.clone();
                            safe_fs::off_runtime(&at, "read the fresh .ilean", move || {
                                safe_fs::read_regular_blocking(
                                    &p,
                                    safe_fs::Links::Refuse,
                                    safe_fs::DEFAULT_MAX_FILE_BYTES,
                                    safe_fs::Oversize::Refuse,
                                )
                            })
                            .await
                            .ok()
                        }
                        None => None,
                    };
                    match ilean.as_ref().and_then(|c| certify::declarations(&c.bytes)) {
                        Some(names) => {
                            // A name Lean prints that is not one name to the
                            // lexer (a component a macro made that cannot be
                            // quoted) is never pasted.
                            let (ok, odd): (Vec<String>, Vec<String>) =
                                names.into_iter().partition(|n| check_name(n).is_ok());
                            for n in odd {
                                fail(
                                    FailureReason::UnknownDeclaration,
                                    format!(
                                        "{n:?}: a declaration whose name cannot be written as one Lean name"
                                    ),
                                );
                            }
                            ok.into_iter()
                                .map(|name| Declaration {
                                    name,
                                    reference: None,
                                })
                                .collect()
                        }
                        None => {
                            return Err(Error::Unexpected(format!(
                                "the fresh build of {} left no readable .ilean",
                                ask.module
                            )));
                        }
                    }
                } else {
                    ask.named.to_vec()
                };
                if targets.is_empty() {
                    fail(
                        FailureReason::NoDeclarations,
                        format!("Lean reports no declarations in {}", ask.shown),
                    );
                }
                let limit = rt.timeouts.request;
                let (check_text, questions) = check_module(ask.module, &targets);
                let messages = certify::check(tc, &built.lean_path, check_text, limit)
                    .await
                    .map_err(Error::Unexpected)?;
                verdict.checked = answers(&targets, &questions, &messages, &mut fail);
                self.judge_axioms(tc, closure, ask.allowed, &mut verdict.checked, &mut fail)
                    .await?;
                verdict.tier = Tier::Rebuilt;
                if let Some(checker) = ask.checker {
                    match replay(checker, closure, &built, limit).await {
                        Ok(()) => verdict.tier = Tier::Replayed,
                        Err(why) => fail(FailureReason::CheckFailed, why),
                    }
                }
            }
        }
        verdict.failures = failures;
        Ok((verdict, stale))
    }

    /// Sorry, axioms outside the allowlist, and allowed axioms that are not
    /// the toolchain's own.
    async fn judge_axioms(
        &self,
        tc: &Toolchain,
        closure: &Closure,
        allowed: &[String],
        checked: &mut [CheckedDeclaration],
        fail: &mut impl FnMut(FailureReason, String),
    ) -> Result<()> {
        let mut used: BTreeSet<String> = BTreeSet::new();
        for c in checked.iter() {
            for axiom in c.axioms.iter().flatten() {
                if axiom == "sorryAx" {
                    fail(
                        FailureReason::Sorry,
                        format!("{} depends on sorryAx", c.name),
                    );
                } else if !allowed.contains(axiom) {
                    fail(
                        FailureReason::Axiom,
                        format!("{} depends on {axiom}, not allowed", c.name),
                    );
                } else {
                    used.insert(axiom.clone());
                }
            }
        }
        if used.is_empty() {
            return Ok(());
        }
        // The toolchain's modules the closure imports, alone: an axiom they
        // declare is the one the full environment has (Lean refuses two
        // declarations of one name).
        let roots: BTreeSet<&str> = closure
            .order
            .iter()
            .filter(|n| matches!(n.origin, Origin::Toolchain))
            .map(|n| n.name.as_str())
            .collect();
        let mut text = String::from("prelude\n");
        for r in &roots {
            text.push_str(&format!("import {r}\n"));
        }
        let first = roots.len() as u32 + 2;
        let used: Vec<String> = used.into_iter().collect();
        for axiom in &used {
            text.push_str(&format!("#print axioms _root_.{axiom}\n"));
        }
        let messages = certify::check(tc, "", text, Duration::from_secs(300))
            .await
            .map_err(Error::Unexpected)?;
        let header_failed = messages.iter().any(|m| m.error && m.line < first);
        for (i, axiom) in used.iter().enumerate() {
            let line = first + i as u32;
            let own = !header_failed
                && !messages.iter().any(|m| m.error && m.line == line)
                && messages
                    .iter()
                    .any(|m| m.line == line && parse_axioms(&m.text).is_some());
            if !own {
                fail(
                    FailureReason::AxiomOrigin,
                    format!(
                        "{axiom} is not the toolchain's own axiom: the workspace (or a package) declares it"
                    ),
                );
            }
        }
        Ok(())
    }
}

/// The kernel replay of every workspace module of the closure with the
/// toolchain's `leanchecker` (where it ships one).
async fn replay(
    checker: &Path,
    closure: &Closure,
    built: &certify::Built,
    limit: Duration,
) -> std::result::Result<(), String> {
    let modules: Vec<String> = closure
        .workspace()
        .map(|(n, _, _)| n.name.clone())
        .collect();
    let env = vec![("LEAN_PATH".to_string(), built.lean_path.clone())];
    let run =
        compiler::run_program(checker, &modules, &env, &std::env::temp_dir(), None, limit).await;
    match run {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "the kernel replay ({}) failed: {}{}",
            checker.display(),
            compiler::tail(&o.stdout),
            compiler::tail(&o.stderr)
        )),
        Err(e) => Err(format!(
            "the kernel replay ({}) did not run: {e:?}",
            checker.display()
        )),
    }
}

/// What a fresh verdict needs.
struct Fresh<'a> {
    tc: &'a Toolchain,
    closure: &'a Closure,
    checker: Option<&'a Path>,
    named: &'a [Declaration],
    allowed: &'a [String],
    module: &'a str,
    shown: &'a str,
}
