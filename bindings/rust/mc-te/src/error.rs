// SPDX-License-Identifier: Apache-2.0
//! The error type: a refused argument, a failed C call with its code, a task
//! that did not complete, or a wait that ran out of time.

use std::fmt;

use crate::TaskStatus;

/// What every fallible call returns.
pub type Result<T> = std::result::Result<T, Error>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// Refused before calling mc: an empty buffer or name, a NUL in a
    /// string, a range outside its registration, a batch too small.
    InvalidArgument(String),
    /// A call into mc's C API failed: the function, its (negative) return
    /// code, and what was passed to it. mc logs the cause.
    Mc {
        func: &'static str,
        code: i32,
        context: String,
    },
    /// A task ended in a state other than `Completed`: `Invalid` (refused at
    /// submit: segment not open, remote range outside its buffers),
    /// `Failed`, `Timeout` or `Canceled`.
    Task {
        task: usize,
        status: TaskStatus,
        transferred: usize,
    },
    /// `Batch::wait` reached its deadline with `pending` tasks not ended.
    WaitTimeout { pending: usize },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidArgument(what) => write!(f, "mc te: invalid argument: {}", what),
            Error::Mc {
                func,
                code,
                context,
            } => write!(f, "mc te: {} failed (code {}): {}", func, code, context),
            Error::Task {
                task,
                status,
                transferred,
            } => {
                write!(
                    f,
                    "mc te: task {} ended {} ({} bytes arrived)",
                    task, status, transferred
                )?;
                if *status == TaskStatus::Invalid {
                    write!(
                        f,
                        ": refused at submit (segment not open, or remote range outside its buffers)"
                    )?;
                }
                Ok(())
            }
            Error::WaitTimeout { pending } => {
                write!(
                    f,
                    "mc te: wait timed out with {} task(s) not ended",
                    pending
                )
            }
        }
    }
}

impl std::error::Error for Error {}

pub(crate) fn invalid<T>(what: String) -> Result<T> {
    Err(Error::InvalidArgument(what))
}

pub(crate) fn mc_error<T>(func: &'static str, code: i32, context: String) -> Result<T> {
    Err(Error::Mc {
        func,
        code,
        context,
    })
}
