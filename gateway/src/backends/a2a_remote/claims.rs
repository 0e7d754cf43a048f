//! Who finishes a run that waits for a delegated task's callback: of every gateway, one — its
//! own process when it still runs it, else the gateway the callback reached
//! ([`super::delegate`]'s `finishing:` keys), and what goes when the run no longer waits.

use crate::agent::{PauseError, PauseKeeper};
use crate::runs::waiting_key;

/// After how long a claim to finish a run ([`claim`]) is taken to be its dead finisher's.
const CLAIM_TTL_MS: i64 = 60_000;

/// Forgets run `run`'s waiting mark and its claim: it waits no more (it has ended, or it gave up).
pub(super) async fn release(store: &dyn PauseKeeper, run: &str) -> Result<(), PauseError> {
    let mark = store.take_pause(&waiting_key(run)).await?;
    tracing::debug!(run, had_mark = mark.is_some(), "the run waits for no callback any more");
    // every generation of its claim, up to the first not taken
    for generation in 0..CLAIM_GENERATIONS {
        if store.take_pause(&finishing_key(run, generation)).await?.is_none() {
            break;
        }
    }
    Ok(())
}

/// Most claims to finish one run ([`claim`]): the first, and the takeovers of stale ones.
const CLAIM_GENERATIONS: u32 = 16;

/// The pause key of generation `generation` of the claim to finish run `run` (what time it was
/// claimed, in ms).
fn finishing_key(run: &str, generation: u32) -> String {
    format!("finishing:{generation}:{run}")
}

/// Claims the finishing of run `run`: whether this caller won (of every gateway, one does). A
/// claim older than [`CLAIM_TTL_MS`] is taken over: its finisher died before the run ended (the
/// run still waits, and the child, which had no `202` — a callback is answered once the run has
/// ended — sends its callback again). A takeover claims the claim's next generation, so of
/// several callers that find a claim stale at once, one wins.
pub(super) async fn claim(store: &dyn PauseKeeper, run: &str) -> Result<bool, PauseError> {
    let now = e2a::timestamp::now_ms();
    for generation in 0..CLAIM_GENERATIONS {
        let Some(at) = store
            .keep_first_pause(&finishing_key(run, generation), now.to_string())
            .await?
        else {
            return Ok(true);
        };
        let stale = at.parse::<i64>().map_or(true, |t| now.saturating_sub(t) > CLAIM_TTL_MS);
        if !stale {
            return Ok(false);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    #[tokio::test]
    async fn a_stale_claim_is_taken_over_by_one_caller_a_fresh_one_by_none() {
        let store = MemoryStore::new();
        assert!(claim(&store, "r").await.is_ok_and(|won| won));
        assert!(claim(&store, "r").await.is_ok_and(|won| !won), "held, and fresh");
        // its finisher died a while ago
        let old = (e2a::timestamp::now_ms() - CLAIM_TTL_MS - 1).to_string();
        store.put_pause(&finishing_key("r", 0), old).await.expect("put");
        let (a, b) = tokio::join!(claim(&store, "r"), claim(&store, "r"));
        let won = [a, b].into_iter().filter(|w| matches!(w, Ok(true))).count();
        assert_eq!(won, 1, "of two takers at once, one wins");
        assert!(claim(&store, "r").await.is_ok_and(|won| !won), "the takeover holds");
        // released: every generation goes, and the next claim wins at once
        release(&store, "r").await.expect("release");
        for generation in 0..2 {
            assert_eq!(
                store.get_pause(&finishing_key("r", generation)).await.ok().flatten(),
                None
            );
        }
        assert!(claim(&store, "r").await.is_ok_and(|won| won));
    }
}
