//! What the generated frame types ([`crate::types::Frame`]) stand on: [`Head`], the fields one
//! stream's frames share, held once and written to JSON once; and [`body_map`].
//!
//! This file names nothing of `e2a` but `crate::write`, so the codegen's snapshot tests compile
//! it as it is.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use crate::write::JsonWriter;

/// Fields written as the text around a frame's own fields (implemented by the generated
/// `FrameHead`).
pub trait WriteHead {
    /// How many pieces of text the fields make: one more than the own fields between them.
    const SEGMENTS: usize;
    /// Writes the pieces one after the other, each piece's end offset in `w` into `ends`
    /// (`SEGMENTS` of them): piece `i` runs up to where own field `i` is written.
    fn write_segments(&self, w: &mut JsonWriter, ends: &mut [usize]);
}

/// A record whose frames share a head (implemented by the generated `E2AResponse` and `Frame`):
/// how one splits into the fields its stream shares and its own.
pub trait Framed {
    /// The fields a stream's frames share.
    type Head: WriteHead;
    /// This frame's head fields, copied.
    fn head(&self) -> Self::Head;
    /// Whether this frame's head fields are `head`'s.
    fn has_head(&self, head: &Self::Head) -> bool;
    /// Writes the values of this frame's own fields one after the other (in the order the
    /// head's pieces go around them), the end offset of each in `w` into `ends`.
    fn write_own(&self, w: &mut JsonWriter, ends: &mut [usize]);
}

/// The JSON text of a [`Head`]: the pieces a frame's own fields go between.
#[derive(Debug)]
pub struct HeadText {
    text: Box<str>,
    ends: Box<[usize]>,
}

impl HeadText {
    /// The text of `head`.
    pub fn of<H: WriteHead>(head: &H) -> Self {
        let mut w = JsonWriter::with_capacity(1024);
        let mut ends = vec![0; H::SEGMENTS].into_boxed_slice();
        head.write_segments(&mut w, &mut ends);
        HeadText {
            text: w.into_string().into_boxed_str(),
            ends,
        }
    }

    /// Bytes it takes.
    pub fn bytes(&self) -> usize {
        self.text.len() + self.ends.len() * std::mem::size_of::<usize>()
    }

    /// Piece `i` (empty past the last).
    pub fn segment(&self, i: usize) -> &str {
        let start = match i {
            0 => 0,
            _ => self.ends.get(i - 1).copied().unwrap_or(self.text.len()),
        };
        let end = self.ends.get(i).copied().unwrap_or(self.text.len());
        self.text.get(start..end).unwrap_or_default()
    }
}

struct Shared<H> {
    fields: H,
    text: OnceLock<HeadText>,
}

impl<H: Clone> Clone for Shared<H> {
    /// The fields; their text is written anew when asked for.
    fn clone(&self) -> Self {
        Shared {
            fields: self.fields.clone(),
            text: OnceLock::new(),
        }
    }
}

/// The fields every frame of one stream shares, held once (frames clone a pointer) and written
/// to JSON once, the first time a frame is written. Read through `Deref`; changed with
/// [`Head::make_mut`], which gives a frame a head of its own when others share it.
pub struct Head<H>(Arc<Shared<H>>);

impl<H> Head<H> {
    /// A head of `fields`.
    pub fn new(fields: H) -> Self {
        Head(Arc::new(Shared {
            fields,
            text: OnceLock::new(),
        }))
    }

    /// Its JSON text, written the first time it is asked for.
    pub fn text(&self) -> &HeadText
    where
        H: WriteHead,
    {
        self.0.text.get_or_init(|| HeadText::of(&self.0.fields))
    }

    /// The fields, to change: copied first when other frames share them (they keep theirs).
    pub fn make_mut(&mut self) -> &mut H
    where
        H: Clone,
    {
        let shared = Arc::make_mut(&mut self.0);
        shared.text.take();
        &mut shared.fields
    }

    /// The fields (copied when other frames share them).
    pub fn into_inner(self) -> H
    where
        H: Clone,
    {
        match Arc::try_unwrap(self.0) {
            Ok(shared) => shared.fields,
            Err(arc) => arc.fields.clone(),
        }
    }

    /// Whether `a` and `b` are the same head (not a copy).
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl<H> Deref for Head<H> {
    type Target = H;
    fn deref(&self) -> &H {
        &self.0.fields
    }
}

impl<H> Clone for Head<H> {
    /// The same head (a pointer).
    fn clone(&self) -> Self {
        Head(Arc::clone(&self.0))
    }
}

impl<H: PartialEq> PartialEq for Head<H> {
    fn eq(&self, other: &Self) -> bool {
        Head::ptr_eq(self, other) || self.0.fields == other.0.fields
    }
}

/// A shared head writes its fields' pieces (a stream of frames keeps the head it saw last
/// as the pointer, not a copy: the next frame's is compared by pointer first).
impl<H: WriteHead> WriteHead for Head<H> {
    const SEGMENTS: usize = H::SEGMENTS;
    fn write_segments(&self, w: &mut JsonWriter, ends: &mut [usize]) {
        self.0.fields.write_segments(w, ends);
    }
}

impl<H: Default> Default for Head<H> {
    fn default() -> Self {
        Head::new(H::default())
    }
}

impl<H: std::fmt::Debug> std::fmt::Debug for Head<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fields.fmt(f)
    }
}

/// A JSON object from any serializable value — a response `body`, an A2A object carried in one
/// (a value that is not an object is an empty map).
///
/// ```
/// let part = e2a::a2a::stream::text_part("hi");
/// assert_eq!(e2a::response::body_map(&part), serde_json::json!({"text": "hi"}).as_object().cloned().unwrap());
/// ```
pub fn body_map(v: impl serde::Serialize) -> Map<String, Value> {
    match serde_json::to_value(v) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}
