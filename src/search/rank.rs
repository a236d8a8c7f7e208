//! How well a declaration's full name answers a name query, as a tier:
//! lower is better. Both `Nat.add_comm` and `add_comm` find `Nat.add_comm`,
//! since a query is compared with every dot-suffix of the name too.

/// The tiers, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// The full name, exactly.
    Exact,
    /// The last components, exactly (`add_comm` for `Nat.add_comm`).
    Suffix,
    /// The start of a component (`add_c`, `Nat.add`, `comm` for `Nat.add_comm`
    /// — `_` starts a component as `.` does).
    ComponentPrefix,
    /// Anywhere, ignoring case.
    Substring,
    /// Its characters in order, ignoring case (`addcm`).
    Subsequence,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Exact => "exact",
            Tier::Suffix => "suffix",
            Tier::ComponentPrefix => "prefix",
            Tier::Substring => "substring",
            Tier::Subsequence => "subsequence",
        }
    }
}

/// A query prepared once: as given, and lower-cased.
#[derive(Debug, Clone)]
pub struct NameQuery {
    exact: String,
    lower: String,
}

impl NameQuery {
    pub fn new(query: &str) -> NameQuery {
        NameQuery {
            exact: query.to_string(),
            lower: query.to_lowercase(),
        }
    }

    /// The tier of `name` (`lower`: the name lower-cased), if it matches.
    pub fn tier(&self, name: &str, lower: &str) -> Option<Tier> {
        let q = self.exact.as_str();
        // The cheap filter first: every tier but subsequence contains the
        // query, ignoring case.
        let Some(first) = lower.find(&self.lower) else {
            return subsequence(&self.lower, lower).then_some(Tier::Subsequence);
        };
        if name == q {
            return Some(Tier::Exact);
        }
        if name.len() > q.len()
            && name.ends_with(q)
            && name.as_bytes()[name.len() - q.len() - 1] == b'.'
        {
            return Some(Tier::Suffix);
        }
        // `.` and `_` are where they are in the lower-cased name too.
        let starts_component =
            |at: usize| at == 0 || matches!(lower.as_bytes()[at - 1], b'.' | b'_');
        let mut at = Some(first);
        while let Some(i) = at {
            if starts_component(i) {
                return Some(Tier::ComponentPrefix);
            }
            at = lower[i + 1..].find(&self.lower).map(|k| i + 1 + k);
        }
        Some(Tier::Substring)
    }
}

fn subsequence(needle: &str, hay: &str) -> bool {
    let mut hay = hay.chars();
    needle.chars().all(|c| hay.any(|h| h == c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers() {
        let cases = [
            ("Nat.add_comm", "Nat.add_comm", Some(Tier::Exact)),
            ("add_comm", "Nat.add_comm", Some(Tier::Suffix)),
            ("add_comm", "add_comm", Some(Tier::Exact)),
            ("comm", "Nat.add_comm", Some(Tier::ComponentPrefix)),
            ("Nat.add", "Nat.add_comm", Some(Tier::ComponentPrefix)),
            ("add_c", "Nat.add_comm", Some(Tier::ComponentPrefix)),
            ("d_comm", "Nat.add_comm", Some(Tier::Substring)),
            ("ADD_COMM", "Nat.add_comm", Some(Tier::ComponentPrefix)),
            ("addcm", "Nat.add_comm", Some(Tier::Subsequence)),
            ("natcomm", "Nat.add_comm", Some(Tier::Subsequence)),
            ("mul_comm", "Nat.add_comm", None),
            ("dd_comm", "Nat.add_comm", Some(Tier::Substring)),
            // `comm` starts a component at its second occurrence only.
            ("comm", "Xcomm.comm_x", Some(Tier::ComponentPrefix)),
            ("m_comm", "Nat.m_comm", Some(Tier::Suffix)),
        ];
        for (query, name, tier) in cases {
            let q = NameQuery::new(query);
            assert_eq!(
                q.tier(name, &name.to_lowercase()),
                tier,
                "{query} for {name}"
            );
        }
    }

    #[test]
    fn tiers_order_best_first() {
        assert!(Tier::Exact < Tier::Suffix);
        assert!(Tier::Suffix < Tier::ComponentPrefix);
        assert!(Tier::ComponentPrefix < Tier::Substring);
        assert!(Tier::Substring < Tier::Subsequence);
    }
}
