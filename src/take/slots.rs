//! Where the lenient readers' slots live: one per known key of a message, found through a
//! compile-time key table, and dropped only when written.

use std::mem::ManuallyDrop;

use serde_json::Value;

/// The most keys a message type may have (slots live on the stack).
pub(crate) const MAX_KEYS: usize = 40;

/// What a slot holds.
pub(crate) enum Slot {
    /// The key was absent.
    Empty,
    /// The key's value.
    Value(Value),
    /// The key's object, read into slots of its nested reader's table.
    Nested(SparseSlots),
}

// a slot is no bigger than the value it holds
const _: () = assert!(std::mem::size_of::<Slot>() == std::mem::size_of::<Value>());

/// Where the slots of an object are kept: a message's [`SlotArray`] on the stack, a nested
/// object's [`SparseSlots`]. Slots are indexed by key-table index (always `< MAX_KEYS`).
pub(crate) trait SlotStore {
    /// Slot `i`, if it was written.
    fn get(&self, i: usize) -> Option<&Slot>;
    /// Moves slot `i` out (`Slot::Empty` if it held nothing).
    fn remove(&mut self, i: usize) -> Slot;
    /// Writes slot `i` (a duplicate key replaces the earlier value).
    fn put(&mut self, i: usize, value: Slot);
}

/// A message's slots on the stack, one per key. Only the slots written are dropped: a message
/// fills a few of its ~40 slots, and running the drop glue of every slot (out of line, one
/// call each) cost more than the rest of reading the message.
pub(crate) struct SlotArray {
    vals: ManuallyDrop<[Slot; MAX_KEYS]>,
    /// Bit `i`: slot `i` was written (every other slot is [`Slot::Empty`]).
    filled: u64,
}

const _: () = assert!(MAX_KEYS <= u64::BITS as usize);

impl SlotArray {
    pub(super) fn new() -> SlotArray {
        SlotArray {
            vals: ManuallyDrop::new([const { Slot::Empty }; MAX_KEYS]),
            filled: 0,
        }
    }
}

impl SlotStore for SlotArray {
    #[inline(always)]
    fn get(&self, i: usize) -> Option<&Slot> {
        self.vals.get(i)
    }
    #[inline(always)]
    fn remove(&mut self, i: usize) -> Slot {
        match self.vals.get_mut(i) {
            Some(slot) => std::mem::replace(slot, Slot::Empty),
            None => Slot::Empty,
        }
    }
    #[inline(always)]
    fn put(&mut self, i: usize, value: Slot) {
        if let Some(slot) = self.vals.get_mut(i) {
            let old = std::mem::replace(slot, value);
            if matches!(old, Slot::Empty) {
                // owns nothing; a plain assignment would call the drop glue for every key
                std::mem::forget(old);
            }
            self.filled |= 1 << i;
        }
    }
}

impl Drop for SlotArray {
    fn drop(&mut self) {
        let mut left = self.filled;
        while left != 0 {
            let i = left.trailing_zeros() as usize;
            left &= left - 1;
            if !matches!(self.vals[i], Slot::Empty) {
                drop(std::mem::replace(&mut self.vals[i], Slot::Empty));
            }
        }
        // every slot is `Slot::Empty` now, which owns nothing: the array needs no drop
    }
}

/// A nested object's slots: only the keys present, as `(index, slot)` (nested objects have a
/// few keys; a slot taken is removed, so what is left to drop is what nobody read).
pub(crate) struct SparseSlots(Vec<(usize, Slot)>);

impl SparseSlots {
    /// No slots yet, room for `n`.
    pub(super) fn with_capacity(n: usize) -> SparseSlots {
        SparseSlots(Vec::with_capacity(n))
    }
}

impl SparseSlots {
    fn position(&self, i: usize) -> Option<usize> {
        self.0.iter().position(|(k, _)| *k == i)
    }
}

impl SlotStore for SparseSlots {
    #[inline]
    fn get(&self, i: usize) -> Option<&Slot> {
        self.0.iter().find(|(k, _)| *k == i).map(|(_, s)| s)
    }
    #[inline]
    fn remove(&mut self, i: usize) -> Slot {
        match self.position(i) {
            Some(at) => self.0.swap_remove(at).1,
            None => Slot::Empty,
        }
    }
    #[inline]
    fn put(&mut self, i: usize, value: Slot) {
        match self.position(i) {
            Some(at) => self.0[at].1 = value,
            None => self.0.push((i, value)),
        }
    }
}

/// An open-addressing hash table over a fixed key list: O(1) key → slot index with one string
/// comparison (the readers look up ~40 keys per message, so a linear scan would dominate).
/// Built at compile time by the generated readers; it also names the keys whose object is
/// read by a nested reader, with that reader's table.
pub(crate) struct KeyTable {
    pub(super) keys: &'static [&'static str],
    table: [u8; 128],
    pub(super) nested: [Option<&'static KeyTable>; MAX_KEYS],
}

#[inline]
const fn hash(key: &str) -> usize {
    let b = key.as_bytes();
    let n = b.len();
    let (first, mid, last) = if n == 0 {
        (0, 0, 0)
    } else {
        (b[0] as usize, b[n / 2] as usize, b[n - 1] as usize)
    };
    (n.wrapping_mul(131) ^ first.wrapping_mul(7) ^ mid.wrapping_mul(31) ^ last.wrapping_mul(13)) & 127
}

impl KeyTable {
    /// A table for up to [`MAX_KEYS`] keys; `nested` gives `(index, table)` of the keys whose
    /// object is read by a nested reader.
    pub const fn new(keys: &'static [&'static str], nested: &[(usize, &'static KeyTable)]) -> KeyTable {
        assert!(keys.len() <= MAX_KEYS, "KeyTable: too many keys");
        let mut table = [0u8; 128];
        let mut i = 0;
        while i < keys.len() {
            let mut h = hash(keys[i]);
            while table[h] != 0 {
                h = (h + 1) & 127;
            }
            table[h] = (i + 1) as u8;
            i += 1;
        }
        let mut n: [Option<&'static KeyTable>; MAX_KEYS] = [None; MAX_KEYS];
        let mut j = 0;
        while j < nested.len() {
            assert!(nested[j].0 < keys.len(), "KeyTable: nested index out of range");
            n[nested[j].0] = Some(nested[j].1);
            j += 1;
        }
        KeyTable { keys, table, nested: n }
    }

    /// The index of `key`, if it is one of the keys.
    #[inline]
    pub fn get(&self, key: &str) -> Option<usize> {
        let mut h = hash(key);
        loop {
            match self.table[h] {
                0 => return None,
                i if self.keys[i as usize - 1] == key => return Some(i as usize - 1),
                _ => h = (h + 1) & 127,
            }
        }
    }
}
