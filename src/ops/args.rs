//! The generated tool arguments as the broker's asks: positions and pinned
//! versions, the enums the broker has its own of, and the two-valued
//! flags as the broker's named choices.

use crate::broker::{self, After, At, Broker, Pinned, References, Signatures, Spot};
use crate::results::DeclarationAt;
use crate::surface::*;

impl From<DiagnosticScope> for broker::DiagnosticScope {
    fn from(scope: DiagnosticScope) -> Self {
        match scope {
            DiagnosticScope::Errors => broker::DiagnosticScope::Errors,
            DiagnosticScope::All => broker::DiagnosticScope::All,
        }
    }
}

impl From<SyncScope> for broker::DiagnosticScope {
    fn from(scope: SyncScope) -> Self {
        use crate::results::DiagnosticCategory as C;
        match scope {
            SyncScope::Errors => broker::DiagnosticScope::Errors,
            SyncScope::All => broker::DiagnosticScope::All,
            SyncScope::Error => broker::DiagnosticScope::Only(C::Error),
            SyncScope::UnsolvedGoals => broker::DiagnosticScope::Only(C::UnsolvedGoals),
            SyncScope::Sorry => broker::DiagnosticScope::Only(C::Sorry),
            SyncScope::Linter => broker::DiagnosticScope::Only(C::Linter),
            SyncScope::Warning => broker::DiagnosticScope::Only(C::Warning),
            SyncScope::Suggestion => broker::DiagnosticScope::Only(C::Suggestion),
            SyncScope::Info => broker::DiagnosticScope::Only(C::Info),
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
    LeanHoverArgs,
    LeanSignatureHelpArgs,
    LeanCompletionsArgs,
    LeanDefinitionArgs,
    LeanReferencesArgs,
);

/// The position a call names.
pub fn at(args: &impl Positioned) -> At<'_> {
    args.position()
}

impl From<DeclSpot> for Spot {
    fn from(spot: DeclSpot) -> Self {
        match spot {
            DeclSpot::Start => Spot::Start,
            DeclSpot::End => Spot::End,
        }
    }
}

/// What a proof-loop call names its place with: `line` and `character`, or
/// `declaration` (with `at`), of a pinned version.
pub struct Address<'a> {
    pub pinned: Pinned<'a>,
    pub line: Option<u64>,
    pub character: Option<u64>,
    pub declaration: Option<&'a str>,
    pub at: Option<DeclSpot>,
}

/// The arguments of the tools that take a position or a declaration.
pub trait Addressed {
    fn address(&self) -> Address<'_>;
}

macro_rules! addressed {
    ($($args:ty),* $(,)?) => {$(
        impl Addressed for $args {
            fn address(&self) -> Address<'_> {
                Address {
                    pinned: pinned(&self.workspace, &self.path, self.version),
                    line: self.line,
                    character: self.character,
                    declaration: self.declaration.as_deref(),
                    at: self.at,
                }
            }
        }
    )*};
}

addressed!(
    LeanRunAtArgs,
    LeanRunAtHandleArgs,
    LeanGoalsArgs,
    LeanTermGoalArgs
);

fn invalid(message: &str) -> ToolError {
    ToolError::new(ErrorCode::InvalidParams, message)
}

impl<'a> Address<'a> {
    /// The position named, a declaration resolved in the pinned version
    /// (its first `sorry` or hole, or `at` the start or end of its proof),
    /// with the declaration to echo.
    pub async fn resolve(
        &self,
        broker: &Broker,
        ctx: &CallContext,
    ) -> Result<(At<'a>, Option<DeclarationAt>), ToolError> {
        let at = |line, character| At {
            workspace: self.pinned.workspace,
            path: self.pinned.path,
            version: self.pinned.version,
            line,
            character,
        };
        match (self.line, self.character, self.declaration) {
            (Some(line), Some(character), None) if self.at.is_none() => {
                Ok((at(line, character), None))
            }
            (None, None, Some(name)) => {
                let spot = self.at.map_or(Spot::Gap, Spot::from);
                let found = broker
                    .declaration(ctx, &self.pinned, name, Some(spot))
                    .await?;
                let place = at(found.at.line.into(), found.at.character.into());
                Ok((place, Some(found.at)))
            }
            (None, None, None) => Err(invalid(
                "name a place: line and character, or declaration (with at, optionally)",
            )),
            (_, _, Some(_)) => Err(invalid(
                "give either line and character or declaration, not both",
            )),
            (_, _, None) if self.at.is_some() => Err(invalid(
                "at goes with declaration, not with line and character",
            )),
            _ => Err(invalid("give both line and character")),
        }
    }
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

/// `lean_todo`'s range (or, given, a declaration's), kinds and suggestion wish.
pub fn todo(args: &LeanTodoArgs, range: Option<((u32, u32), (u32, u32))>) -> broker::Todo<'_> {
    let wide = |(line, character): (u32, u32)| (u64::from(line), u64::from(character));
    broker::Todo {
        pinned: pinned(&args.workspace, &args.path, args.version),
        start: range.map_or(
            (
                args.start_line.unwrap_or(0),
                args.start_character.unwrap_or(0),
            ),
            |(start, _)| wide(start),
        ),
        end: range.map(|(_, end)| wide(end)).or_else(|| {
            args.end_line
                .map(|line| (line, args.end_character.unwrap_or(u64::MAX)))
        }),
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
