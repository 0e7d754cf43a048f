//! The journal: one log for everything a gateway writes as work goes on — an A2A task's events
//! and an E2A or AG-UI run's frames alike — numbered per stream, and one table of leases saying
//! which gateway writes a stream until when. (An ACP session's history is a stream of it too.)
//!
//! The SQLite and PostgreSQL stores keep it in two tables, the same in both:
//!
//! - `e2a_journal (kind, stream, seq, entry)`: a stream's entries (JSON text) by number (in
//!   SQLite the events of one task append share a row, numbered by the last, with a column
//!   `ends` saying where each ends);
//! - `e2a_leases (kind, stream, holder, until_ms)`: the gateway writing a stream and until
//!   when (on the store's clock), renewed while it runs.
//!
//! A stream's head stays with its role — a task's record in `a2a_tasks`, a run's key and
//! request in `e2a_runs` — and says which of its entries are final. Reading after a position
//! (a follower catching up, a `Last-Event-ID` resume), leases (who runs it, whether its writer
//! is gone), retention (a stream forgotten with its entries and lease) and the store's
//! notices (an entry committed: its followers on other gateways wake) are one mechanism under
//! tasks and runs. Stream ids are unique within a [`Kind`], not across kinds: a client may
//! choose a new task's id, so it may equal a run's.

/// How long a follower of a stream another gateway writes (a task it runs, a run it runs)
/// waits for the store's notice of a new entry before it reads the journal itself: notices
/// sent while the listening connection was down are lost, so a lost notice delays an entry by
/// this much, and never loses it.
pub(crate) const QUIET: std::time::Duration = std::time::Duration::from_secs(1);

/// What a stream of the journal holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An A2A task's events ([`super::TaskLog`]).
    Task,
    /// An E2A or AG-UI run's frames ([`super::RunStore`]).
    Run,
    /// An ACP session's history ([`super::SessionStore`], SQLite).
    Session,
}

impl Kind {
    /// The kind as the journal's `kind` column holds it.
    pub(crate) const fn code(self) -> i16 {
        match self {
            Kind::Task => 1,
            Kind::Run => 2,
            Kind::Session => 3,
        }
    }
}

/// The statements that forget the streams of `kind` whose id is `which` (an SQL condition on
/// the column `stream`: `= ANY($1)`, `IN (SELECT …)`), their entries and their leases: to run
/// before the statement that forgets their heads, which `which` may read.
pub(crate) fn forget(kind: Kind, which: &str) -> [String; 2] {
    let k = kind.code();
    [
        format!("DELETE FROM e2a_journal WHERE kind = {k} AND stream {which}"),
        format!("DELETE FROM e2a_leases WHERE kind = {k} AND stream {which}"),
    ]
}

/// An SQL condition: stream `stream` (an SQL expression) of `kind` has a lease valid at `now`
/// (an SQL expression: a parameter, or the database server's clock).
pub(crate) fn leased(kind: Kind, stream: &str, now: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM e2a_leases l WHERE l.kind = {} AND l.stream = {stream} AND l.until_ms > {now})",
        kind.code()
    )
}

/// How the tables of the logs a store kept before the journal become the journal's, as
/// `INSERT … SELECT` statements (SQLite and PostgreSQL alike): the tasks' events, their leases
/// (PostgreSQL only), the runs' frames, the runs' leases (then in `e2a_runs`) and the ACP
/// sessions' history (SQLite only).
pub(crate) mod before {
    use super::Kind;

    /// The rows of `table` (a stream id in `stream`, a sequence number in `seq`, the entry in
    /// `entry`) into the journal as streams of `kind`.
    fn entries(kind: Kind, table: &str, stream: &str, entry: &str) -> String {
        format!(
            "INSERT INTO e2a_journal (kind, stream, seq, entry) SELECT {}, {stream}, seq, {entry} FROM {table}",
            kind.code()
        )
    }

    /// The leases of `table` (a stream id in `stream`, `holder`, `until_ms`) into the leases,
    /// as streams of `kind`.
    fn leases(kind: Kind, table: &str, stream: &str) -> String {
        format!(
            "INSERT INTO e2a_leases (kind, stream, holder, until_ms) SELECT {}, {stream}, holder, until_ms FROM {table}",
            kind.code()
        )
    }

    /// The tasks' events (`a2a_task_events`) into the journal.
    pub(crate) fn task_events() -> String {
        entries(Kind::Task, "a2a_task_events", "task_id", "event")
    }

    /// The runs' frames (`e2a_run_frames`) into the journal.
    pub(crate) fn run_frames() -> String {
        entries(Kind::Run, "e2a_run_frames", "run", "frame")
    }

    /// The ACP sessions' history (`acp_session_history`, SQLite) into the journal.
    pub(crate) fn session_history() -> String {
        entries(Kind::Session, "acp_session_history", "session_id", "entry")
    }

    /// The runs' leases (`e2a_runs.holder`, `until_ms`) into the leases.
    pub(crate) fn run_leases() -> String {
        leases(Kind::Run, "e2a_runs", "run")
    }

    /// The tasks' leases (`a2a_leases`, PostgreSQL) into the leases.
    pub(crate) fn task_leases() -> String {
        leases(Kind::Task, "a2a_leases", "task_id")
    }
}
