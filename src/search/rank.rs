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

/// A query prepared once: as given, lower-cased, and its searcher.
#[derive(Debug, Clone)]
pub struct NameQuery {
    exact: String,
    lower: String,
    finder: memchr::memmem::Finder<'static>,
    mask: u64,
}

/// Which bytes (modulo 64) a lower-cased name holds: a name whose mask lacks
/// one of the query's bits matches in no tier, and most names are ruled out
/// by this one comparison.
pub fn byte_mask(lower: &str) -> u64 {
    lower.bytes().fold(0, |m, b| m | 1 << (b % 64))
}

impl NameQuery {
    pub fn new(query: &str) -> NameQuery {
        let lower = query.to_lowercase();
        NameQuery {
            exact: query.to_string(),
            finder: memchr::memmem::Finder::new(lower.as_bytes()).into_owned(),
            mask: byte_mask(&lower),
            lower,
        }
    }

    /// The tier of `name` (`lower`: the name lower-cased, `mask` its
    /// [`byte_mask`]), if it matches.
    pub fn tier(&self, name: &str, lower: &str, mask: u64) -> Option<Tier> {
        if mask & self.mask != self.mask {
            return None;
        }
        let q = self.exact.as_str();
        // The cheap filter first: every tier but subsequence contains the
        // query, ignoring case.
        let Some(first) = self.finder.find(lower.as_bytes()) else {
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
            at = self
                .finder
                .find(&lower.as_bytes()[i + 1..])
                .map(|k| i + 1 + k);
        }
        Some(Tier::Substring)
    }
}

/// `needle`'s bytes in order in `hay`: the characters' test for ASCII, a
/// little looser for other characters (their bytes may come from several).
fn subsequence(needle: &str, hay: &str) -> bool {
    let mut hay = hay.bytes();
    needle.bytes().all(|c| hay.any(|h| h == c))
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
            let lower = name.to_lowercase();
            assert_eq!(
                q.tier(name, &lower, byte_mask(&lower)),
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
