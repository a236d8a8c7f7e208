//! What the client tells the server in `initialize`.

use std::path::Path;

use serde_json::{Value, json};

use super::uri;

/// The `initialize` params for a server whose workspace root is `cwd`.
pub(super) fn initialize_params(cwd: &Path) -> Value {
    let root = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    json!({
        "processId": std::process::id(),
        "clientInfo": { "name": crate::identity::NAME, "version": crate::identity::VERSION },
        "rootUri": uri::path_to_uri(&root),
        "workspaceFolders": [{ "uri": uri::path_to_uri(&root), "name": root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default() }],
        "capabilities": client_capabilities(),
        "initializationOptions": { "editDelay": 0 },
    })
}

/// Plain LSP client capabilities. The `lean` section only selects the current
/// RPC wire format (references as `{"__rpcref": …}`; without it Lean 4.35 uses
/// the legacy `{"p": …}`); it does not ask for silent ("Goals accomplished!") or
/// incremental diagnostics, so every publish is the complete visible set.
fn client_capabilities() -> Value {
    json!({
        "general": { "positionEncodings": ["utf-16"] },
        "textDocument": {
            "synchronization": { "didSave": false, "willSave": false, "willSaveWaitUntil": false },
            "publishDiagnostics": { "relatedInformation": true, "versionSupport": true, "tagSupport": { "valueSet": [1, 2] } },
            "hover": { "contentFormat": ["markdown", "plaintext"] },
            "definition": { "linkSupport": true },
            "documentSymbol": { "hierarchicalDocumentSymbolSupport": true },
        },
        "window": { "workDoneProgress": false },
        "lean": { "rpcWireFormat": "v1" },
    })
}
