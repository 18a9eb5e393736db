// SPDX-License-Identifier: Apache-2.0
//! Raw declarations of mc's Transfer Engine C API, `<mc/transfer_engine_c.h>`,
//! written by hand (no bindgen) and checked against the header by layout
//! tests. Return conventions: 0 or a handle on success, negative on failure
//! (the cause is logged by mc). Thread safety: every function may be called
//! from any thread, as `mc::TransferEngine`'s methods. The safe API is the
//! `mc-te` crate.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

/// An engine, made by `mc_te_create`.
#[repr(C)]
pub struct mc_te_t {
    _private: [u8; 0],
}

pub type mc_te_segment_id_t = i32;
pub type mc_te_batch_id_t = u64;

/// What `mc_te_allocate_batch_id` returns on failure.
pub const MC_TE_INVALID_BATCH_ID: mc_te_batch_id_t = u64::MAX;

/// Opcodes of `mc_te_request_t`.
pub const MC_TE_READ: c_int = 0;
pub const MC_TE_WRITE: c_int = 1;

/// Task states (`mc_te_task_status_t`, a C enum: an int).
pub type mc_te_task_status_t = c_int;
pub const MC_TE_WAITING: mc_te_task_status_t = 0;
pub const MC_TE_PENDING: mc_te_task_status_t = 1;
pub const MC_TE_INVALID: mc_te_task_status_t = 2;
pub const MC_TE_CANCELED: mc_te_task_status_t = 3;
pub const MC_TE_COMPLETED: mc_te_task_status_t = 4;
pub const MC_TE_TIMEOUT: mc_te_task_status_t = 5;
pub const MC_TE_FAILED: mc_te_task_status_t = 6;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mc_te_request_t {
    /// `MC_TE_READ`: remote -> source; `MC_TE_WRITE`: source -> remote.
    pub opcode: c_int,
    /// The local buffer.
    pub source: *mut c_void,
    /// From `mc_te_open_segment`.
    pub target_id: mc_te_segment_id_t,
    /// The remote virtual address.
    pub target_offset: u64,
    pub length: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mc_te_transfer_status_t {
    pub status: mc_te_task_status_t,
    /// A lower bound of the bytes that arrived.
    pub transferred: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mc_te_buffer_info_t {
    /// "cpu:0", NUL-terminated, cut to 31 characters.
    pub location: [c_char; 32],
    pub addr: u64,
    pub length: u64,
}

/// A lane of the endpoint to a segment (`mc_te_get_segment_paths`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mc_te_path_info_t {
    pub local_device: [c_char; 64],
    pub remote_device: [c_char; 64],
    pub rank: c_int,
    pub carries: c_int,
    pub healthy: c_int,
    pub bytes: u64,
}

/// A notification to send: byte ranges, not C strings (embedded NULs
/// arrive as written); a null pointer with length 0 is empty.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mc_te_notify_desc_t {
    pub name: *const c_char,
    pub name_len: usize,
    pub notify_msg: *const c_char,
    pub notify_msg_len: usize,
}

/// A notification taken: each string malloc'd, its length's bytes and a
/// NUL; freed by `mc_te_free_notifies`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mc_te_received_notify_t {
    /// The segment that sent it, as proved by the engine.
    pub sender: *mut c_char,
    pub sender_len: usize,
    pub name: *mut c_char,
    pub name_len: usize,
    pub notify_msg: *mut c_char,
    pub notify_msg_len: usize,
}

extern "C" {
    pub fn mc_te_create() -> *mut mc_te_t;
    pub fn mc_te_destroy(engine: *mut mc_te_t);
    pub fn mc_te_init(
        engine: *mut mc_te_t,
        metadata_conn_string: *const c_char,
        local_server_name: *const c_char,
    ) -> c_int;
    pub fn mc_te_register_local_memory(
        engine: *mut mc_te_t,
        addr: *mut c_void,
        size: usize,
        location: *const c_char,
        remote_accessible: c_int,
    ) -> c_int;
    pub fn mc_te_unregister_local_memory(engine: *mut mc_te_t, addr: *mut c_void) -> c_int;
    pub fn mc_te_open_segment(
        engine: *mut mc_te_t,
        segment_name: *const c_char,
    ) -> mc_te_segment_id_t;
    pub fn mc_te_close_segment(engine: *mut mc_te_t, segment_id: mc_te_segment_id_t) -> c_int;
    pub fn mc_te_get_segment_buffers(
        engine: *mut mc_te_t,
        segment_id: mc_te_segment_id_t,
        out: *mut mc_te_buffer_info_t,
        max: usize,
        count: *mut usize,
    ) -> c_int;
    pub fn mc_te_get_segment_paths(
        engine: *mut mc_te_t,
        segment_id: mc_te_segment_id_t,
        local_addr: *const c_void,
        remote_addr: u64,
        out: *mut mc_te_path_info_t,
        max: usize,
        count: *mut usize,
    ) -> c_int;
    pub fn mc_te_allocate_batch_id(engine: *mut mc_te_t, batch_size: usize) -> mc_te_batch_id_t;
    pub fn mc_te_submit_transfer(
        engine: *mut mc_te_t,
        batch_id: mc_te_batch_id_t,
        entries: *const mc_te_request_t,
        count: usize,
    ) -> c_int;
    pub fn mc_te_get_transfer_status(
        engine: *mut mc_te_t,
        batch_id: mc_te_batch_id_t,
        task_id: usize,
        status: *mut mc_te_transfer_status_t,
    ) -> c_int;
    pub fn mc_te_free_batch_id(engine: *mut mc_te_t, batch_id: mc_te_batch_id_t) -> c_int;
    pub fn mc_te_submit_transfer_with_notify(
        engine: *mut mc_te_t,
        batch_id: mc_te_batch_id_t,
        entries: *const mc_te_request_t,
        count: usize,
        notify: *const mc_te_notify_desc_t,
    ) -> c_int;
    pub fn mc_te_get_batch_notify_status(engine: *mut mc_te_t, batch_id: mc_te_batch_id_t)
        -> c_int;
    pub fn mc_te_send_notify_by_name(
        engine: *mut mc_te_t,
        segment_name: *const c_char,
        notify: *const mc_te_notify_desc_t,
    ) -> c_int;
    pub fn mc_te_send_notify_by_id(
        engine: *mut mc_te_t,
        segment_id: mc_te_segment_id_t,
        notify: *const mc_te_notify_desc_t,
    ) -> c_int;
    pub fn mc_te_get_notifies(
        engine: *mut mc_te_t,
        out: *mut *mut mc_te_received_notify_t,
        count: *mut usize,
    ) -> c_int;
    pub fn mc_te_free_notifies(notifies: *mut mc_te_received_notify_t, count: usize);
    pub fn mc_te_get_local_ip_and_port(engine: *mut mc_te_t, buf: *mut c_char, len: usize)
        -> c_int;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, size_of};

    // The layouts of the header's structs on LP64 Linux, as a C compiler
    // lays them out (offsets by hand: no offset_of! in Rust 1.63).
    #[test]
    fn layouts_match_the_header() {
        assert_eq!(size_of::<mc_te_request_t>(), 40);
        assert_eq!(align_of::<mc_te_request_t>(), 8);
        assert_eq!(size_of::<mc_te_transfer_status_t>(), 16);
        assert_eq!(size_of::<mc_te_buffer_info_t>(), 48);
        assert_eq!(size_of::<mc_te_path_info_t>(), 128 + 12 + 4 + 8);
        assert_eq!(size_of::<mc_te_notify_desc_t>(), 32);
        assert_eq!(size_of::<mc_te_received_notify_t>(), 48);
        let r = mc_te_request_t {
            opcode: 0,
            source: std::ptr::null_mut(),
            target_id: 0,
            target_offset: 0,
            length: 0,
        };
        let base = &r as *const _ as usize;
        assert_eq!(&r.source as *const _ as usize - base, 8);
        assert_eq!(&r.target_id as *const _ as usize - base, 16);
        assert_eq!(&r.target_offset as *const _ as usize - base, 24);
        assert_eq!(&r.length as *const _ as usize - base, 32);
    }

    // Linking and one call: an engine is made and destroyed uninitialised.
    #[test]
    fn create_and_destroy() {
        unsafe {
            let e = mc_te_create();
            assert!(!e.is_null());
            let mut buf = [0 as c_char; 64];
            assert!(mc_te_get_local_ip_and_port(e, buf.as_mut_ptr(), buf.len()) < 0);
            assert_eq!(
                mc_te_allocate_batch_id(std::ptr::null_mut(), 1),
                MC_TE_INVALID_BATCH_ID
            );
            mc_te_destroy(e);
        }
    }
}
