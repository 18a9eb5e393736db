// SPDX-License-Identifier: Apache-2.0
//! Notifications: a small message to a segment's owner, sent after a
//! batch's writes (`Batch::submit_with_notify`) or alone
//! (`Engine::send_notify_by_name`, `send_notify_by_id`), and taken at the
//! target by `Engine::get_notifies`.

use std::os::raw::c_char;
use std::time::{Duration, Instant};

use mc_te_sys as sys;

use crate::batch::Batch;
use crate::engine::{c_string, Engine, Segment};
use crate::error::{mc_error, Error, Result};

/// mc's codes of the notification calls (`<mc/transfer_engine_c.h>`).
pub const NOTIFY_TOO_LARGE: i32 = -15;
/// The target's `MC_NOTIFY_QUEUE_LENGTH` queue is full.
pub const NOTIFY_QUEUE_FULL: i32 = -2;
/// Refused by the target (`MC_AUTH_TOKEN`, or the sender not proved).
pub const NOTIFY_REFUSED: i32 = -18;
/// A batch's notification dropped: a task of the batch did not complete.
pub const NOTIFY_DROPPED: i32 = -7;

/// A notification: a name and a message, byte strings (embedded NULs
/// arrive as sent); together at most `MC_NOTIFY_MAX_SIZE` bytes (64 KiB by
/// default), more is `Error::Mc` with code `NOTIFY_TOO_LARGE`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Notify {
    pub name: Vec<u8>,
    pub msg: Vec<u8>,
}

impl Notify {
    pub fn new(name: impl Into<Vec<u8>>, msg: impl Into<Vec<u8>>) -> Notify {
        Notify {
            name: name.into(),
            msg: msg.into(),
        }
    }

    /// The C view; valid while `self` is.
    pub(crate) fn raw(&self) -> sys::mc_te_notify_desc_t {
        sys::mc_te_notify_desc_t {
            name: self.name.as_ptr() as *const c_char,
            name_len: self.name.len(),
            notify_msg: self.msg.as_ptr() as *const c_char,
            notify_msg_len: self.msg.len(),
        }
    }
}

/// A notification this engine took: `sender` is the segment that sent it
/// (under P2PHANDSHAKE its `local_addr()`), as the engine verified it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    pub sender: Vec<u8>,
    pub notify: Notify,
}

/// The state of a batch's notification (`mc_te_get_batch_notify_status`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotifyStatus {
    /// Its tasks run, or it is on its way.
    Pending,
    /// The target took it.
    Taken,
    /// Why not: `Error::Mc` with code `NOTIFY_DROPPED` when a task did not
    /// complete, else the error sending it met (as `send_notify_by_name`).
    Failed(Error),
}

/// # Safety
/// `p` points at `len` readable bytes, or `len` is 0.
unsafe fn owned(p: *const c_char, len: usize) -> Vec<u8> {
    if len == 0 {
        return Vec::new();
    }
    std::slice::from_raw_parts(p as *const u8, len).to_vec()
}

impl Engine {
    /// Sends `notify` to the segment of that name (it need not be open) and
    /// returns once the target took it (`mc_te_send_notify_by_name`).
    /// Notifications of one engine are taken in the order sent, each once.
    /// Errors: `Error::Mc` with `NOTIFY_TOO_LARGE`, `NOTIFY_QUEUE_FULL`,
    /// `NOTIFY_REFUSED`, or another code (no answer, unknown name).
    pub fn send_notify_by_name(&self, segment_name: &str, notify: &Notify) -> Result<()> {
        let cn = c_string("segment name", segment_name)?;
        let desc = notify.raw();
        // SAFETY: the name and desc's bytes outlive the call.
        let rc = unsafe { sys::mc_te_send_notify_by_name(self.raw(), cn.as_ptr(), &desc) };
        if rc != 0 {
            return mc_error(
                "mc_te_send_notify_by_name",
                rc,
                format!(
                    "segment {:?}, {} + {} bytes",
                    segment_name,
                    notify.name.len(),
                    notify.msg.len()
                ),
            );
        }
        Ok(())
    }

    /// The same to an opened segment (`mc_te_send_notify_by_id`).
    pub fn send_notify_by_id(&self, segment: Segment, notify: &Notify) -> Result<()> {
        let desc = notify.raw();
        // SAFETY: desc's bytes outlive the call.
        let rc = unsafe { sys::mc_te_send_notify_by_id(self.raw(), segment.0, &desc) };
        if rc != 0 {
            return mc_error(
                "mc_te_send_notify_by_id",
                rc,
                format!(
                    "segment {}, {} + {} bytes",
                    segment.0,
                    notify.name.len(),
                    notify.msg.len()
                ),
            );
        }
        Ok(())
    }

    /// Every notification taken so far, oldest first, removed from mc's
    /// queue (`mc_te_get_notifies`). A notification announcing a batch's
    /// writes is handed over only once they are in this process's memory.
    /// Does not block; poll it.
    pub fn get_notifies(&self) -> Result<Vec<Received>> {
        let mut arr: *mut sys::mc_te_received_notify_t = std::ptr::null_mut();
        let mut count = 0usize;
        // SAFETY: both outputs are writable.
        let rc = unsafe { sys::mc_te_get_notifies(self.raw(), &mut arr, &mut count) };
        if rc != 0 {
            return mc_error("mc_te_get_notifies", rc, "notifications lost".to_string());
        }
        if count == 0 || arr.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: mc handed over `count` entries, each string its length's
        // bytes; copied, then freed once.
        let out = unsafe {
            let got = std::slice::from_raw_parts(arr, count)
                .iter()
                .map(|r| Received {
                    sender: owned(r.sender, r.sender_len),
                    notify: Notify {
                        name: owned(r.name, r.name_len),
                        msg: owned(r.notify_msg, r.notify_msg_len),
                    },
                })
                .collect();
            sys::mc_te_free_notifies(arr, count);
            got
        };
        Ok(out)
    }
}

impl<'a> Batch<'a> {
    /// The batch's notification (`mc_te_get_batch_notify_status`); an
    /// `Error::Mc` when it has none.
    pub fn notify_status(&self) -> Result<NotifyStatus> {
        // SAFETY: a plain call on a live batch.
        let rc = unsafe { sys::mc_te_get_batch_notify_status(self.engine().raw(), self.id()) };
        Ok(match rc {
            1 => NotifyStatus::Pending,
            0 => NotifyStatus::Taken,
            -11 => {
                return mc_error(
                    "mc_te_get_batch_notify_status",
                    rc,
                    format!("batch {} has no notification", self.id()),
                )
            }
            _ => NotifyStatus::Failed(Error::Mc {
                func: "mc_te_get_batch_notify_status",
                code: rc,
                context: format!("batch {}", self.id()),
            }),
        })
    }

    /// Polls `notify_status` until it is not `Pending`: Ok once the target
    /// took it, the failure's error, or `Error::WaitTimeout` past `timeout`.
    pub fn wait_notify(&self, timeout: Option<Duration>) -> Result<()> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut pause = Duration::from_micros(20);
        loop {
            match self.notify_status()? {
                NotifyStatus::Taken => return Ok(()),
                NotifyStatus::Failed(e) => return Err(e),
                NotifyStatus::Pending => {}
            }
            if let Some(d) = deadline {
                if Instant::now() >= d {
                    return Err(Error::WaitTimeout { pending: 1 });
                }
            }
            std::thread::sleep(pause);
            pause = std::cmp::min(pause * 2, Duration::from_millis(1));
        }
    }
}
