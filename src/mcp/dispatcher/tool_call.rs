//! A `tools/call` from its validation to its terminal response: the drop
//! fence's order, the client's share of calls in flight, the preparation
//! notice, the call run on its own task, panics caught.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::sync::OwnedSemaphorePermit;

use crate::context::{CallContext, Cancellation, Era, LogLevel, Outbound};
use crate::mcp::catch_panic::CatchPanic;
use crate::mcp::era;
use crate::mcp::fence::{Admission, FenceScope};
use crate::mcp::jsonrpc::{self, RpcError};
use crate::mcp::params::{only_members, unknown_tool};
use crate::mcp::session::Session;
use crate::mcp::share::Share;
use crate::surface::{
    self, ErrorCode, Handler, ParseError, ProgressClass, StatusNotice, ToolCall, ToolError,
    ToolOutcome,
};
use crate::wire::RequestId;
use crate::{log_debug, log_warn};

use super::{Counted, Dispatcher};

/// What an admitted call brings to its turn: its place in fence order and,
/// over HTTP, its client's share with its place among the calls held.
struct Turn {
    admission: Option<Admission>,
    share: Option<Arc<Share>>,
    held: Option<OwnedSemaphorePermit>,
}

/// What a running call holds until its terminal response is out.
struct Held {
    _admission: Option<Admission>,
    _held: Option<OwnedSemaphorePermit>,
    _client: Option<OwnedSemaphorePermit>,
    _global: Option<OwnedSemaphorePermit>,
}

impl<O: Handler + 'static> Dispatcher<O> {
    /// Validate a tools/call and either answer at once (invalid input) or admit
    /// it and run it on its own task.
    pub(super) async fn start_call(
        self: &Arc<Self>,
        session: &Arc<Session>,
        id: &RequestId,
        params: Option<Map<String, Value>>,
        era: Era,
        log_level: Option<LogLevel>,
        out: &Outbound,
    ) -> Result<Option<String>, RpcError> {
        let mut params = params
            .ok_or_else(|| RpcError::invalid_params("tools/call needs params with `name`"))?;
        for key in ["inputResponses", "requestState"] {
            if params.contains_key(key) {
                return Err(RpcError::invalid_params(format!(
                    "`{key}` continues a multi-round-trip request, but this server never returned input_required"
                )));
            }
        }
        only_members(Some(&params), &["name", "arguments", "_meta"])?;
        let progress_token = era::progress_token(Some(&params))?;
        let name = match params.remove("name") {
            Some(Value::String(name)) => name,
            _ => return Err(RpcError::invalid_params("tools/call needs a string `name`")),
        };
        let arguments = match params.remove("arguments") {
            None => None,
            Some(v @ Value::Object(_)) => Some(v),
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "tools/call `arguments` must be an object",
                ));
            }
        };
        // Sessionless requests are fenced by root: read it before parsing
        // consumes the arguments.
        let root = match session.fence() {
            FenceScope::Root(_) => arguments
                .as_ref()
                .and_then(|a| a.pointer("/workspace/root"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            FenceScope::Stream(_) => None,
        };
        let call = match self.config.tools.parse(&name, arguments) {
            Ok(call) => call,
            Err(ParseError::UnknownTool(name)) => {
                return Err(unknown_tool(&name, &self.config.tools));
            }
            Err(invalid) => {
                let tool = surface::Tool::from_name(&name).expect("known tool");
                self.stats.record_call(tool, era);
                let error = invalid.into_tool_error(&name);
                self.stats.record_tool_error(tool, &error);
                return Ok(Some(self.tool_result(era, &Err(error))));
            }
        };

        let tool = call.tool();
        let spec = tool.spec();
        self.stats.record_call(tool, era);
        // Resolved before anything is registered: such a request has a task of
        // its own (HTTP), so this wait holds up no other request.
        let root = match root {
            Some(root) if spec.workspace_bound => Some(canonical_root(&root).await),
            _ => None,
        };
        // An HTTP client's share: past twice its running slots, refused at
        // once, before anything is registered.
        let share = match (spec.workspace_bound, session.fence(), &root) {
            (false, _, _) => None,
            (true, FenceScope::Root(_), Some(root)) => Some(self.root_shares.of(root)),
            (true, FenceScope::Root(_), None) => None,
            (true, FenceScope::Stream(_), _) => session.limits().share.clone(),
        };
        let held = match &share {
            Some(share) => Some(share.hold().ok_or_else(|| too_many_calls(share, &root))?),
            None => None,
        };
        let cancel = Cancellation::default();
        // The stream's bound on admitted calls: waiting here is the push-back
        // on a reader that floods requests. Running slots are waited for later,
        // by the call's own task, so the reader keeps reading meanwhile.
        let queued = match &session.limits().admitted {
            Some(bound) => Some(
                Arc::clone(bound)
                    .acquire_owned()
                    .await
                    .expect("semaphore open"),
            ),
            None => None,
        };
        // Process-local tools (beam_version, beam_stats) answer at once: cancelling
        // them, by notifications/cancelled or at EOF, could only lose the answer
        // (`printf '<call>' | lean-beam-mcp` used to print nothing, because EOF
        // usually won the race against the just-spawned call).
        let cancellable = spec.cancellable && spec.workspace_bound;
        if !session.activate(id.clone(), cancel.clone(), cancellable) {
            return Ok(None);
        }
        // Stream order is fixed here, before the call leaves the reader.
        let admission = match session.fence() {
            FenceScope::Stream(fence) => Some(fence.admit(spec.fence)),
            FenceScope::Root(roots) => root.map(|root| roots.admit(&root, spec.fence)),
        };
        self.admitted.send_modify(|n| *n += 1);
        let counted = Counted(self.admitted.clone());
        let ctx = CallContext::new(
            id.clone(),
            era,
            tool.into(),
            Some(out.clone()),
            progress_token,
            log_level,
        )
        .with_cancellation(cancel);
        let this = Arc::clone(self);
        let session = Arc::clone(session);
        let out = out.clone();
        let turn = Turn {
            admission,
            share,
            held,
        };
        tokio::spawn(async move {
            this.run_call(session, ctx, call, turn, out).await;
            drop(queued);
            drop(counted);
        });
        Ok(None)
    }

    /// Take the call's turn in fence order, then a running slot: the client's
    /// own first (so that one client's waiting calls never queue ahead of
    /// another's on the global cap), then the global one. In this order no
    /// permit is held while waiting on a fence, so a fence cannot deadlock
    /// against the calls queued behind it.
    async fn take_turn(&self, turn: Turn, workspace_bound: bool) -> Held {
        let Turn {
            mut admission,
            share,
            held,
        } = turn;
        if let Some(admission) = admission.as_mut() {
            admission.wait_turn().await;
        }
        // Process-local calls hold nothing and answer at once: they never wait
        // for a slot, so a client's `beam_version` is answered however busy
        // the server is.
        let (mut client, mut global) = (None, None);
        if workspace_bound {
            if let Some(share) = &share {
                client = Some(share.run().await);
            }
            global = Some(
                Arc::clone(&self.slots)
                    .acquire_owned()
                    .await
                    .expect("semaphore open"),
            );
        }
        Held {
            _admission: admission,
            _held: held,
            _client: client,
            _global: global,
        }
    }

    async fn run_call(
        self: Arc<Self>,
        session: Arc<Session>,
        ctx: CallContext,
        call: ToolCall,
        turn: Turn,
        out: Outbound,
    ) {
        let (tool, started) = (call.tool(), Instant::now());
        let spec = tool.spec();
        let path = call.path().map(str::to_owned);
        let work = async {
            if spec.progress != ProgressClass::Quiet && ctx.has_progress_token() {
                ctx.progress(
                    &preparation_message(ctx.tool.name, path.as_deref(), spec.fence),
                    None,
                )
                .await;
            }
            let held = self.take_turn(turn, spec.workspace_bound).await;
            // A panic in a tool must still answer its request, exactly once.
            let outcome = CatchPanic(Box::pin(self.ops.handle(&ctx, call)))
                .await
                .unwrap_or_else(|message| {
                    log_warn!("{} panicked: {message}", ctx.tool.name);
                    Err(ToolError::new(
                        ErrorCode::InternalError,
                        format!(
                            "{} failed with an internal error ({message}); this is a bug in lean-beam-mcp, please report it (beam_feedback_report). The server keeps running.",
                            ctx.tool.name
                        ),
                    ))
                });
            (outcome, held)
        };
        let with_status = async {
            tokio::pin!(work);
            if spec.status_notice == StatusNotice::Never {
                return work.await;
            }
            let status = self.status_timer.start();
            tokio::select! {
                outcome = &mut work => return outcome,
                () = status.expired() => {}
            }
            let message = match &path {
                Some(p) => format!("{} on {p} is still working.", ctx.tool.name),
                None => format!("{} is still working.", ctx.tool.name),
            };
            ctx.status_notice("running", path.as_deref(), message).await;
            work.await
        };
        let finished: Option<(ToolOutcome, Held)> = if spec.cancellable {
            tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => None,
                finished = with_status => Some(finished),
            }
        } else {
            Some(with_status.await)
        };
        // Retire the id before publishing, so a client may reuse it on sight.
        let deliver = session.retire(&ctx.request_id);
        self.stats.record_latency(tool, started.elapsed());
        match finished {
            Some((outcome, held)) if deliver => {
                if let Err(error) = &outcome {
                    self.stats.record_tool_error(tool, error);
                }
                let line = self.response_line(&ctx.request_id, ctx.era, outcome).await;
                let _ = out.send(line).await;
                // Calls fenced behind this one start after its terminal result.
                drop(held);
            }
            _ => {
                self.stats.record_cancelled();
                log_debug!("request {} cancelled; no response", ctx.request_id);
            }
        }
    }
}

impl<O: Handler + 'static> Dispatcher<O> {
    /// The terminal response of a call. A large result (a feedback report
    /// with a MiB of evidence, a long file's diagnostics) takes tens of
    /// milliseconds to serialize twice (text and `structuredContent`): that
    /// runs on a blocking thread, so the runtime that reads and answers every
    /// other request (stdio's is one thread) is not held by it.
    async fn response_line(
        self: &Arc<Self>,
        id: &RequestId,
        era: Era,
        outcome: ToolOutcome,
    ) -> String {
        if !text_over(&outcome, INLINE_RESULT_BYTES) {
            return jsonrpc::response_line(id, &self.tool_result(era, &outcome));
        }
        let (this, id) = (Arc::clone(self), id.clone());
        tokio::task::spawn_blocking(move || {
            jsonrpc::response_line(&id, &this.tool_result(era, &outcome))
        })
        .await
        .expect("serializing a result does not panic")
    }
}

/// Results whose text passes this are serialized off the runtime; below it
/// the hop to a blocking thread would cost more than it saves.
const INLINE_RESULT_BYTES: usize = 64 * 1024;

/// Whether an outcome's strings and keys hold more than `limit` bytes: a
/// walk that stops as soon as they do, far cheaper than serializing.
fn text_over(outcome: &ToolOutcome, limit: usize) -> bool {
    fn walk(value: &Value, left: &mut usize) -> bool {
        let spent = match value {
            Value::String(s) => s.len(),
            Value::Array(items) => return items.iter().any(|v| walk(v, left)),
            Value::Object(map) => {
                return map.iter().any(|(k, v)| {
                    *left = left.saturating_sub(k.len());
                    *left == 0 || walk(v, left)
                });
            }
            _ => 8,
        };
        *left = left.saturating_sub(spent);
        *left == 0
    }
    let mut left = limit;
    match outcome {
        Ok(value) => walk(value, &mut left),
        Err(error) => error.message.len() > limit,
    }
}

/// The canonical form of a root, as the key of its fence: symlinked aliases
/// meet. A root that cannot be resolved (gone, or a file system that does not
/// answer within the limit) is its own key, lexically normalized.
async fn canonical_root(root: &str) -> std::path::PathBuf {
    const LIMIT: Duration = Duration::from_secs(5);
    match tokio::time::timeout(LIMIT, tokio::fs::canonicalize(root)).await {
        Ok(Ok(path)) => path,
        _ => std::path::Path::new(root).components().collect(),
    }
}

/// The refusal of a call past its client's share (HTTP 429): nothing of it
/// was done.
fn too_many_calls(share: &Share, root: &Option<std::path::PathBuf>) -> RpcError {
    let client = match root {
        Some(root) => format!("the calls on {}", root.display()),
        None => "this session".to_string(),
    };
    RpcError::new(
        jsonrpc::TOO_MANY_CALLS,
        format!(
            "too many calls in flight: {client} already hold {} admitted ({} running at once, the rest waiting; --max-in-flight-per-client {}); nothing of this call was done: retry once one of them has finished",
            share.per_client() * 2,
            share.per_client(),
            share.per_client()
        ),
    )
}

fn preparation_message(tool: &str, path: Option<&str>, fence: bool) -> String {
    match (path, fence) {
        (_, true) => format!("{tool}: waiting for earlier requests to finish"),
        (Some(path), false) => format!("{tool}: preparing {path}"),
        (None, false) => format!("{tool}: preparing"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_over_counts_strings_and_keys_and_stops_early() {
        let cases: [(Value, usize, bool); 6] = [
            (json!({}), 1, false),
            (json!("abcd"), 4, true),
            (json!("abc"), 4, false),
            (json!({"ab": "cd"}), 4, true),
            (json!([1, 2, 3]), 25, false),
            (json!({"items": [{"content": "x".repeat(100)}]}), 64, true),
        ];
        for (value, limit, over) in cases {
            assert_eq!(
                text_over(&Ok(value.clone()), limit),
                over,
                "{value} at {limit}"
            );
        }
        let error = ToolError::new(ErrorCode::InternalError, "y".repeat(10));
        assert!(text_over(&Err(error.clone()), 9));
        assert!(!text_over(&Err(error), 10));
    }
}
