// SPDX-License-Identifier: Apache-2.0
//! Registrations: a buffer registered with an engine, owned or mutably
//! borrowed by the `Registration`, unregistered when it drops. The buffer
//! cannot be freed, moved or touched through another path while registered.

use std::ops::{DerefMut, Range};
use std::os::raw::{c_int, c_void};

use mc_te_sys as sys;

use crate::batch::{Op, Request};
use crate::engine::{c_string, Engine, Segment};
use crate::error::{invalid, mc_error, Result};

/// Memory whose bytes stay at one address while the value lives, even when
/// the value itself is moved: what a registration may hold.
///
/// # Safety
/// `deref_mut` must return the same address and length every time, for as
/// long as the value lives, and the memory must not be freed or reused
/// before the value is dropped. Implemented for `Vec<u8>` and `Box<[u8]>`
/// (heap memory; the registration owns it and never resizes it) and for
/// `&mut [u8]` (borrowed for the registration's lifetime).
pub unsafe trait StableBuffer: DerefMut<Target = [u8]> {}

// SAFETY: the heap block of a Vec or Box does not move when the Vec or Box
// does, and a Registration gives out no &mut Vec that could resize it.
unsafe impl StableBuffer for Vec<u8> {}
unsafe impl StableBuffer for Box<[u8]> {}
// SAFETY: the borrow pins the memory for 'a.
unsafe impl<'a> StableBuffer for &'a mut [u8] {}

/// A buffer registered with an engine (`mc_te_register_local_memory`).
/// Unregistered on drop, or by `unregister`, which gives the buffer back.
///
/// Remote peers may write into a remote-accessible registration at any time
/// (that is the point); `as_slice` shows what is there, so agree with the
/// peer on when it is written, as with any RDMA buffer.
pub struct Registration<'e, B: StableBuffer> {
    engine: &'e Engine,
    buf: Option<B>, // None only inside unregister()
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the raw pointer is the buffer's own; sending or sharing the
// registration is sending or sharing B (and &Engine, which is Sync).
unsafe impl<'e, B: StableBuffer + Send> Send for Registration<'e, B> {}
unsafe impl<'e, B: StableBuffer + Sync> Sync for Registration<'e, B> {}

impl Engine {
    /// Registers `buf` with the engine. `location`: "cpu:N", "cuda:N" or
    /// "*" (the NUMA node of the pages); `remote_accessible`: published to
    /// peers, else only a local source and destination. On failure the
    /// buffer is dropped.
    pub fn register<B: StableBuffer>(
        &self,
        mut buf: B,
        location: &str,
        remote_accessible: bool,
    ) -> Result<Registration<'_, B>> {
        let (ptr, len) = {
            let s: &mut [u8] = &mut buf;
            (s.as_mut_ptr(), s.len())
        };
        if len == 0 {
            return invalid("register: empty buffer".to_string());
        }
        let cl = c_string("location", if location.is_empty() { "*" } else { location })?;
        // SAFETY: [ptr, ptr+len) is buf's memory, which stays put while the
        // Registration holds buf (StableBuffer).
        let rc = unsafe {
            sys::mc_te_register_local_memory(
                self.raw(),
                ptr as *mut c_void,
                len,
                cl.as_ptr(),
                remote_accessible as c_int,
            )
        };
        if rc != 0 {
            return mc_error(
                "mc_te_register_local_memory",
                rc,
                format!("{} bytes at {:p}, location {:?}", len, ptr, location),
            );
        }
        Ok(Registration {
            engine: self,
            buf: Some(buf),
            ptr,
            len,
        })
    }
}

impl<'e, B: StableBuffer> Registration<'e, B> {
    /// The registered bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the buffer's memory, alive while self is.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The registered bytes, writable: not while a batch uses the
    /// registration (it borrows it).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as as_slice, and &mut self excludes every Request.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer's address: what a peer gives as `remote` (it also comes
    /// with `Engine::segment_buffers` at the peer).
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    /// A task reading `len(range)` bytes at `remote` of `segment` into
    /// `range` of this buffer.
    pub fn read(&self, range: Range<usize>, segment: Segment, remote: u64) -> Result<Request<'_>> {
        self.request(Op::Read, range, segment, remote)
    }

    /// A task writing `range` of this buffer to `remote` of `segment`.
    pub fn write(&self, range: Range<usize>, segment: Segment, remote: u64) -> Result<Request<'_>> {
        self.request(Op::Write, range, segment, remote)
    }

    fn request(
        &self,
        op: Op,
        range: Range<usize>,
        segment: Segment,
        remote: u64,
    ) -> Result<Request<'_>> {
        if range.start >= range.end || range.end > self.len {
            return invalid(format!(
                "{:?}: range {}..{} is empty or outside the registration of {} bytes",
                op, range.start, range.end, self.len
            ));
        }
        // SAFETY: start < len: inside the buffer.
        let ptr = unsafe { self.ptr.add(range.start) };
        Ok(Request::new(
            self.engine,
            op,
            ptr,
            range.end - range.start,
            segment,
            remote,
        ))
    }

    /// Unregisters and gives the buffer back. When mc refuses (it logs
    /// why), the buffer is leaked rather than freed under a live
    /// registration, and the error returned.
    pub fn unregister(mut self) -> Result<B> {
        let rc = self.unregister_raw();
        let buf = self.buf.take();
        std::mem::forget(self);
        match (rc, buf) {
            (0, Some(buf)) => Ok(buf),
            (rc, buf) => {
                // Still registered: freeing it would leave mc a dangling
                // registration, so the memory is leaked.
                std::mem::forget(buf);
                mc_error(
                    "mc_te_unregister_local_memory",
                    rc,
                    "still registered; leaked".to_string(),
                )
            }
        }
    }

    fn unregister_raw(&mut self) -> i32 {
        // SAFETY: the address registered in Engine::register.
        unsafe { sys::mc_te_unregister_local_memory(self.engine.raw(), self.ptr as *mut c_void) }
    }
}

impl<'e, B: StableBuffer> Drop for Registration<'e, B> {
    fn drop(&mut self) {
        if self.unregister_raw() != 0 {
            // mc logged why; the memory cannot be freed under it.
            if let Some(buf) = self.buf.take() {
                std::mem::forget(buf);
            }
        }
    }
}
