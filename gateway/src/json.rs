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
