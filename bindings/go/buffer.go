// SPDX-License-Identifier: Apache-2.0
// Buffer (memory outside the Go heap) and Registration (a Buffer registered
// with an engine), with the reference counts that keep either from being
// freed while mc may touch it.

package te

/*
#include <stdlib.h>
#include <mc/transfer_engine_c.h>
*/
import "C"

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"
)

// Buffer is memory for registration: an anonymous private mmap, page
// aligned and zeroed, that Go's garbage collector neither moves nor frees.
// It stays mapped until Free, which refuses while it is registered.
type Buffer struct {
	mu   sync.Mutex
	mem  []byte // nil once freed
	regs int    // registrations holding it
}

// AllocBuffer maps size bytes.
func AllocBuffer(size int) (*Buffer, error) {
	if size <= 0 {
		return nil, argError("AllocBuffer(%d): size must be positive", size)
	}
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("mc te: mmap of %d bytes: %w", size, err)
	}
	return &Buffer{mem: mem}, nil
}

// Bytes is the whole buffer; nil once freed. Slices of it are what a
// Request's Local takes. Do not use them after Free.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mem
}

// Len is the size of the buffer, 0 once freed.
func (b *Buffer) Len() int { return len(b.Bytes()) }

// Free unmaps the buffer; ErrBusy while a Registration holds it. A second
// Free returns nil.
func (b *Buffer) Free() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem == nil {
		return nil
	}
	if b.regs > 0 {
		return fmt.Errorf("%w: buffer at %p is registered %d time(s); close the registrations first",
			ErrBusy, &b.mem[0], b.regs)
	}
	if err := syscall.Munmap(b.mem); err != nil {
		return fmt.Errorf("mc te: munmap: %w", err)
	}
	b.mem = nil
	return nil
}

// Registration is a Buffer registered with an Engine. Close unregisters it;
// it refuses while a batch that reads or writes the buffer has not been
// freed.
type Registration struct {
	eng  *Engine
	buf  *Buffer
	ptr  unsafe.Pointer // the buffer's start, for mc
	addr uintptr        // the same, for range checks
	size uintptr
	// Guarded by eng.regs.mu.
	users  int  // batches using it
	closed bool // unregistered, or its engine closed
	// Guarded by buf.mu.
	released bool // its hold on buf dropped
}

// Buffer is the registered buffer.
func (r *Registration) Buffer() *Buffer { return r.buf }

// Register registers buf with the engine (mc_te_register_local_memory).
// location is "cpu:N", "cuda:N" or "*" (the NUMA node of the pages);
// remoteAccessible publishes it to peers, else it is only a local source
// and destination.
func (e *Engine) Register(buf *Buffer, location string, remoteAccessible bool) (*Registration, error) {
	if buf == nil {
		return nil, argError("Register: nil buffer")
	}
	h, err := e.lock("Register")
	if err != nil {
		return nil, err
	}
	defer e.mu.RUnlock()
	buf.mu.Lock()
	defer buf.mu.Unlock()
	if buf.mem == nil {
		return nil, fmt.Errorf("%w: Register of a freed buffer", ErrClosed)
	}
	if location == "" {
		location = "*"
	}
	cl := C.CString(location)
	defer C.free(unsafe.Pointer(cl))
	ptr := unsafe.Pointer(&buf.mem[0])
	remote := C.int(0)
	if remoteAccessible {
		remote = 1
	}
	if rc := C.mc_te_register_local_memory(h, ptr, C.size_t(len(buf.mem)), cl, remote); rc != 0 {
		return nil, mcError("mc_te_register_local_memory", int(rc), "%d bytes at %p, location %q",
			len(buf.mem), ptr, location)
	}
	r := &Registration{eng: e, buf: buf, ptr: ptr, addr: uintptr(ptr), size: uintptr(len(buf.mem))}
	buf.regs++
	e.regs.add(r)
	return r, nil
}

// Close unregisters the buffer (mc_te_unregister_local_memory). ErrBusy
// while a batch using it is not freed; nil when already closed or when its
// engine was closed.
func (r *Registration) Close() error {
	e := r.eng
	h, err := e.lock("Registration.Close")
	if err != nil {
		r.release() // the engine's Close unregistered everything
		return nil
	}
	defer e.mu.RUnlock()
	if err := e.regs.remove(r); err != nil {
		return err
	}
	if rc := C.mc_te_unregister_local_memory(h, r.ptr); rc != 0 {
		return mcError("mc_te_unregister_local_memory", int(rc), "buffer at %#x", r.addr)
	}
	r.release()
	return nil
}

// release drops the registration's hold on its buffer, once.
func (r *Registration) release() {
	r.buf.mu.Lock()
	defer r.buf.mu.Unlock()
	if !r.released {
		r.buf.regs--
		r.released = true
	}
}

// regSet is an engine's registrations, to resolve a Request's Local slice
// and to count the batches that use each.
type regSet struct {
	mu   sync.Mutex
	regs []*Registration
}

func (s *regSet) add(r *Registration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.regs = append(s.regs, r)
}

func (s *regSet) remove(r *Registration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.closed {
		return nil
	}
	if r.users > 0 {
		return fmt.Errorf("%w: registration at %#x is used by %d batch(es) not yet freed",
			ErrBusy, r.addr, r.users)
	}
	for i, x := range s.regs {
		if x == r {
			s.regs = append(s.regs[:i], s.regs[i+1:]...)
			break
		}
	}
	r.closed = true
	return nil
}

// acquire finds the registration holding [p, p+n) and counts one more user.
func (s *regSet) acquire(p, n uintptr) (*Registration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.regs {
		if p >= r.addr && n <= r.size && p-r.addr <= r.size-n {
			r.users++
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w: %d bytes at %#x (Local must lie inside a Buffer from AllocBuffer "+
		"registered with this engine)", ErrNotRegistered, n, p)
}

func (s *regSet) releaseUsers(rs []*Registration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rs {
		r.users--
	}
}

// dropAll forgets every registration: the engine is gone.
func (s *regSet) dropAll() {
	s.mu.Lock()
	regs := s.regs
	s.regs = nil
	for _, r := range regs {
		r.closed = true
	}
	s.mu.Unlock()
	for _, r := range regs {
		r.release()
	}
}
