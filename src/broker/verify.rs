//! `lean_verify`: certify declarations of a synced version in one call.
//!
//! Lean decides what it can: the file's text with `#print axioms` of each
//! declaration and `example : <reference> := @<decl>` for each reference
//! appended is elaborated in a shadow slot of the document (never the file),
//! so axioms are what Lean's own command reports and a reference matches
//! exactly when Lean accepts the declaration at the reference's type. The
//! source scan (`broker::hatches`) covers the file and the workspace modules
//! it imports, transitively. The verdict names the SHA-256 of every source it
//! read, the Lean version (`lean --version` of the workspace's toolchain) and
//! this server's version; an imported module whose `.olean` is older than its
//! source fails it, since Lean's answers come from the `.olean`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::Broker;
use super::diagnostics::{self, ERROR};
use super::error::{Error, Result};
use super::hatches::{self, Hit};
use super::importers::ImportGraph;
use super::progress::ProgressSink;
use super::runtime::Runtime;
use super::{compiler, shadow, snippets};
use crate::results::{
    CheckedDeclaration, FailureReason, HatchHit, ImportedSource, Provenance, Range, ReferenceCheck,
    VerifyFailure, VerifyResult,
};
use crate::safe_fs::{self, FsError};
use crate::sha256;

/// Axioms allowed when the call names none: the three of classical Lean.
pub const DEFAULT_AXIOMS: &[&str] = &["propext", "Classical.choice", "Quot.sound"];

/// How long `lean --version` may take.
const VERSION_LIMIT: Duration = Duration::from_secs(30);

/// A workspace module the file imports, as read for the scan.
struct Module {
    name: String,
    rel: PathBuf,
    text: Option<String>,
    /// Its `.olean` is missing or older than its source.
    stale: bool,
}

/// Read the workspace modules `text` imports, transitively (off the
/// runtime: the import graph and the sources are files).
async fn imported_modules(root: &Path, text: &str) -> Result<Vec<Module>> {
    let (root, text) = (root.to_path_buf(), text.to_string());
    let base = root.clone();
    let read = tokio::task::spawn_blocking(move || {
        let names = ImportGraph::new(&root).workspace_imports(&text);
        names
            .into_iter()
            .map(|name| {
                let rel: PathBuf = name.split('.').collect::<PathBuf>().with_extension("lean");
                let source = root.join(&rel);
                let text = safe_fs::read_regular_blocking(
                    &source,
                    safe_fs::Links::Follow,
                    safe_fs::DEFAULT_MAX_FILE_BYTES,
                    safe_fs::Oversize::Refuse,
                )
                .ok()
                .map(|c| String::from_utf8_lossy(&c.bytes).into_owned());
                let olean = root
                    .join(".lake/build/lib/lean")
                    .join(&rel)
                    .with_extension("olean");
                let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
                let stale = match (modified(&source), modified(&olean)) {
                    (Some(s), Some(o)) => o < s,
                    _ => true,
                };
                Module {
                    name,
                    rel,
                    text,
                    stale,
                }
            })
            .collect::<Vec<_>>()
    });
    tokio::time::timeout(safe_fs::TIME_LIMIT * 3, read)
        .await
        .map_err(|_| {
            Error::Fs(FsError::TimedOut {
                path: base,
                op: "read the workspace modules the file imports",
            })
        })?
        .map_err(|e| Error::Unexpected(format!("import scan: {e}")))
}

/// The first line of `lean --version` of the workspace's toolchain, read
/// once per runtime (a failed read is tried again next time).
async fn lean_version(broker: &Broker, rt: &Runtime) -> Option<String> {
    rt.lean_version
        .get_or_try_init(|| async {
            let args = ["--version".to_string()];
            let (_, run) =
                compiler::run(broker.launcher(), &rt.root, &args, None, VERSION_LIMIT).await;
            let output = run.ok().filter(|o| o.status.success()).ok_or(())?;
            let text = String::from_utf8_lossy(&output.stdout);
            text.lines().next().map(|l| l.trim().to_string()).ok_or(())
        })
        .await
        .ok()
        .cloned()
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

/// What `#print axioms` said: `'N' depends on axioms: [a, b]` or `'N'
/// does not depend on any axioms`.
fn parse_axioms(message: &str) -> Option<Vec<String>> {
    if message.ends_with("does not depend on any axioms") {
        return Some(Vec::new());
    }
    let list = message.split_once("depends on axioms: [")?.1;
    let list = list.trim_end().strip_suffix(']')?;
    Some(
        list.split(',')
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect(),
    )
}

/// Continuation lines of an appended command, indented so that they
/// continue it.
fn one_command(text: &str) -> String {
    text.trim().replace('\n', "\n  ")
}

/// A declaration name goes on a line of its own after `#print axioms`: one
/// Lean name (spaces only inside `«»`), no line break.
fn check_name(name: &str) -> Result<()> {
    let mut escaped = false;
    let spaced = name.chars().any(|c| {
        match c {
            '«' => escaped = true,
            '»' => escaped = false,
            _ => {}
        }
        c == '\n' || c == '\r' || (c.is_whitespace() && !escaped)
    });
    if name.is_empty() || spaced {
        return Err(Error::Argument {
            what: format!("declaration name {name:?}"),
            rule: "is not one Lean name: give it as `Namespace.name`, without spaces or line breaks",
        });
    }
    Ok(())
}

/// A declaration to certify, and the statement it must have, if any.
#[derive(Debug, Clone)]
pub struct Declaration {
    pub name: String,
    pub reference: Option<String>,
}

/// What `lean_verify` asks.
pub struct Verify<'a> {
    /// The workspace descriptor.
    pub workspace: &'a str,
    pub path: &'a str,
    pub version: u64,
    pub declarations: &'a [Declaration],
    pub allowed_axioms: &'a [String],
}

impl Broker {
    /// Certify declarations of a synced version (see the module's account).
    pub async fn verify(&self, sink: &dyn ProgressSink, args: &Verify<'_>) -> Result<VerifyResult> {
        let bound = self
            .bind(sink, args.workspace, args.path, args.version)
            .await?;
        let text = std::sync::Arc::clone(&bound.state.text);
        let shown = bound.doc.path.shown.clone();
        let allowed: Vec<String> = if args.allowed_axioms.is_empty() {
            DEFAULT_AXIOMS.iter().map(|a| a.to_string()).collect()
        } else {
            args.allowed_axioms.to_vec()
        };
        let mut failures = Vec::new();
        let mut fail =
            |reason: FailureReason, detail: String| failures.push(VerifyFailure { reason, detail });

        let targets: Vec<Declaration> = if args.declarations.is_empty() {
            hatches::theorems(&text)
                .into_iter()
                .map(|t| Declaration {
                    name: t.name,
                    reference: None,
                })
                .collect()
        } else {
            for d in args.declarations {
                check_name(&d.name)?;
            }
            args.declarations.to_vec()
        };
        if targets.is_empty() {
            fail(
                FailureReason::NoDeclarations,
                format!(
                    "{shown} declares no theorem this server can name: name the declarations to certify"
                ),
            );
        }

        // The shadow: the file, then one command per line per question.
        let mut shadow_text = text.to_string();
        if !shadow_text.ends_with('\n') {
            shadow_text.push('\n');
        }
        // Lines of the file come first; each question goes on a line of its own.
        let appended_line = shadow_text.matches('\n').count() as u32;
        shadow_text.push('\n');
        let mut line = appended_line + 1;
        // (line, declaration index, is the reference check)
        let mut questions: Vec<(u32, usize, bool)> = Vec::new();
        for (i, target) in targets.iter().enumerate() {
            questions.push((line, i, false));
            shadow_text.push_str(&format!("#print axioms {}\n", target.name));
            line += 1;
            if let Some(reference) = &target.reference {
                questions.push((line, i, true));
                let command = format!("example : {} := @{}\n", one_command(reference), target.name);
                line += command.matches('\n').count() as u32;
                shadow_text.push_str(&command);
            }
        }
        let root = bound.rt.root.clone();
        let pool = bound.rt.shadow_pool(&bound.doc.path);
        let elaborate = async {
            let mut slot = pool.acquire(&shadow_text).await;
            let done = shadow::elaborate(
                &bound.session,
                bound.rt.timeouts.sync,
                sink,
                &shown,
                &mut slot,
                shadow_text.clone(),
            )
            .await;
            if let Ok((_, snap)) = &done {
                let blocked = snippets::header_failed(snap, &shadow_text);
                slot.confirm_header((!blocked).then(|| shadow::header(&shadow_text)));
            }
            done
        };
        let (elaborated, modules, lean_version, disk_changed) = tokio::join!(
            elaborate,
            imported_modules(root.path(), &text),
            lean_version(self, &bound.rt),
            bound.disk_changed()
        );
        let (_, snap) = elaborated?;
        let modules = modules?;

        // What Lean answered, by the line of each question.
        let mut checked: Vec<CheckedDeclaration> = targets
            .iter()
            .map(|t| CheckedDeclaration {
                name: t.name.clone(),
                reference: t.reference.as_ref().map(|r| ReferenceCheck {
                    statement: r.clone(),
                    matches: true,
                    message: None,
                }),
                ..CheckedDeclaration::default()
            })
            .collect();
        let mut file_errors = 0usize;
        for d in snap.diagnostics.items() {
            let line = d
                .pointer("/range/start/line")
                .and_then(Value::as_u64)
                .unwrap_or(0) as u32;
            let message = diagnostics::message(d);
            let error = diagnostics::severity(d) == ERROR;
            if line < appended_line {
                file_errors += usize::from(error);
                continue;
            }
            // A question's messages start on its own line (continuation lines
            // of a reference belong to the question before them).
            let Some(&(_, i, is_reference)) = questions.iter().rev().find(|(l, _, _)| *l <= line)
            else {
                continue;
            };
            let entry = &mut checked[i];
            if is_reference {
                if error {
                    if let Some(r) = entry.reference.as_mut() {
                        r.matches = false;
                        r.message.get_or_insert_with(|| message.to_string());
                    }
                }
            } else if error {
                entry.error.get_or_insert_with(|| message.to_string());
            } else if let Some(axioms) = parse_axioms(message) {
                entry.axioms = Some(axioms);
            }
        }
        if file_errors > 0 {
            fail(
                FailureReason::FileErrors,
                format!(
                    "{shown} version {} has {file_errors} error(s)",
                    args.version
                ),
            );
        }
        for c in &mut checked {
            match &c.axioms {
                Some(axioms) => {
                    for axiom in axioms {
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
                        }
                    }
                }
                None => {
                    let why = c
                        .error
                        .get_or_insert_with(|| "Lean reported no axioms for it".to_string());
                    fail(
                        FailureReason::UnknownDeclaration,
                        format!("{}: {why}", c.name),
                    );
                }
            }
            if let Some(r) = &c.reference {
                if !r.matches {
                    fail(
                        FailureReason::ReferenceMismatch,
                        format!("{} does not have the type {}", c.name, r.statement),
                    );
                }
            }
        }

        // The source scan: the file, then its workspace imports.
        let mut found: Vec<HatchHit> = hatches::scan(&text)
            .iter()
            .map(|h| hatch(&shown, &text, h))
            .collect();
        let mut imports = Vec::new();
        for m in &modules {
            let path = m.rel.to_string_lossy().into_owned();
            match &m.text {
                Some(source) => {
                    found.extend(
                        hatches::scan(source)
                            .iter()
                            .map(|h| hatch(&path, source, h)),
                    );
                }
                None => fail(
                    FailureReason::Unscanned,
                    format!(
                        "{} is built in the workspace but its source {path} cannot be read",
                        m.name
                    ),
                ),
            }
            if m.stale {
                fail(
                    FailureReason::StaleOlean,
                    format!(
                        "{}: its .olean is missing or older than {path}; rebuild it (lean_save)",
                        m.name
                    ),
                );
            }
            imports.push(ImportedSource {
                module: m.name.clone(),
                path,
                sha256: m.text.as_deref().map(|t| sha256::hex(t.as_bytes())),
            });
        }
        let failing: BTreeSet<String> = found
            .iter()
            .filter(|h| h.fails)
            .map(|h| format!("{} at {}:{}", h.kind, h.path, h.range.start.line))
            .collect();
        for f in failing {
            fail(FailureReason::Hatch, f);
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
        Ok(VerifyResult {
            workspace: root.descriptor(),
            path: shown,
            version: args.version,
            certified: failures.is_empty(),
            failures,
            declarations: checked,
            hatches: found,
            allowed_axioms: allowed,
            provenance: Provenance {
                source_sha256: sha256::hex(text.as_bytes()),
                disk_changed,
                imports,
                lean_version,
                server: crate::identity::server_info(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_single_identifiers() {
        assert!(check_name("Ver.«odd name»").is_ok());
        assert!(check_name("Ver.odd name").is_err());
        assert!(check_name("").is_err());
        assert!(check_name("a\n#eval 1").is_err());
        assert!(check_name("Ver.no_axioms").is_ok());
    }

    #[test]
    fn print_axioms_answers_are_read() {
        assert_eq!(
            parse_axioms("'Fix.t' depends on axioms: [propext, sorryAx]"),
            Some(vec!["propext".to_string(), "sorryAx".to_string()])
        );
        assert_eq!(
            parse_axioms("'Fix.t' does not depend on any axioms"),
            Some(vec![])
        );
        assert_eq!(parse_axioms("unknown constant 'x'"), None);
    }
}
