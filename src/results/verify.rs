//! The result of `lean_verify`.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::{Range, WorkspaceEcho};

/// Why a verdict is not `certified`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureReason {
    /// A declaration depends on `sorryAx` (allowed or not).
    Sorry,
    /// A declaration depends on an axiom outside the allowlist.
    Axiom,
    /// Lean did not answer `#print axioms` for a name.
    UnknownDeclaration,
    /// A declaration's type is not its reference statement.
    ReferenceMismatch,
    /// The verified version has errors.
    FileErrors,
    /// An escape hatch that fails by itself (the kernel bypass).
    Hatch,
    /// An imported workspace module's `.olean` is missing or older than its
    /// source: Lean's answers could come from other text.
    StaleOlean,
    /// An imported module built here has no readable source to scan.
    Unscanned,
    /// The file on disk is no longer the version verified.
    DiskChanged,
    /// Nothing to certify.
    NoDeclarations,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct VerifyFailure {
    pub reason: FailureReason,
    pub detail: String,
}

/// A declaration's type against its reference statement.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ReferenceCheck {
    pub statement: String,
    pub matches: bool,
    /// Lean's error when it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One declaration as Lean answered for it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct CheckedDeclaration {
    pub name: String,
    /// As `#print axioms` lists them; left out when Lean did not answer (`error`
    /// says why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub axioms: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<ReferenceCheck>,
}

/// An escape hatch in the file or an imported workspace module.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct HatchHit {
    /// `sorry`, `admit`, `native_decide`, `implemented_by`, `extern`,
    /// `unsafe`, `axiom`, `opaque_implemented`, `skip_kernel_tc`,
    /// `max_heartbeats_0`.
    pub kind: String,
    /// The workspace-relative path of the source it is in.
    pub path: String,
    pub range: Range,
    pub text: String,
    /// It fails the verdict by itself (otherwise the axiom check decides).
    pub fails: bool,
}

/// An imported workspace source the verdict rests on.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ImportedSource {
    pub module: String,
    pub path: String,
    /// SHA-256 of the source; left out when it could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// What the verdict is tied to.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Provenance {
    /// SHA-256 of the verified version's text.
    pub source_sha256: String,
    /// Present (true) when the file on disk is no longer that version.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disk_changed: bool,
    pub imports: Vec<ImportedSource>,
    /// `lean --version` of the workspace's toolchain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lean_version: Option<String>,
    /// This server: name and version.
    pub server: Value,
}

/// `lean_verify`: the verdict and everything it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct VerifyResult {
    pub workspace: WorkspaceEcho,
    pub path: String,
    pub version: u64,
    pub certified: bool,
    /// Why not, one entry per reason (empty when certified).
    pub failures: Vec<VerifyFailure>,
    pub declarations: Vec<CheckedDeclaration>,
    pub hatches: Vec<HatchHit>,
    pub allowed_axioms: Vec<String>,
    pub provenance: Provenance,
}
