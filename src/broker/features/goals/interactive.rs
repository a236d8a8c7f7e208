//! Lean's interactive goals (`Lean.Widget.InteractiveGoal`, typed in
//! `lsp::protocol`) as `results::Goal`s, printed as Lean prints them.

use crate::lsp::protocol::{InteractiveGoal, flatten_tagged_text};
use crate::results::{Goal, GoalParts, Hypothesis};

/// One interactive goal (`Lean.Widget.InteractiveGoal`) as agents see it:
/// tagged text flattened, hypotheses with their names, type and value.
pub(super) fn interactive_goal(goal: &InteractiveGoal) -> Goal {
    let hyps = goal
        .hyps
        .iter()
        .map(|h| Hypothesis {
            names: h.names.clone(),
            ty: flatten_tagged_text(&h.ty),
            value: h.val.as_ref().map(flatten_tagged_text),
        })
        .collect();
    let parts = GoalParts {
        goal_prefix: goal.goal_prefix.as_deref().unwrap_or("⊢ ").to_owned(),
        target: flatten_tagged_text(&goal.target),
        hyps,
        user_name: goal.user_name.clone(),
    };
    Goal {
        pretty: pretty(&parts),
        parts: Some(parts),
    }
}

/// A structured goal as Lean prints it (`ppGoal`): the case name, one line
/// per hypothesis group (`a b : T`, `x : T := v`), then the target after
/// its prefix.
pub fn pretty(goal: &GoalParts) -> String {
    let mut out = String::new();
    if let Some(name) = &goal.user_name {
        out.push_str("case ");
        out.push_str(name);
        out.push('\n');
    }
    for hyp in &goal.hyps {
        out.push_str(&hyp.names.join(" "));
        out.push_str(" : ");
        out.push_str(&hyp.ty);
        if let Some(value) = &hyp.value {
            out.push_str(" := ");
            out.push_str(value);
        }
        out.push('\n');
    }
    out.push_str(&goal.goal_prefix);
    out.push_str(&goal.target);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interactive_goals_print_as_lean_prints_them() {
        let goal: InteractiveGoal = serde_json::from_value(serde_json::json!({
            "userName": "succ",
            "goalPrefix": "⊢ ",
            "type": { "text": "Eq (N.add m n) n" },
            "hyps": [
                { "names": ["m", "n"], "type": { "text": "N" } },
                { "names": ["t"], "type": { "text": "N" }, "val": { "text": "one" } },
            ],
        }))
        .unwrap();
        let goal = interactive_goal(&goal);
        assert_eq!(
            goal.pretty,
            "case succ\nm n : N\nt : N := one\n⊢ Eq (N.add m n) n"
        );
    }
}
