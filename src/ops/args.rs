//! The generated tool arguments as the broker's asks: positions and pinned
//! versions, the enums the broker has its own of, and the two-valued
//! flags as the broker's named choices.

use crate::broker::{self, After, At, Pinned, References, Signatures};
use crate::surface::*;

impl From<DiagnosticScope> for broker::DiagnosticScope {
    fn from(scope: DiagnosticScope) -> Self {
        match scope {
            DiagnosticScope::Errors => broker::DiagnosticScope::Errors,
            DiagnosticScope::All => broker::DiagnosticScope::All,
        }
    }
}

impl From<GoalsMode> for broker::GoalsMode {
    fn from(mode: GoalsMode) -> Self {
        match mode {
            GoalsMode::Before => broker::GoalsMode::Before,
            GoalsMode::After => broker::GoalsMode::After,
        }
    }
}

/// The arguments of every tool that names a position of a pinned version.
pub trait Positioned {
    fn position(&self) -> At<'_>;
}

macro_rules! positioned {
    ($($args:ty),* $(,)?) => {$(
        impl Positioned for $args {
            fn position(&self) -> At<'_> {
                At {
                    workspace: &self.workspace.root,
                    path: &self.path,
                    version: self.version,
                    line: self.line,
                    character: self.character,
                }
            }
        }
    )*};
}

positioned!(
    LeanRunAtArgs,
    LeanRunAtHandleArgs,
    LeanHoverArgs,
    LeanSignatureHelpArgs,
    LeanCompletionsArgs,
    LeanDefinitionArgs,
    LeanReferencesArgs,
    LeanGoalsArgs,
    LeanTermGoalArgs,
);

/// The position a call names.
pub fn at(args: &impl Positioned) -> At<'_> {
    args.position()
}

/// A document version a call names.
pub fn pinned<'a>(workspace: &'a Workspace, path: &'a str, version: u64) -> Pinned<'a> {
    Pinned {
        workspace: &workspace.root,
        path,
        version,
    }
}

/// The handle a continuation names, in its document.
pub fn after<'a>(workspace: &'a Workspace, path: &'a str, handle: &'a str) -> After<'a> {
    After {
        workspace: &workspace.root,
        path,
        handle,
    }
}

pub fn references(include_declaration: bool) -> References {
    if include_declaration {
        References::WithDeclaration
    } else {
        References::WithoutDeclaration
    }
}

pub fn signatures(add: bool) -> Signatures {
    if add {
        Signatures::Added
    } else {
        Signatures::Omitted
    }
}

/// `lean_todo`'s range, kinds and suggestion wish.
pub fn todo(args: &LeanTodoArgs) -> broker::Todo<'_> {
    broker::Todo {
        pinned: pinned(&args.workspace, &args.path, args.version),
        start: (
            args.start_line.unwrap_or(0),
            args.start_character.unwrap_or(0),
        ),
        end: args
            .end_line
            .map(|line| (line, args.end_character.unwrap_or(u64::MAX))),
        kinds: args
            .kinds
            .iter()
            .map(|kind| match kind {
                TodoKind::Sorry => crate::results::TodoItemKind::Sorry,
                TodoKind::Hole => crate::results::TodoItemKind::Hole,
                TodoKind::Diagnostic => crate::results::TodoItemKind::Diagnostic,
                TodoKind::CodeAction => crate::results::TodoItemKind::CodeAction,
                TodoKind::IncompleteProof => crate::results::TodoItemKind::IncompleteProof,
            })
            .collect(),
        suggest: args.suggest == Suggest::Basic,
    }
}

pub fn run_code(args: &LeanRunCodeArgs) -> broker::RunCode<'_> {
    broker::RunCode {
        workspace: &args.workspace.root,
        code: &args.code,
        max_heartbeats: args.max_heartbeats,
        timeout_ms: args.timeout_ms,
    }
}

pub fn declarations(declarations: &[Declaration]) -> Vec<broker::Declaration> {
    declarations
        .iter()
        .map(|d| broker::Declaration {
            name: d.name.clone(),
            reference: d.reference.clone(),
        })
        .collect()
}

pub fn verify<'a>(
    args: &'a LeanVerifyArgs,
    declarations: &'a [broker::Declaration],
) -> broker::Verify<'a> {
    broker::Verify {
        workspace: &args.workspace.root,
        path: &args.path,
        version: args.version,
        declarations,
        allowed_axioms: &args.allowed_axioms,
    }
}
