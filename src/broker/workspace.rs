//! The local workspace descriptor: validation, canonicalization, and how
//! document paths resolve against it.
//!
//! The descriptor selects a Lean runtime; it is not a sandbox. Relative paths
//! resolve under the canonical root, absolute paths are canonicalized on their own
//! and may name files outside it (dependency sources, for example).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::surface::{ErrorCode, ToolError, Workspace};

/// Files whose presence makes a directory a Lean/Lake project.
pub const PROJECT_MARKERS: &[&str] = &["lean-toolchain", "lakefile.lean", "lakefile.toml"];

/// A validated, canonical workspace root.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Root(PathBuf);

impl Root {
    #[cfg(test)]
    pub fn for_tests(path: &str) -> Self {
        Root(PathBuf::from(path))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn display(&self) -> String {
        self.0.to_string_lossy().into_owned()
    }

    /// The canonical descriptor that results echo.
    pub fn descriptor(&self) -> Value {
        json!({ "root": self.display() })
    }
}

fn invalid(field: &str, value: &str, rule: &str) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidInput,
        format!("{field} {value:?}: {rule}"),
    )
    .with_data(json!({ "field": field, "value": value, "rule": rule }))
}

/// Validate a descriptor for an ordinary request: absolute, existing, a
/// directory, and a Lean/Lake project. Symlinked aliases resolve to one root.
pub fn resolve(workspace: &Workspace) -> Result<Root, ToolError> {
    let raw = workspace.root.as_str();
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(invalid(
            "workspace.root",
            raw,
            "must be an absolute path (relative roots are rejected; the server never guesses a base directory)",
        ));
    }
    let canonical = path.canonicalize().map_err(|e| {
        invalid(
            "workspace.root",
            raw,
            &format!("must name an existing directory ({e})"),
        )
    })?;
    if !canonical.is_dir() {
        return Err(invalid(
            "workspace.root",
            raw,
            "must be a directory (the root of a Lean/Lake project), not a file",
        ));
    }
    if !PROJECT_MARKERS.iter().any(|m| canonical.join(m).is_file()) {
        return Err(invalid(
            "workspace.root",
            raw,
            "is not a Lean/Lake project: it has none of lean-toolchain, lakefile.lean, lakefile.toml",
        ));
    }
    Ok(Root(canonical))
}

/// Resolve a descriptor for cache eviction: a previously echoed canonical root
/// is accepted even if the directory has since disappeared.
pub fn resolve_for_eviction(workspace: &Workspace) -> Result<Root, ToolError> {
    let raw = workspace.root.as_str();
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(invalid("workspace.root", raw, "must be an absolute path"));
    }
    Ok(Root(
        path.canonicalize().unwrap_or_else(|_| path.to_path_buf()),
    ))
}

/// A resolved document path: the canonical file and how results name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DocPath {
    pub file: PathBuf,
    /// Relative to the root when the file is inside it, else absolute.
    pub shown: String,
}

pub fn resolve_path(root: &Root, path: &str) -> Result<DocPath, ToolError> {
    if path.is_empty() {
        return Err(invalid("path", path, "must name a .lean file"));
    }
    let joined = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        root.path().join(path)
    };
    let file = joined.canonicalize().map_err(|e| {
        invalid(
            "path",
            path,
            &format!(
                "must name an existing file ({e}); relative paths resolve under {}",
                root.display()
            ),
        )
    })?;
    if !file.is_file() {
        return Err(invalid("path", path, "must name a file, not a directory"));
    }
    if file.extension().and_then(|e| e.to_str()) != Some("lean") {
        return Err(invalid("path", path, "must name a .lean file"));
    }
    Ok(DocPath {
        shown: shown_path(root, &file),
        file,
    })
}

/// How a file is named in results: workspace-relative when inside the root.
pub fn shown_path(root: &Root, file: &Path) -> String {
    match file.strip_prefix(root.path()) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => file.to_string_lossy().into_owned(),
    }
}
