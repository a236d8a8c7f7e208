//! Goals as Lean renders them in text (`$/lean/plainGoal`,
//! `$/lean/plainTermGoal`, the goals listed in its "unsolved goals" report)
//! read into the structured shape.

use crate::results::{Goal, GoalParts, Hypothesis};

/// The goals Lean's "unsolved goals" report lists (its message after the
/// first line, as `engine::diagnostics::unsolved_goals` finds it), one
/// goal per blank-line-separated block.
pub fn unsolved(report: &str) -> Vec<Goal> {
    report.split("\n\n").map(plain_goal).collect()
}

/// A rendered goal (`case x\nh : T\n⊢ target`) in the structured shape, for
/// the fallback path and for Lean's `plainTermGoal`.
pub fn plain_goal(text: &str) -> Goal {
    let mut lines = text.lines().peekable();
    let mut user_name = None;
    if let Some(first) = lines.peek() {
        if let Some(name) = first.strip_prefix("case ") {
            user_name = Some(name.to_string());
            lines.next();
        }
    }
    let mut hyps = Vec::new();
    let mut target = String::new();
    let mut in_target = false;
    for line in lines {
        if in_target {
            target.push('\n');
            target.push_str(line);
        } else if let Some(t) = line.strip_prefix("⊢ ") {
            target = t.to_string();
            in_target = true;
        } else if let Some((names, ty)) = line.split_once(" : ") {
            let (ty, value) = match ty.split_once(" := ") {
                Some((t, v)) => (t, Some(v)),
                None => (ty, None),
            };
            hyps.push(Hypothesis {
                names: names.split_whitespace().map(str::to_owned).collect(),
                ty: ty.to_owned(),
                value: value.map(str::to_owned),
            });
        } else if let Some(last) = hyps.last_mut() {
            last.ty.push('\n');
            last.ty.push_str(line);
        }
    }
    Goal {
        // Lean's own text, as it printed it.
        pretty: text.to_owned(),
        parts: Some(GoalParts {
            goal_prefix: "⊢ ".to_owned(),
            target,
            hyps,
            user_name,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::super::interactive::pretty;
    use super::*;

    #[test]
    fn plain_goal_fallback_parses_cases_and_lets() {
        let g = plain_goal("case succ\nm : N\nt : N := one.add one\n⊢ Eq t two");
        assert_eq!(g.user_name(), Some("succ"));
        assert_eq!(g.hyps()[1].value.as_deref(), Some("one.add one"));
        let parts = g.parts.as_ref().expect("parts");
        assert_eq!(parts.target, "Eq t two");
        // Rendering the parsed goal gives Lean's text back.
        let text = "case succ\nm : N\nt : N := one.add one\n⊢ Eq t two";
        assert_eq!(g.pretty, text);
        assert_eq!(pretty(parts), text);
    }

    #[test]
    fn an_unsolved_goals_report_lists_one_goal_per_block() {
        let goals = unsolved("case left\np q : Prop\n⊢ p\n\ncase right\np q : Prop\n⊢ q");
        let names: Vec<_> = goals.iter().map(Goal::user_name).collect();
        assert_eq!(names, [Some("left"), Some("right")]);
        assert_eq!(goals[1].pretty, "case right\np q : Prop\n⊢ q");
    }
}
