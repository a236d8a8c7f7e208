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
    /// An allowed axiom's name is declared by the workspace or a package,
    /// not by the toolchain's own library.
    AxiomOrigin,
    /// Lean did not answer `#print axioms` for a name.
    UnknownDeclaration,
    /// A declaration's type is not its reference statement.
    ReferenceMismatch,
    /// A module of the closure (or the file) does not compile.
    BuildFailed,
    /// An import is refused (`..`, a link out of the root, no source) or
    /// not found.
    ImportRefused,
    /// A module of another Lake package whose build cannot be checked
    /// against its sources: no Lake trace (`.trace`), or one that does not
    /// record the source or is not Lake's format.
    PackageUnchecked,
    /// A module of another Lake package whose recorded inputs (its source,
    /// an import's `.olean`) changed since Lake built it: `lake build`.
    PackageStale,
    /// The generated check module did not elaborate.
    CheckFailed,
    /// An escape hatch that fails by itself (the kernel bypass).
    Hatch,
    /// The file on disk is no longer the version verified.
    DiskChanged,
    /// Nothing to certify.
    NoDeclarations,
}

/// How far the certification got: `rebuilt` (the module and its workspace
/// closure compiled fresh, checks in a separate module), `replayed` (also
/// every declaration replayed through the kernel), `none` (no fresh build).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    None,
    Rebuilt,
    Replayed,
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

/// An imported workspace source the verdict rests on, as built.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ImportedSource {
    pub module: String,
    pub path: String,
    /// SHA-256 of the text that was built.
    pub sha256: String,
    /// Present (true) when the workspace's own `.olean` is missing or is not
    /// what this text builds to (Lean's editor view of it is out of date).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

/// A module of another Lake package the verdict rests on: its build, taken
/// because every input Lake recorded for it still matches.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PackageModule {
    pub module: String,
    /// Its source, relative to the workspace root.
    pub path: String,
    /// The `.olean` used, relative to the workspace root.
    pub olean: String,
    /// Lake's hash of the source (16 hex digits, as its traces write it).
    pub lake_hash: String,
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
    /// Modules of other Lake packages taken from their builds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<PackageModule>,
    /// Present (true) when the workspace's own `.olean` of the file is
    /// missing or is not what the verified version builds to.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    /// Modules compiled for this verdict, and those taken from the private
    /// cache (same source closure).
    pub rebuilt: u32,
    pub reused: u32,
    /// Present (true) when the verdict is that of an earlier verify with the
    /// same whole key (every module's source closure, the lakefile's
    /// arguments, the Lean version, the request): nothing was built or run;
    /// `stale` is compared again.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// `lean --version` of the workspace's toolchain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lean_version: Option<String>,
    /// This server: name and version.
    #[schemars(schema_with = "super::passthrough::server_info")]
    pub server: Value,
}

/// `lean_verify`: the verdict and everything it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct VerifyResult {
    pub workspace: WorkspaceEcho,
    pub path: String,
    pub version: u64,
    pub certified: bool,
    pub tier: Tier,
    /// Why not, one entry per reason (empty when certified).
    pub failures: Vec<VerifyFailure>,
    pub declarations: Vec<CheckedDeclaration>,
    pub hatches: Vec<HatchHit>,
    pub allowed_axioms: Vec<String>,
    pub provenance: Provenance,
}
