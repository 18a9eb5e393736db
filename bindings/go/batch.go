// SPDX-License-Identifier: Apache-2.0
// Batches: requests checked against the engine's registrations, submitted
// in one call, and waited for by polling mc_te_get_transfer_status (the C
// API has no completion event) until every task ends or the context does.

package te

/*
#include <stdlib.h>
#include <mc/transfer_engine_c.h>
*/
import "C"

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// Op is what a Request does.
type Op int

const (
	// Read copies the remote range into Local.
	Read Op = C.MC_TE_READ
	// Write copies Local into the remote range.
	Write Op = C.MC_TE_WRITE
)

func (o Op) String() string {
	switch o {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// TaskStatus is the state of one task (mc_te_task_status_t).
type TaskStatus int

const (
	Waiting   TaskStatus = C.MC_TE_WAITING
	Pending   TaskStatus = C.MC_TE_PENDING
	Invalid   TaskStatus = C.MC_TE_INVALID
	Canceled  TaskStatus = C.MC_TE_CANCELED
	Completed TaskStatus = C.MC_TE_COMPLETED
	Timeout   TaskStatus = C.MC_TE_TIMEOUT
	Failed    TaskStatus = C.MC_TE_FAILED
)

// String is the C name: "MC_TE_COMPLETED".
func (s TaskStatus) String() string {
	return C.GoString(C.mc_te_task_status_name(C.mc_te_task_status_t(s)))
}

// Done says whether the task has ended (neither Waiting nor Pending).
func (s TaskStatus) Done() bool { return s != Waiting && s != Pending }

// Request is one task: Op between Local (inside a Buffer registered with the
// engine) and len(Local) bytes at Remote of Segment.
type Request struct {
	Op      Op
	Local   []byte
	Segment Segment
	Remote  uint64 // a BufferInfo.Addr of the segment, plus an offset
}

// Batch is an mc batch of up to Size tasks. Free it once its tasks ended.
type Batch struct {
	eng  *Engine
	id   C.mc_te_batch_id_t
	size int

	mu    sync.Mutex
	tasks int             // submitted so far
	regs  []*Registration // one per task: kept busy until Free
	freed bool
}

// NewBatch allocates a batch of up to size tasks (mc_te_allocate_batch_id).
func (e *Engine) NewBatch(size int) (*Batch, error) {
	if size <= 0 {
		return nil, argError("NewBatch(%d): size must be positive", size)
	}
	h, err := e.lock("NewBatch")
	if err != nil {
		return nil, err
	}
	defer e.mu.RUnlock()
	id := C.mc_te_allocate_batch_id(h, C.size_t(size))
	if id == C.MC_TE_INVALID_BATCH_ID {
		return nil, mcError("mc_te_allocate_batch_id", -1, "batch of %d", size)
	}
	return &Batch{eng: e, id: id, size: size}, nil
}

// Submit queues reqs as the batch's next tasks (mc_te_submit_transfer) and
// returns at once. Nothing is queued when a request is refused here: an
// empty Local, one outside every registration of this engine, an unknown
// Op, or more tasks than the batch holds. mc itself turns a request whose
// segment is not open or whose remote range is outside the segment's
// buffers into an Invalid task, which Wait reports.
func (b *Batch) Submit(reqs ...Request) error {
	return b.submit(reqs, nil)
}

// submit is Submit, and SubmitWithNotify when n is not nil.
func (b *Batch) submit(reqs []Request, n *Notify) error {
	if len(reqs) == 0 {
		return argError("Submit: no requests")
	}
	e := b.eng
	h, err := e.lock("Submit")
	if err != nil {
		return err
	}
	defer e.mu.RUnlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return fmt.Errorf("%w: Submit to a freed batch", ErrClosed)
	}
	if b.tasks+len(reqs) > b.size {
		return argError("Submit: %d more tasks to a batch of %d holding %d", len(reqs), b.size,
			b.tasks)
	}
	// C memory: the array is read during the call only, but cgo forbids
	// passing Go memory that holds pointers (source).
	mem := C.malloc(C.size_t(len(reqs)) * C.size_t(unsafe.Sizeof(C.mc_te_request_t{})))
	if mem == nil {
		return fmt.Errorf("mc te: Submit: no memory for %d requests", len(reqs))
	}
	defer C.free(mem)
	entries := unsafe.Slice((*C.mc_te_request_t)(mem), len(reqs))
	regs := make([]*Registration, 0, len(reqs))
	for i, r := range reqs {
		if r.Op != Read && r.Op != Write {
			err = argError("request %d: unknown op %d", i, int(r.Op))
		} else if len(r.Local) == 0 {
			err = argError("request %d: nil or empty Local buffer", i)
		}
		var reg *Registration
		if err == nil {
			p := uintptr(unsafe.Pointer(&r.Local[0]))
			if reg, err = e.regs.acquire(p, uintptr(len(r.Local))); err != nil {
				err = fmt.Errorf("request %d: %w", i, err)
			}
		}
		if err != nil {
			e.regs.releaseUsers(regs)
			return err
		}
		regs = append(regs, reg)
		entries[i] = C.mc_te_request_t{
			opcode:        C.int(r.Op),
			source:        unsafe.Pointer(&r.Local[0]),
			target_id:     C.mc_te_segment_id_t(r.Segment),
			target_offset: C.uint64_t(r.Remote),
			length:        C.size_t(len(r.Local)),
		}
	}
	fn := "mc_te_submit_transfer"
	var rc C.int
	if n == nil {
		rc = C.mc_te_submit_transfer(h, b.id, &entries[0], C.size_t(len(reqs)))
	} else {
		fn = "mc_te_submit_transfer_with_notify"
		c := newCNotify(*n)
		rc = C.mc_te_submit_transfer_with_notify(h, b.id, &entries[0], C.size_t(len(reqs)),
			&c.desc)
		c.free()
	}
	if rc != 0 {
		e.regs.releaseUsers(regs)
		return mcError(fn, int(rc), "%d request(s) to batch %d", len(reqs), uint64(b.id))
	}
	b.tasks += len(reqs)
	b.regs = append(b.regs, regs...)
	return nil
}

// Status is the state of task i and the bytes known to have arrived.
func (b *Batch) Status(task int) (TaskStatus, uint64, error) {
	h, err := b.eng.lock("Status")
	if err != nil {
		return Failed, 0, err
	}
	defer b.eng.mu.RUnlock()
	b.mu.Lock()
	n, freed := b.tasks, b.freed
	b.mu.Unlock()
	if freed {
		return Failed, 0, fmt.Errorf("%w: Status of a freed batch", ErrClosed)
	}
	if task < 0 || task >= n {
		return Failed, 0, argError("Status(%d): the batch has %d task(s)", task, n)
	}
	var st C.mc_te_transfer_status_t
	if rc := C.mc_te_get_transfer_status(h, b.id, C.size_t(task), &st); rc != 0 {
		return Failed, 0, mcError("mc_te_get_transfer_status", int(rc), "task %d of batch %d",
			task, uint64(b.id))
	}
	return TaskStatus(st.status), uint64(st.transferred), nil
}

// Wait polls until every submitted task has ended: nil when all completed,
// the first other ending as a *TaskError, or the context's error (wrapped)
// when it is done first; the tasks then keep running and the batch cannot
// be freed until they end.
func (b *Batch) Wait(ctx context.Context) error {
	b.mu.Lock()
	n := b.tasks
	b.mu.Unlock()
	const maxPause = time.Millisecond
	pause := 20 * time.Microsecond
	var first error
	for i := 0; i < n; {
		st, got, err := b.Status(i)
		if err != nil {
			return err
		}
		if st.Done() {
			if st != Completed && first == nil {
				first = &TaskError{Task: i, Status: st, Transferred: got}
			}
			i++
			pause = 20 * time.Microsecond
			continue
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mc te: waiting for task %d of %d: %w", i, n, ctx.Err())
		case <-time.After(pause):
		}
		if pause *= 2; pause > maxPause {
			pause = maxPause
		}
	}
	return first
}

// Free frees the batch (mc_te_free_batch_id) and lets its registrations be
// closed; it fails while a task is Waiting or Pending. A second Free
// returns nil.
func (b *Batch) Free() error {
	h, err := b.eng.lock("Free")
	if err != nil {
		return err
	}
	defer b.eng.mu.RUnlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return nil
	}
	if rc := C.mc_te_free_batch_id(h, b.id); rc != 0 {
		return mcError("mc_te_free_batch_id", int(rc), "batch %d (tasks not ended?)", uint64(b.id))
	}
	b.freed = true
	b.eng.regs.releaseUsers(b.regs)
	b.regs = nil
	return nil
}

// Transfer submits reqs as one batch, waits for it, and frees it. When ctx
// ends first, the batch is freed in the background once its tasks end.
func (e *Engine) Transfer(ctx context.Context, reqs ...Request) error {
	return e.runBatch(ctx, len(reqs), func(b *Batch) error { return b.Submit(reqs...) },
		(*Batch).Wait)
}

// runBatch makes a batch of n tasks, submits it with submit, waits with
// wait and frees it; when ctx ends first, the batch is freed in the
// background once its tasks end (its memory stays registered until then).
func (e *Engine) runBatch(ctx context.Context, n int, submit func(*Batch) error,
	wait func(*Batch, context.Context) error) error {
	b, err := e.NewBatch(n)
	if err != nil {
		return err
	}
	if err := submit(b); err != nil {
		_ = b.Free()
		return err
	}
	err = wait(b, ctx)
	if err != nil && ctx.Err() != nil {
		go func() {
			_ = b.Wait(context.Background())
			_ = b.Free()
		}()
		return err
	}
	if ferr := b.Free(); err == nil {
		err = ferr
	}
	return err
}
