// SPDX-License-Identifier: Apache-2.0
//! Batches: requests made from registrations (so their memory is registered
//! and in bounds by construction), submitted in one call, and waited for by
//! polling `mc_te_get_transfer_status` (the C API has no completion event).
//! A batch borrows the registrations of its requests until it is dropped,
//! and its drop waits for its tasks to end, so no buffer is touched by mc
//! after Rust has it back.

use std::fmt;
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::time::{Duration, Instant};

use mc_te_sys as sys;

use crate::engine::{Engine, Segment};
use crate::error::{invalid, mc_error, Error, Result};
use crate::notify::Notify;

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Remote range -> local range.
    Read,
    /// Local range -> remote range.
    Write,
}

/// State of one task (`mc_te_task_status_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskStatus {
    Waiting,
    Pending,
    Invalid,
    Canceled,
    Completed,
    Timeout,
    Failed,
}

impl TaskStatus {
    fn from_raw(s: sys::mc_te_task_status_t) -> TaskStatus {
        match s {
            sys::MC_TE_WAITING => TaskStatus::Waiting,
            sys::MC_TE_PENDING => TaskStatus::Pending,
            sys::MC_TE_INVALID => TaskStatus::Invalid,
            sys::MC_TE_CANCELED => TaskStatus::Canceled,
            sys::MC_TE_COMPLETED => TaskStatus::Completed,
            sys::MC_TE_TIMEOUT => TaskStatus::Timeout,
            _ => TaskStatus::Failed,
        }
    }

    /// Neither Waiting nor Pending.
    pub fn is_done(self) -> bool {
        !matches!(self, TaskStatus::Waiting | TaskStatus::Pending)
    }
}

impl fmt::Display for TaskStatus {
    /// The C name: "MC_TE_COMPLETED".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            TaskStatus::Waiting => "MC_TE_WAITING",
            TaskStatus::Pending => "MC_TE_PENDING",
            TaskStatus::Invalid => "MC_TE_INVALID",
            TaskStatus::Canceled => "MC_TE_CANCELED",
            TaskStatus::Completed => "MC_TE_COMPLETED",
            TaskStatus::Timeout => "MC_TE_TIMEOUT",
            TaskStatus::Failed => "MC_TE_FAILED",
        };
        f.write_str(name)
    }
}

/// One task: made by `Registration::read` / `write`, it borrows the
/// registration for `'a`.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    engine: *const Engine,
    op: Op,
    ptr: *mut u8,
    len: usize,
    segment: Segment,
    remote: u64,
    _reg: PhantomData<&'a [u8]>,
}

// SAFETY: a Request is a shared borrow of a registration's memory, which mc
// accesses from its own threads anyway; it is only handed to mc.
unsafe impl<'a> Send for Request<'a> {}
unsafe impl<'a> Sync for Request<'a> {}

impl<'a> Request<'a> {
    pub(crate) fn new(
        engine: &Engine,
        op: Op,
        ptr: *mut u8,
        len: usize,
        segment: Segment,
        remote: u64,
    ) -> Request<'a> {
        Request {
            engine,
            op,
            ptr,
            len,
            segment,
            remote,
            _reg: PhantomData,
        }
    }

    pub fn op(&self) -> Op {
        self.op
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// An mc batch of up to `capacity` tasks. Dropping it waits until every
/// task has ended (mc ends each by `MC_TRANSFER_TIMEOUT` at the latest) and
/// frees it.
pub struct Batch<'a> {
    engine: &'a Engine,
    id: sys::mc_te_batch_id_t,
    capacity: usize,
    submitted: usize,
    _regs: PhantomData<&'a [u8]>,
}

impl Engine {
    /// A batch of up to `capacity` tasks (`mc_te_allocate_batch_id`).
    pub fn batch(&self, capacity: usize) -> Result<Batch<'_>> {
        if capacity == 0 {
            return invalid("batch: capacity 0".to_string());
        }
        // SAFETY: plain call.
        let id = unsafe { sys::mc_te_allocate_batch_id(self.raw(), capacity) };
        if id == sys::MC_TE_INVALID_BATCH_ID {
            return mc_error(
                "mc_te_allocate_batch_id",
                -1,
                format!("batch of {}", capacity),
            );
        }
        Ok(Batch {
            engine: self,
            id,
            capacity,
            submitted: 0,
            _regs: PhantomData,
        })
    }

    /// `reqs` as one batch, waited for until every task ended: Ok when all
    /// completed, else the first task's error.
    pub fn transfer(&self, reqs: &[Request<'_>]) -> Result<()> {
        let mut batch = self.batch(reqs.len())?;
        batch.submit(reqs)?;
        batch.wait(None)
    }
}

impl<'a> Batch<'a> {
    /// Queues `reqs` as the next tasks (`mc_te_submit_transfer`) and returns
    /// at once. Nothing is queued when they would exceed the capacity or a
    /// request comes from another engine's registration. mc turns a request
    /// whose segment is not open or whose remote range is outside the
    /// segment's buffers into an `Invalid` task, which `wait` reports.
    pub fn submit(&mut self, reqs: &[Request<'a>]) -> Result<()> {
        self.submit_impl(reqs, None)
    }

    /// Queues `reqs`, all to one segment, and `notify` to that segment once
    /// every task of the batch (those submitted before too) completed, that
    /// is once the writes are in the target's memory
    /// (`mc_te_submit_transfer_with_notify`); returns at once, and
    /// `notify_status` follows it. When a task does not complete the
    /// notification is dropped. Refused as `submit`, and with `Error::Mc`:
    /// -4 requests to more than one segment, -12 the previous notification
    /// of the batch unresolved, `NOTIFY_TOO_LARGE`.
    pub fn submit_with_notify(&mut self, reqs: &[Request<'a>], notify: &Notify) -> Result<()> {
        self.submit_impl(reqs, Some(notify))
    }

    pub(crate) fn engine(&self) -> &Engine {
        self.engine
    }

    pub(crate) fn id(&self) -> sys::mc_te_batch_id_t {
        self.id
    }

    fn submit_impl(&mut self, reqs: &[Request<'a>], notify: Option<&Notify>) -> Result<()> {
        if reqs.is_empty() {
            return invalid("submit: no requests".to_string());
        }
        if self.submitted + reqs.len() > self.capacity {
            return invalid(format!(
                "submit: {} more tasks to a batch of {} holding {}",
                reqs.len(),
                self.capacity,
                self.submitted
            ));
        }
        let mut entries = Vec::with_capacity(reqs.len());
        for (i, r) in reqs.iter().enumerate() {
            if !std::ptr::eq(r.engine, self.engine) {
                return invalid(format!(
                    "request {}: its registration belongs to another engine",
                    i
                ));
            }
            entries.push(sys::mc_te_request_t {
                opcode: match r.op {
                    Op::Read => sys::MC_TE_READ,
                    Op::Write => sys::MC_TE_WRITE,
                },
                source: r.ptr as *mut c_void,
                target_id: r.segment.0,
                target_offset: r.remote,
                length: r.len,
            });
        }
        // SAFETY: entries is read during the call; the memory they point at
        // is borrowed for 'a, which outlives the batch.
        let (func, rc) = match notify {
            None => ("mc_te_submit_transfer", unsafe {
                sys::mc_te_submit_transfer(
                    self.engine.raw(),
                    self.id,
                    entries.as_ptr(),
                    entries.len(),
                )
            }),
            Some(n) => {
                let desc = n.raw();
                ("mc_te_submit_transfer_with_notify", unsafe {
                    sys::mc_te_submit_transfer_with_notify(
                        self.engine.raw(),
                        self.id,
                        entries.as_ptr(),
                        entries.len(),
                        &desc,
                    )
                })
            }
        };
        if rc != 0 {
            return mc_error(
                func,
                rc,
                format!("{} request(s) to batch {}", reqs.len(), self.id),
            );
        }
        self.submitted += reqs.len();
        Ok(())
    }

    /// Tasks submitted so far.
    pub fn len(&self) -> usize {
        self.submitted
    }

    pub fn is_empty(&self) -> bool {
        self.submitted == 0
    }

    /// State of task `task` and the bytes known to have arrived.
    pub fn status(&self, task: usize) -> Result<(TaskStatus, usize)> {
        if task >= self.submitted {
            return invalid(format!(
                "status({}): the batch has {} task(s)",
                task, self.submitted
            ));
        }
        let mut st = sys::mc_te_transfer_status_t {
            status: sys::MC_TE_FAILED,
            transferred: 0,
        };
        // SAFETY: st is writable.
        let rc =
            unsafe { sys::mc_te_get_transfer_status(self.engine.raw(), self.id, task, &mut st) };
        if rc != 0 {
            return mc_error(
                "mc_te_get_transfer_status",
                rc,
                format!("task {} of batch {}", task, self.id),
            );
        }
        Ok((TaskStatus::from_raw(st.status), st.transferred))
    }

    /// Polls until every submitted task ended: Ok when all completed, the
    /// first other ending as `Error::Task`, or `Error::WaitTimeout` when
    /// `timeout` passes first (the tasks go on; wait again, or drop).
    pub fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let min_pause = Duration::from_micros(20);
        let mut pause = min_pause;
        let mut first = None;
        let mut i = 0;
        while i < self.submitted {
            let (status, transferred) = self.status(i)?;
            if status.is_done() {
                if status != TaskStatus::Completed && first.is_none() {
                    first = Some(Error::Task {
                        task: i,
                        status,
                        transferred,
                    });
                }
                i += 1;
                pause = min_pause;
                continue;
            }
            if let Some(d) = deadline {
                if Instant::now() >= d {
                    return Err(Error::WaitTimeout {
                        pending: self.submitted - i,
                    });
                }
            }
            std::thread::sleep(pause);
            pause = std::cmp::min(pause * 2, Duration::from_millis(1));
        }
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl<'a> Drop for Batch<'a> {
    fn drop(&mut self) {
        // The borrows of the registrations end here: mc must be done with
        // their memory first.
        let _ = self.wait(None);
        // SAFETY: every task ended.
        unsafe { sys::mc_te_free_batch_id(self.engine.raw(), self.id) };
    }
}
