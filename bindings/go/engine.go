// SPDX-License-Identifier: Apache-2.0
// Engine: one mc_te_t, its registrations, and segments opened through it.

package te

/*
#cgo pkg-config: mc-te
#include <stdlib.h>
#include <mc/transfer_engine_c.h>
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// Segment is a segment opened by Engine.OpenSegment (mc_te_segment_id_t).
type Segment int32

// BufferInfo is a buffer of an opened segment, as its owner published it.
type BufferInfo struct {
	Location string // "cpu:0"
	Addr     uint64 // the remote address: Request.Remote of a transfer
	Length   uint64
}

// Engine is a Transfer Engine (mc_te_t), initialised and connected to its
// metadata service. Safe for concurrent use; Close ends it.
type Engine struct {
	// mu: read-held by every call into the engine, write-held by Close, so
	// that the handle is not destroyed under a running call.
	mu   sync.RWMutex
	h    *C.mc_te_t
	regs regSet
	// closed is closed by Close: it stops the Notifications goroutines.
	closed chan struct{}
	// notifyMu guards undelivered: notifications taken from mc that a
	// Notifications channel ended before delivering, oldest first.
	notifyMu    sync.Mutex
	undelivered []Received
}

// New creates an engine and initialises it (mc_te_init): metadata is
// "P2PHANDSHAKE", "etcd://host:port", "redis://host:port",
// "http://host:port/metadata"; localServerName is "host[:port]", the
// address peers reach this engine at (see <mc/transfer_engine.h>).
func New(metadata, localServerName string) (*Engine, error) {
	if metadata == "" || localServerName == "" {
		return nil, argError("New(%q, %q): empty metadata or server name", metadata,
			localServerName)
	}
	h := C.mc_te_create()
	if h == nil {
		return nil, mcError("mc_te_create", -1, "out of memory")
	}
	cm, cn := C.CString(metadata), C.CString(localServerName)
	defer C.free(unsafe.Pointer(cm))
	defer C.free(unsafe.Pointer(cn))
	if rc := C.mc_te_init(h, cm, cn); rc != 0 {
		C.mc_te_destroy(h)
		return nil, mcError("mc_te_init", int(rc), "metadata %q, local server name %q",
			metadata, localServerName)
	}
	return &Engine{h: h, closed: make(chan struct{})}, nil
}

// Close destroys the engine (mc_te_destroy): it removes its metadata, ends
// its batches and forgets its registrations, whose Close then does nothing.
// The Buffers stay allocated; Free them after. A second Close returns nil.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil {
		return nil
	}
	C.mc_te_destroy(e.h)
	e.h = nil
	close(e.closed)
	e.regs.dropAll()
	return nil
}

// lock read-locks the engine and returns its handle, or ErrClosed.
func (e *Engine) lock(what string) (*C.mc_te_t, error) {
	e.mu.RLock()
	if e.h == nil {
		e.mu.RUnlock()
		return nil, fmt.Errorf("%w: %s on a closed engine", ErrClosed, what)
	}
	return e.h, nil
}

// LocalAddr is "ip:port" of the engine's RPC listener: the segment name
// peers open under P2PHANDSHAKE.
func (e *Engine) LocalAddr() (string, error) {
	h, err := e.lock("LocalAddr")
	if err != nil {
		return "", err
	}
	defer e.mu.RUnlock()
	var buf [128]C.char
	if rc := C.mc_te_get_local_ip_and_port(h, &buf[0], C.size_t(len(buf))); rc != 0 {
		return "", mcError("mc_te_get_local_ip_and_port", int(rc), "engine not initialised")
	}
	return C.GoString(&buf[0]), nil
}

// OpenSegment finds a segment by name (P2PHANDSHAKE: the owner's LocalAddr;
// other metadata services: its localServerName) and returns its handle.
func (e *Engine) OpenSegment(name string) (Segment, error) {
	if name == "" {
		return -1, argError("OpenSegment: empty segment name")
	}
	h, err := e.lock("OpenSegment")
	if err != nil {
		return -1, err
	}
	defer e.mu.RUnlock()
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	seg := C.mc_te_open_segment(h, cn)
	if seg < 0 {
		return -1, mcError("mc_te_open_segment", int(seg), "segment %q", name)
	}
	return Segment(seg), nil
}

// CloseSegment forgets a segment; it fails while tasks to it are unfinished.
func (e *Engine) CloseSegment(seg Segment) error {
	h, err := e.lock("CloseSegment")
	if err != nil {
		return err
	}
	defer e.mu.RUnlock()
	if rc := C.mc_te_close_segment(h, C.mc_te_segment_id_t(seg)); rc != 0 {
		return mcError("mc_te_close_segment", int(rc), "segment %d", seg)
	}
	return nil
}

// SegmentBuffers lists the buffers the owner of an opened segment published.
func (e *Engine) SegmentBuffers(seg Segment) ([]BufferInfo, error) {
	h, err := e.lock("SegmentBuffers")
	if err != nil {
		return nil, err
	}
	defer e.mu.RUnlock()
	var count C.size_t
	if rc := C.mc_te_get_segment_buffers(h, C.mc_te_segment_id_t(seg), nil, 0, &count); rc != 0 {
		return nil, mcError("mc_te_get_segment_buffers", int(rc), "segment %d", seg)
	}
	if count == 0 {
		return nil, nil
	}
	// The count may grow between the two calls: the second one writes at
	// most len(out) and says how many there are.
	out := make([]C.mc_te_buffer_info_t, count)
	if rc := C.mc_te_get_segment_buffers(h, C.mc_te_segment_id_t(seg), &out[0],
		C.size_t(len(out)), &count); rc != 0 {
		return nil, mcError("mc_te_get_segment_buffers", int(rc), "segment %d", seg)
	}
	if int(count) < len(out) {
		out = out[:count]
	}
	infos := make([]BufferInfo, len(out))
	for i := range out {
		infos[i] = BufferInfo{
			Location: C.GoString(&out[i].location[0]),
			Addr:     uint64(out[i].addr),
			Length:   uint64(out[i].length),
		}
	}
	return infos, nil
}
