//! The connections of closed stores, kept in this process for the next open with
//! the same conninfo and durability (option `pool`, on by default), so that the
//! open skips the login. Each keeps its `synchronous_commit` and its prepared
//! insert, nothing else: a store runs no transaction across calls and sets nothing
//! more. At most [`MAX_IDLE`] are kept (the oldest is closed); one is taken only by
//! the process that made it (a forked child never touches its parent's socket),
//! and one that turns out dead or behind the schema is dropped and a new
//! connection made, so a kept connection never fails an open.

use postgres::Statement;

use super::connection::Shared;
use super::failure::Secret;

/// The most idle connections a process keeps.
pub(super) const MAX_IDLE: usize = 8;

pub(super) struct Idle {
    pub(super) key: String,
    pub(super) pid: u32,
    pub(super) client: Shared,
    pub(super) insert: Option<Statement>,
    pub(super) secret: Secret,
}

static IDLE: std::sync::Mutex<Vec<Idle>> = std::sync::Mutex::new(Vec::new());

fn idle() -> std::sync::MutexGuard<'static, Vec<Idle>> {
    IDLE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The newest idle connection for `key` that nothing else holds.
pub(super) fn take(key: &str) -> Option<Idle> {
    let pid = std::process::id();
    let mut idle = idle();
    // Another process's connections (this one was forked): forgotten, never
    // closed (closing would end the parent's session on the shared socket).
    for other in idle.extract_if(.., |i| i.pid != pid) {
        std::mem::forget(other);
    }
    let at = idle
        .iter()
        .rposition(|i| i.key == key && std::sync::Arc::strong_count(&i.client) == 1)?;
    Some(idle.remove(at))
}

/// Keeps `connection`, closing the oldest kept one beyond [`MAX_IDLE`].
pub(super) fn give(connection: Idle) {
    let mut idle = idle();
    idle.push(connection);
    if idle.len() > MAX_IDLE {
        let oldest = idle.remove(0);
        drop(idle);
        drop(oldest);
    }
}
