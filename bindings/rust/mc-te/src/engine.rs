// SPDX-License-Identifier: Apache-2.0
//! `Engine`: one initialised `mc_te_t`, and the segments opened through it.

use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::ptr::NonNull;

use mc_te_sys as sys;

use crate::error::{invalid, mc_error, Result};

/// A segment opened by `Engine::open_segment`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Segment(pub(crate) sys::mc_te_segment_id_t);

impl Segment {
    /// A handle from the C API (`mc_te_open_segment` of the same engine);
    /// one the engine does not know makes its calls fail and its tasks
    /// `Invalid`.
    pub fn from_raw(id: i32) -> Segment {
        Segment(id)
    }

    /// The C handle (`mc_te_segment_id_t`).
    pub fn id(self) -> i32 {
        self.0
    }
}

/// A buffer of an opened segment, as its owner published it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferInfo {
    /// "cpu:0", "cuda:1".
    pub location: String,
    /// The remote address: `Request`'s `remote` for a transfer.
    pub addr: u64,
    pub length: u64,
}

/// A lane of the endpoint to a segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathInfo {
    pub local_device: String,
    pub remote_device: String,
    /// 0 (both devices preferred) .. 4.
    pub rank: i32,
    /// Takes the slices of such a transfer now.
    pub carries: bool,
    pub healthy: bool,
    /// Payload posted on it so far.
    pub bytes: u64,
}

/// A Transfer Engine, initialised and connected to its metadata service.
/// Dropping it destroys the engine (and removes its metadata); registrations
/// and batches borrow it, so they end first.
///
/// `Send` and `Sync`: every function of the C API may be called from any
/// thread concurrently (`mc::TransferEngine` is thread-safe).
pub struct Engine {
    raw: NonNull<sys::mc_te_t>,
}

// SAFETY: the C API is safe to call from any thread, concurrently, on one
// engine (the thread-safety note of <mc/transfer_engine_c.h>).
unsafe impl Send for Engine {}
unsafe impl Sync for Engine {}

pub(crate) fn c_string(what: &str, s: &str) -> Result<CString> {
    match CString::new(s) {
        Ok(c) => Ok(c),
        Err(_) => invalid(format!("{} {:?} holds a NUL byte", what, s)),
    }
}

fn from_c_chars(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Engine {
    /// Creates and initialises an engine (`mc_te_init`). `metadata`:
    /// "P2PHANDSHAKE", "etcd://host:port", "redis://host:port",
    /// "http://host:port/metadata"; `local_server_name`: `"host[:port]"`, the
    /// address peers reach this engine at.
    pub fn new(metadata: &str, local_server_name: &str) -> Result<Engine> {
        if metadata.is_empty() || local_server_name.is_empty() {
            return invalid(format!(
                "Engine::new({:?}, {:?}): empty metadata or server name",
                metadata, local_server_name
            ));
        }
        let cm = c_string("metadata", metadata)?;
        let cn = c_string("local server name", local_server_name)?;
        // SAFETY: plain C calls; the strings outlive them.
        let raw = match NonNull::new(unsafe { sys::mc_te_create() }) {
            Some(raw) => raw,
            None => return mc_error("mc_te_create", -1, "out of memory".to_string()),
        };
        let rc = unsafe { sys::mc_te_init(raw.as_ptr(), cm.as_ptr(), cn.as_ptr()) };
        if rc != 0 {
            unsafe { sys::mc_te_destroy(raw.as_ptr()) };
            return mc_error(
                "mc_te_init",
                rc,
                format!(
                    "metadata {:?}, local server name {:?}",
                    metadata, local_server_name
                ),
            );
        }
        Ok(Engine { raw })
    }

    pub(crate) fn raw(&self) -> *mut sys::mc_te_t {
        self.raw.as_ptr()
    }

    /// "ip:port" of the RPC listener: the segment name peers open under
    /// P2PHANDSHAKE.
    pub fn local_addr(&self) -> Result<String> {
        let mut buf = [0 as c_char; 128];
        // SAFETY: buf is writable for its length.
        let rc =
            unsafe { sys::mc_te_get_local_ip_and_port(self.raw(), buf.as_mut_ptr(), buf.len()) };
        if rc != 0 {
            return mc_error("mc_te_get_local_ip_and_port", rc, String::new());
        }
        // SAFETY: NUL-terminated on success.
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    /// Finds a segment by name (P2PHANDSHAKE: the owner's `local_addr`;
    /// other metadata services: its `local_server_name`).
    pub fn open_segment(&self, name: &str) -> Result<Segment> {
        if name.is_empty() {
            return invalid("open_segment: empty segment name".to_string());
        }
        let cn = c_string("segment name", name)?;
        // SAFETY: the string outlives the call.
        let id = unsafe { sys::mc_te_open_segment(self.raw(), cn.as_ptr()) };
        if id < 0 {
            return mc_error("mc_te_open_segment", id, format!("segment {:?}", name));
        }
        Ok(Segment(id))
    }

    /// Forgets a segment; fails while tasks to it are unfinished.
    pub fn close_segment(&self, segment: Segment) -> Result<()> {
        // SAFETY: plain call.
        let rc = unsafe { sys::mc_te_close_segment(self.raw(), segment.0) };
        if rc != 0 {
            return mc_error("mc_te_close_segment", rc, format!("segment {}", segment.0));
        }
        Ok(())
    }

    /// The buffers the owner of an opened segment published.
    pub fn segment_buffers(&self, segment: Segment) -> Result<Vec<BufferInfo>> {
        let mut count = 0usize;
        // SAFETY: max 0 with a null array is allowed; count is writable.
        let rc = unsafe {
            sys::mc_te_get_segment_buffers(
                self.raw(),
                segment.0,
                std::ptr::null_mut(),
                0,
                &mut count,
            )
        };
        if rc != 0 {
            return mc_error(
                "mc_te_get_segment_buffers",
                rc,
                format!("segment {}", segment.0),
            );
        }
        let mut out = vec![
            sys::mc_te_buffer_info_t {
                location: [0; 32],
                addr: 0,
                length: 0
            };
            count
        ];
        // SAFETY: out holds out.len() entries.
        let rc = unsafe {
            sys::mc_te_get_segment_buffers(
                self.raw(),
                segment.0,
                out.as_mut_ptr(),
                out.len(),
                &mut count,
            )
        };
        if rc != 0 {
            return mc_error(
                "mc_te_get_segment_buffers",
                rc,
                format!("segment {}", segment.0),
            );
        }
        out.truncate(count);
        Ok(out
            .iter()
            .map(|b| BufferInfo {
                location: from_c_chars(&b.location),
                addr: b.addr,
                length: b.length,
            })
            .collect())
    }

    /// The endpoint's lanes to a segment, best first for a transfer between
    /// the local buffer holding `local_addr` and the segment's buffer holding
    /// `remote_addr` (0: no preference); empty before the first transfer.
    pub fn segment_paths(
        &self,
        segment: Segment,
        local_addr: usize,
        remote_addr: u64,
    ) -> Result<Vec<PathInfo>> {
        let blank = sys::mc_te_path_info_t {
            local_device: [0; 64],
            remote_device: [0; 64],
            rank: 0,
            carries: 0,
            healthy: 0,
            bytes: 0,
        };
        let mut out = vec![blank; 16];
        let mut count = 0usize;
        loop {
            // SAFETY: out holds out.len() entries; the local address is only
            // compared with registrations, never read.
            let rc = unsafe {
                sys::mc_te_get_segment_paths(
                    self.raw(),
                    segment.0,
                    local_addr as *const std::os::raw::c_void,
                    remote_addr,
                    out.as_mut_ptr(),
                    out.len(),
                    &mut count,
                )
            };
            if rc != 0 {
                return mc_error(
                    "mc_te_get_segment_paths",
                    rc,
                    format!("segment {}", segment.0),
                );
            }
            if count <= out.len() {
                break;
            }
            out = vec![blank; count];
        }
        out.truncate(count);
        Ok(out
            .iter()
            .map(|p| PathInfo {
                local_device: from_c_chars(&p.local_device),
                remote_device: from_c_chars(&p.remote_device),
                rank: p.rank,
                carries: p.carries != 0,
                healthy: p.healthy != 0,
                bytes: p.bytes,
            })
            .collect())
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // SAFETY: nothing borrows the engine any more (registrations and
        // batches hold &Engine).
        unsafe { sys::mc_te_destroy(self.raw()) };
    }
}
