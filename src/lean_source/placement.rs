//! Where a probe's text sits in its shadow document and in the user's file,
//! and the arithmetic of positions between the two.

/// Where a probe's text sits in its shadow and in the user's file. The shadow
/// is the user's text up to `anchor`, then what the probe put there: its text
/// from `text` on, standing for the user's position `origin` (after a term,
/// the rest of the user's declaration from `resume` on). Lean reports
/// positions in the shadow; agents see them in the user's file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Placement {
    /// Where the shadow stops being the user's text (shadow coordinates).
    pub anchor: (u32, u32),
    /// Where the probe text begins in the shadow (at or after `anchor`).
    pub text: (u32, u32),
    /// The position in the user's file the probe text begins at.
    pub origin: (u32, u32),
    /// Where the user's text resumes in the shadow after the probe text, and
    /// where that is in the user's file (a term probe inside a declaration).
    pub resume: Option<((u32, u32), (u32, u32))>,
}

impl Placement {
    /// The probe text is in the user's file exactly where it is in the shadow.
    pub fn at(position: (u32, u32)) -> Self {
        Placement {
            anchor: position,
            text: position,
            origin: position,
            resume: None,
        }
    }

    /// A shadow position in the user's coordinates: the user's text where it
    /// is; the probe text (all steps of a chain) counted from `origin`, later
    /// lines at the columns the shadow lays them out at.
    pub fn to_user(self, p: (u32, u32)) -> (u32, u32) {
        if p < self.anchor {
            return p;
        }
        if let Some((shadow, user)) = self.resume {
            if p >= shadow {
                return shift(p, shadow, user);
            }
        }
        if p < self.text {
            return self.origin;
        }
        shift(p, self.text, self.origin)
    }
}

/// `p` (at or after `from`) moved so that `from` lands on `to`.
fn shift(p: (u32, u32), from: (u32, u32), to: (u32, u32)) -> (u32, u32) {
    if p.0 == from.0 {
        (to.0, to.1 + (p.1 - from.1))
    } else {
        (to.0 + (p.0 - from.0), p.1)
    }
}

/// The position reached from `from` by writing `text` there.
pub fn advance(from: (u32, u32), text: &str) -> (u32, u32) {
    match text.rfind('\n') {
        Some(last) => (
            from.0 + text.matches('\n').count() as u32,
            text[last + 1..].chars().map(char::len_utf16).sum::<usize>() as u32,
        ),
        None => (
            from.0,
            from.1 + text.chars().map(char::len_utf16).sum::<usize>() as u32,
        ),
    }
}
