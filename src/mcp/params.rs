//! Checks of the `params` of the protocol's own methods (`initialize`,
//! `tools/list`) and the error for a tool that is not served.

use serde_json::{Map, Value};

use super::jsonrpc::RpcError;
use crate::surface::ToolSet;

pub fn only_members(params: Option<&Map<String, Value>>, allowed: &[&str]) -> Result<(), RpcError> {
    if let Some(extra) = params.and_then(|p| p.keys().find(|k| !allowed.contains(&k.as_str()))) {
        return Err(RpcError::invalid_params(format!(
            "undeclared params member `{extra}` (allowed: {})",
            allowed.join(", ")
        )));
    }
    Ok(())
}

pub fn check_tools_list(params: Option<&Map<String, Value>>) -> Result<(), RpcError> {
    only_members(params, &["cursor", "_meta"])?;
    if params.is_some_and(|p| p.contains_key("cursor")) {
        return Err(RpcError::invalid_params(
            "invalid cursor: tools/list returns every tool in one page and never issues a cursor",
        ));
    }
    Ok(())
}

/// The revision the client requested, once the params are found well-formed.
pub fn validate_initialize(params: Option<&Map<String, Value>>) -> Result<&str, RpcError> {
    let params = params.ok_or_else(|| RpcError::invalid_params("initialize needs params"))?;
    let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
        return Err(RpcError::invalid_params(
            "initialize needs a string `protocolVersion`",
        ));
    };
    if !params.get("capabilities").is_some_and(Value::is_object) {
        return Err(RpcError::invalid_params(
            "initialize needs a `capabilities` object",
        ));
    }
    let info_ok = params
        .get("clientInfo")
        .and_then(Value::as_object)
        .is_some_and(|info| info.get("name").is_some_and(Value::is_string));
    if !info_ok {
        return Err(RpcError::invalid_params(
            "initialize needs `clientInfo` with a string `name`",
        ));
    }
    Ok(requested)
}

/// `-32602` for an unknown tool, pointing raw LSP method names at the tool that
/// serves that need, and a tool left out of this server's set at the option
/// that serves it.
pub fn unknown_tool(name: &str, tools: &ToolSet) -> RpcError {
    const LSP_HINTS: &[(&str, &str)] = &[
        ("textDocument/hover", "lean_hover"),
        ("textDocument/definition", "lean_definition"),
        ("textDocument/references", "lean_references"),
        ("textDocument/documentSymbol", "lean_document_symbols"),
        ("textDocument/signatureHelp", "lean_signature_help"),
        ("workspace/symbol", "lean_workspace_symbols"),
        ("$/lean/plainGoal", "lean_goals"),
        ("textDocument/codeAction", "lean_todo"),
        ("textDocument/didOpen", "lean_sync"),
        ("textDocument/didChange", "lean_sync"),
    ];
    let hint = LSP_HINTS.iter().find(|(m, _)| *m == name).map(|(_, t)| *t);
    let message = if let Some(tool) = tools.left_out(name) {
        format!(
            "`{}` is not served: this server was started with --tools {} (see tools/list)",
            tool.name(),
            tools.spelling()
        )
    } else if let Some(tool) = hint.filter(|tool| tools.served(tool)) {
        format!("`{name}` is a raw LSP method, not a tool; use `{tool}`")
    } else if name.contains('/') || name.starts_with('$') {
        format!(
            "`{name}` is a raw LSP method, not a tool; raw LSP methods are not exposed (see tools/list)"
        )
    } else if let Some(near) = tools.nearest(name) {
        format!(
            "unknown tool `{name}`; did you mean `{}`? (see tools/list)",
            near.name()
        )
    } else {
        format!("unknown tool `{name}` (see tools/list)")
    };
    RpcError::invalid_params(message)
}
