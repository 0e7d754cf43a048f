//! JSON helpers every room shares.

/// `v` as compact JSON text. Written straight into a byte buffer (`Value`'s `Display` goes
/// through the formatting machinery, a call per token); a `Value` always serializes.
pub(crate) fn text<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// A deserializer over the members of a JSON object, borrowing them: a typed view of request
/// params is read without copying them into another `Value`.
pub(crate) fn object_deserializer<'a>(
    object: &'a serde_json::Map<String, serde_json::Value>,
) -> serde::de::value::MapDeserializer<'a, impl Iterator<Item = (&'a str, &'a serde_json::Value)>, serde_json::Error> {
    serde::de::value::MapDeserializer::new(object.iter().map(|(k, v)| (k.as_str(), v)))
}

/// The members of a serde path (`mcpServers[0].name` → `mcpServers`, `0`, `name`).
pub(crate) fn path_members(path: &serde_path_to_error::Path) -> impl Iterator<Item = String> + '_ {
    use serde_path_to_error::Segment;
    path.iter().filter_map(|segment| match segment {
        Segment::Seq { index } => Some(index.to_string()),
        Segment::Map { key } => Some(key.clone()),
        Segment::Enum { .. } | Segment::Unknown => None,
    })
}

/// Members as a JSON pointer (RFC 6901: `~` and `/` escaped): `["params", "a/b"]` →
/// `/params/a~1b`.
pub(crate) fn json_pointer<S: AsRef<str>>(members: impl IntoIterator<Item = S>) -> String {
    members
        .into_iter()
        .map(|m| format!("/{}", m.as_ref().replace('~', "~0").replace('/', "~1")))
        .collect()
}
