// SPDX-License-Identifier: Apache-2.0
//! Safe Rust API of mc's Transfer Engine, over its C API
//! (`<mc/transfer_engine_c.h>`, the `mc-te-sys` crate).
//!
//! ```no_run
//! use mc_te::{Engine, Result};
//! fn main() -> Result<()> {
//!     let engine = Engine::new("P2PHANDSHAKE", "127.0.0.1")?;
//!     let reg = engine.register(vec![0u8; 1 << 20], "*", true)?; // unregistered on drop
//!     let peer = engine.open_segment("10.0.0.2:15123")?;
//!     let remote = engine.segment_buffers(peer)?;
//!     engine.transfer(&[reg.read(0..reg.len(), peer, remote[0].addr)?])?;
//!     println!("first byte {}", reg.as_slice()[0]);
//!     Ok(())
//! }
//! ```
//!
//! Ownership: a [`Registration`] owns (`Vec<u8>`, `Box<[u8]>`) or mutably
//! borrows (`&mut [u8]`) its buffer, so the buffer cannot be freed while
//! registered, and unregisters it on drop. A [`Request`] is made from a
//! registration (its memory is registered and in bounds by construction) and
//! borrows it; a [`Batch`] keeps those borrows until it drops, and its drop
//! waits for its tasks to end. Registrations and batches borrow the
//! [`Engine`], which therefore outlives them.
//!
//! Errors: [`Error`]: a refused argument, a failed C call with its return
//! code, a task that ended other than `Completed`, a wait past its timeout.
//!
//! Threads: `Engine` is `Send` and `Sync` (the C API may be called from any
//! thread concurrently); so are `Registration`s of `Send`/`Sync` buffers,
//! `Request`s and `Batch`es. Several threads may run batches on one engine.
//!
//! Notifications (Mooncake's `getNotifies` / `sendNotify`):
//! [`Batch::submit_with_notify`] sends a [`Notify`] once the batch's writes
//! are in the target's memory, [`Engine::send_notify_by_name`] /
//! [`Engine::send_notify_by_id`] one alone, [`Engine::get_notifies`] hands
//! over those taken ([`Received`], owned bytes, the verified sender).

mod batch;
mod engine;
mod error;
mod memory;
mod notify;

pub use batch::{Batch, Op, Request, TaskStatus};
pub use engine::{BufferInfo, Engine, PathInfo, Segment};
pub use error::{Error, Result};
pub use memory::{Registration, StableBuffer};
pub use notify::{
    Notify, NotifyStatus, Received, NOTIFY_DROPPED, NOTIFY_QUEUE_FULL, NOTIFY_REFUSED,
    NOTIFY_TOO_LARGE,
};
