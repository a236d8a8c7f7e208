//! What a result's budget cut (issue 26 item 5): the output budget of
//! `surface::budget`, or the feedback report's own evidence caps.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a result's budget cut: present only when something was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Truncated {
    /// String fields cut in the middle (each holds a marker with its length).
    pub fields: usize,
    /// List items left out from the ends of lists.
    pub items: usize,
    /// The result's size before it was cut, in bytes of JSON.
    pub bytes: usize,
    /// The cap it was cut to (`max_result_bytes`).
    pub limit: usize,
}
