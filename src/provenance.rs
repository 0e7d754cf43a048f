//! Building provenance records for converters.

use serde_json::{Map, Value};

use crate::types::{ConverterId, E2AProvenance};

/// Provenance of a conversion done now: `source_protocol`, converter (the caller's or this
/// SDK's id), `converted_at` = now, `details` = `base` with `extra` merged on top.
pub(crate) fn converted(
    source_protocol: &str,
    converter: Option<String>,
    default_converter: ConverterId,
    mut details: Map<String, Value>,
    extra: Option<&Map<String, Value>>,
) -> E2AProvenance {
    if let Some(extra) = extra {
        details.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    E2AProvenance {
        source_protocol: source_protocol.into(),
        converter: Some(converter.unwrap_or_else(|| default_converter.as_str().into())),
        converted_at: Some(crate::timestamp::utc_now_iso()),
        details,
    }
}
