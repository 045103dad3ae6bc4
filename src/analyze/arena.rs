//! Storage for what a detector holds of every object of a cluster until
//! the end of `analyze`: items in fixed-size chunks and texts packed into
//! blocks, so that neither grows by copying the whole set (a doubling `Vec`
//! briefly holds three times its contents) nor costs an allocation per
//! object.

use std::num::NonZeroU32;

/// Items per chunk of a [`Chunked`].
const CHUNK: usize = 4096;

/// A list that grows a chunk at a time, indexed by `u32`.
#[derive(Debug)]
pub struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    /// Appends `item`; returns its index.
    pub fn push(&mut self, item: T) -> u32 {
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        self.chunks.last_mut().expect("a chunk").push(item);
        self.len += 1;
        u32::try_from(self.len - 1).expect("fewer than 2^32 items")
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, i: u32) -> &T {
        let i = i as usize;
        &self.chunks[i / CHUNK][i % CHUNK]
    }

    pub fn get_mut(&mut self, i: u32) -> &mut T {
        let i = i as usize;
        &mut self.chunks[i / CHUNK][i % CHUNK]
    }

    /// Every item, in the order pushed.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }

    /// Every item, in the order pushed, each chunk freed once passed.
    pub fn into_items(self) -> impl Iterator<Item = T> {
        self.chunks.into_iter().flatten()
    }
}

/// Bytes per block of [`Texts`] (a longer text gets a block of its own).
const BLOCK: usize = 1 << 20;

/// Where a text lies in a [`Texts`]. 12 bytes, and `Option<Span>` too
/// (the block number is never zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The block's index plus one.
    block: NonZeroU32,
    at: u32,
    len: u32,
}

/// Texts packed end to end into blocks.
#[derive(Debug, Default)]
pub struct Texts {
    blocks: Vec<String>,
}

impl Texts {
    /// Stores `text`; returns where it is.
    pub fn push(&mut self, text: &str) -> Span {
        let fits = self
            .blocks
            .last()
            .is_some_and(|b| b.len() + text.len() <= b.capacity());
        if !fits {
            self.blocks.push(String::with_capacity(BLOCK.max(text.len())));
        }
        let block = self.blocks.last_mut().expect("a block");
        let at = block.len();
        block.push_str(text);
        Span {
            block: u32::try_from(self.blocks.len())
                .ok()
                .and_then(NonZeroU32::new)
                .expect("fewer than 2^32 blocks"),
            at: u32::try_from(at).expect("a block is under 4 GiB"),
            len: u32::try_from(text.len()).expect("a text is under 4 GiB"),
        }
    }

    /// The text at `span`.
    pub fn get(&self, span: Span) -> &str {
        let at = span.at as usize;
        &self.blocks[span.block.get() as usize - 1][at..at + span.len as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_items_keep_their_index_across_chunks() {
        let mut items = Chunked::default();
        for i in 0..(2 * CHUNK as u32 + 5) {
            assert_eq!(items.push(i * 3), i);
        }
        assert_eq!(items.len(), 2 * CHUNK + 5);
        assert_eq!(*items.get(CHUNK as u32 + 1), (CHUNK as u32 + 1) * 3);
        *items.get_mut(7) = 1;
        assert_eq!(items.iter().nth(7), Some(&1));
        assert_eq!(items.into_items().last(), Some((2 * CHUNK as u32 + 4) * 3));
    }

    #[test]
    fn texts_come_back_whole_also_across_blocks_and_when_long() {
        let mut texts = Texts::default();
        let long = "x".repeat(BLOCK + 3);
        let mut spans = Vec::new();
        for i in 0..(BLOCK / 8) {
            spans.push((texts.push(&format!("app.kubernetes.io/{i}")), i));
        }
        let big = texts.push(&long);
        let after = texts.push("/registry/pods/ns/after");
        for (span, i) in spans {
            assert_eq!(texts.get(span), format!("app.kubernetes.io/{i}"));
        }
        assert_eq!(texts.get(big), long);
        assert_eq!(texts.get(after), "/registry/pods/ns/after");
        let empty = texts.push("");
        assert_eq!(texts.get(empty), "");
        assert_eq!(std::mem::size_of::<Option<Span>>(), std::mem::size_of::<Span>());
    }
}
