//! The hash maps a request goes through (runs, tasks, sessions, pauses): `foldhash`, seeded
//! at random per process, instead of std's SipHash, which costs several times more on the short
//! string keys these maps hold.

/// A [`std::collections::HashMap`] hashed by `foldhash` (randomly seeded: a client that chooses
/// keys cannot predict their buckets).
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
