//! Document text and LSP positions (zero-based line, UTF-16 column).

/// Line starts of a text, for position conversions.
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
    len: usize,
}

/// Why a position does not name a place in the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PositionError {
    LineOutOfRange {
        line: u64,
        line_count: usize,
    },
    CharacterOutOfRange {
        line: u64,
        character: u64,
        line_length: usize,
    },
    InsideSurrogatePair {
        line: u64,
        character: u64,
    },
}

impl std::fmt::Display for PositionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PositionError::LineOutOfRange { line, line_count } => write!(
                f,
                "line {line} is outside the document, which has {line_count} line(s) (lines are zero-based)"
            ),
            PositionError::CharacterOutOfRange {
                line,
                character,
                line_length,
            } => write!(
                f,
                "character {character} is past the end of line {line}, which is {line_length} UTF-16 code unit(s) long"
            ),
            PositionError::InsideSurrogatePair { line, character } => write!(
                f,
                "character {character} of line {line} falls inside a character that takes two UTF-16 code units"
            ),
        }
    }
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self {
            starts,
            len: text.len(),
        }
    }

    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// The byte range of `line` without its line terminator.
    fn line_bytes<'t>(&self, text: &'t str, line: usize) -> &'t str {
        let start = self.starts[line];
        let end = self.starts.get(line + 1).map_or(self.len, |next| next - 1);
        let slice = &text[start..end];
        slice.strip_suffix('\r').unwrap_or(slice)
    }

    /// The text of `line` without its line terminator, if the text has it.
    pub fn line_text<'t>(&self, text: &'t str, line: u64) -> Option<&'t str> {
        let line = usize::try_from(line)
            .ok()
            .filter(|l| *l < self.starts.len())?;
        Some(self.line_bytes(text, line))
    }

    /// Byte offset of an LSP position, checking that it names a real place.
    pub fn offset(&self, text: &str, line: u64, character: u64) -> Result<usize, PositionError> {
        let line_no = usize::try_from(line)
            .ok()
            .filter(|l| *l < self.starts.len())
            .ok_or(PositionError::LineOutOfRange {
                line,
                line_count: self.starts.len(),
            })?;
        let content = self.line_bytes(text, line_no);
        let mut units = 0u64;
        for (i, ch) in content.char_indices() {
            if units == character {
                return Ok(self.starts[line_no] + i);
            }
            units += ch.len_utf16() as u64;
            if units > character {
                return Err(PositionError::InsideSurrogatePair { line, character });
            }
        }
        if units == character {
            return Ok(self.starts[line_no] + content.len());
        }
        Err(PositionError::CharacterOutOfRange {
            line,
            character,
            line_length: units as usize,
        })
    }

    /// The LSP position of a byte offset (on a char boundary).
    pub fn position(&self, text: &str, offset: usize) -> (u32, u32) {
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let character: usize = text[self.starts[line]..offset]
            .chars()
            .map(char::len_utf16)
            .sum();
        (line as u32, character as u32)
    }
}

/// The single edit that turns `old` into `new`: the changed middle between the
/// common prefix and suffix. Sending this instead of the whole text lets Lean
/// keep everything it elaborated before the first change.
pub fn minimal_change(old: &str, new: &str) -> Option<(usize, usize, String)> {
    if old == new {
        return None;
    }
    let mut prefix = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(prefix) || !new.is_char_boundary(prefix) {
        prefix -= 1;
    }
    let max_suffix = old.len().min(new.len()) - prefix;
    let mut suffix = old
        .bytes()
        .rev()
        .zip(new.bytes().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(old.len() - suffix) || !new.is_char_boundary(new.len() - suffix) {
        suffix -= 1;
    }
    Some((
        prefix,
        old.len() - suffix,
        new[prefix..new.len() - suffix].to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_positions_on_astral_characters() {
        let text = "def 𝔽𝔽 : N := N.add 𝔽 γ₃\nnext";
        let index = LineIndex::new(text);
        let off = index.offset(text, 0, 25).unwrap();
        assert!(text[off..].starts_with("γ₃"));
        assert_eq!(index.position(text, off), (0, 25));
        assert!(matches!(
            index.offset(text, 0, 5),
            Err(PositionError::InsideSurrogatePair { .. })
        ));
        assert_eq!(
            index.offset(text, 0, 28),
            Err(PositionError::CharacterOutOfRange {
                line: 0,
                character: 28,
                line_length: 27
            })
        );
        assert!(matches!(
            index.offset(text, 2, 0),
            Err(PositionError::LineOutOfRange { .. })
        ));
        assert_eq!(index.offset(text, 1, 4).unwrap(), text.len());
    }

    #[test]
    fn minimal_change_keeps_prefix_and_suffix() {
        let (start, end, insert) = minimal_change("abc 𝔽 xyz", "abc 𝔾 xyz").unwrap();
        assert_eq!(&"abc 𝔽 xyz"[start..end], "𝔽");
        assert_eq!(insert, "𝔾");
        assert_eq!(minimal_change("same", "same"), None);
        let (s, e, i) = minimal_change("aaa", "aaaa").unwrap();
        assert_eq!((s, e, i.as_str()), (3, 3, "a"));
        let (s, e, i) = minimal_change("abcd", "ad").unwrap();
        assert_eq!((s, e, i.as_str()), (1, 3, ""));
    }
}
