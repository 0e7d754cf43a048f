//! [`Packed`]: texts kept one after another in one buffer — what the memory store keeps an
//! ended task's events in: two allocations however many texts, freed at once.

/// Texts one after another in one buffer, told apart by where each ends.
#[derive(Debug, Default)]
pub(crate) struct Packed {
    text: Box<str>,
    /// `ends[i]` is where text `i` ends in `text`.
    ends: Box<[usize]>,
}

impl Packed {
    /// `texts`, copied in.
    pub(crate) fn of<S: AsRef<str>>(texts: &[S]) -> Self {
        let mut text = String::with_capacity(texts.iter().map(|t| t.as_ref().len()).sum());
        let ends = texts
            .iter()
            .map(|t| {
                text.push_str(t.as_ref());
                text.len()
            })
            .collect();
        Packed {
            text: text.into_boxed_str(),
            ends,
        }
    }

    /// How many texts there are.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The bytes the texts take, with where each ends.
    pub(crate) fn bytes(&self) -> usize {
        self.text.len() + std::mem::size_of_val::<[usize]>(&self.ends)
    }

    /// Text `i` (0-based).
    pub(crate) fn get(&self, i: usize) -> Option<&str> {
        let start = match i.checked_sub(1) {
            Some(p) => *self.ends.get(p)?,
            None => 0,
        };
        self.text.get(start..*self.ends.get(i)?)
    }
}

#[cfg(test)]
mod tests {
    use super::Packed;

    #[test]
    fn packed_texts_read_as_they_were_written() {
        let texts = ["{\"a\":1}", "", "{\"ü\":\"ß\"}"];
        let p = Packed::of(&texts);
        assert_eq!(p.len(), 3);
        assert_eq!((0..p.len()).filter_map(|i| p.get(i)).collect::<Vec<_>>(), texts);
        assert_eq!(p.get(3), None);
    }
}
