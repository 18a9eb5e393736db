// SPDX-License-Identifier: Apache-2.0
// Notifications: a small message to a segment's owner, sent after a batch's
// writes (Batch.SubmitWithNotify) or alone (SendNotify, SendNotifyTo), and
// taken at the target as a channel fed by polling mc_te_get_notifies.

package te

/*
#include <stdlib.h>
#include <mc/transfer_engine_c.h>
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"
)

// Notify is a notification: a name and a message, both byte strings
// (embedded NULs arrive as sent). Together at most MC_NOTIFY_MAX_SIZE bytes
// (64 KiB by default); more is ErrNotifyTooLarge.
type Notify struct {
	Name string
	Msg  []byte
}

// Received is a notification taken by this engine: Sender is the segment
// that sent it (under P2PHANDSHAKE its LocalAddr), as the engine verified
// it (a sender cannot claim another segment's name).
type Received struct {
	Sender string
	Notify
}

// Notification polling: the pause after an empty poll starts at
// notifyPollMin and doubles up to notifyPollMax; a poll that finds
// notifications resets it. So a notification is delivered at most about
// notifyPollMax after mc took it.
const (
	notifyPollMin = 50 * time.Microsecond
	notifyPollMax = 5 * time.Millisecond
)

// cNotify is a Notify copied into C memory, as cgo requires for memory a
// struct passed to C points at; free releases it.
type cNotify struct {
	desc C.mc_te_notify_desc_t
}

func newCNotify(n Notify) *cNotify {
	c := &cNotify{}
	if len(n.Name) > 0 {
		c.desc.name = (*C.char)(C.CBytes([]byte(n.Name)))
		c.desc.name_len = C.size_t(len(n.Name))
	}
	if len(n.Msg) > 0 {
		c.desc.notify_msg = (*C.char)(C.CBytes(n.Msg))
		c.desc.notify_msg_len = C.size_t(len(n.Msg))
	}
	return c
}

func (c *cNotify) free() {
	C.free(unsafe.Pointer(c.desc.name))
	C.free(unsafe.Pointer(c.desc.notify_msg))
}

// SendNotify sends n to the segment of that name (it need not be open) and
// returns once the target took it (mc_te_send_notify_by_name): one round
// trip, two the first time. Notifications of one engine are taken in the
// order sent, each exactly once. Errors: ErrNotifyTooLarge,
// ErrNotifyQueueFull, ErrNotifyRefused, or another *Error (no answer
// within MC_HANDSHAKE_TIMEOUT, an unknown name).
func (e *Engine) SendNotify(segmentName string, n Notify) error {
	if segmentName == "" || strings.IndexByte(segmentName, 0) >= 0 {
		return argError("SendNotify(%q): empty segment name or one holding a NUL", segmentName)
	}
	h, err := e.lock("SendNotify")
	if err != nil {
		return err
	}
	defer e.mu.RUnlock()
	cn := C.CString(segmentName)
	defer C.free(unsafe.Pointer(cn))
	c := newCNotify(n)
	defer c.free()
	if rc := C.mc_te_send_notify_by_name(h, cn, &c.desc); rc != 0 {
		return mcError("mc_te_send_notify_by_name", int(rc), "segment %q, %d + %d bytes",
			segmentName, len(n.Name), len(n.Msg))
	}
	return nil
}

// SendNotifyTo is SendNotify to an opened segment (mc_te_send_notify_by_id).
func (e *Engine) SendNotifyTo(seg Segment, n Notify) error {
	h, err := e.lock("SendNotifyTo")
	if err != nil {
		return err
	}
	defer e.mu.RUnlock()
	c := newCNotify(n)
	defer c.free()
	if rc := C.mc_te_send_notify_by_id(h, C.mc_te_segment_id_t(seg), &c.desc); rc != 0 {
		return mcError("mc_te_send_notify_by_id", int(rc), "segment %d, %d + %d bytes", seg,
			len(n.Name), len(n.Msg))
	}
	return nil
}

// takeNotifies hands over what mc took so far (mc_te_get_notifies), oldest
// first, copied into Go memory.
func (e *Engine) takeNotifies() ([]Received, error) {
	h, err := e.lock("Notifications")
	if err != nil {
		return nil, err
	}
	defer e.mu.RUnlock()
	var arr *C.mc_te_received_notify_t
	var count C.size_t
	if rc := C.mc_te_get_notifies(h, &arr, &count); rc != 0 {
		return nil, mcError("mc_te_get_notifies", int(rc), "notifications lost")
	}
	if count == 0 {
		return nil, nil
	}
	defer C.mc_te_free_notifies(arr, count)
	got := make([]Received, int(count))
	for i, r := range unsafe.Slice(arr, int(count)) {
		got[i] = Received{
			Sender: C.GoStringN(r.sender, C.int(r.sender_len)),
			Notify: Notify{
				Name: C.GoStringN(r.name, C.int(r.name_len)),
				Msg:  C.GoBytes(unsafe.Pointer(r.notify_msg), C.int(r.notify_msg_len)),
			},
		}
	}
	return got, nil
}

// Notifications delivers the notifications this engine takes, oldest first,
// on a channel fed by a goroutine that polls mc_te_get_notifies (the C API
// has no event): after an empty poll it waits 50 µs, doubling up to 5 ms,
// so a notification is delivered within about 5 ms of its arrival. When the
// data of a batch is what it announces, that data is in this process's
// memory when the notification is received from the channel. The channel
// is closed when ctx ends or the engine is closed; what was taken from mc
// but not yet received then is kept for the next Notifications call. Use
// one channel at a time: two running at once split the notifications
// between them. A failed poll (mc_te_get_notifies out of memory, which
// loses what mc held) is not reported on the channel; polling goes on.
func (e *Engine) Notifications(ctx context.Context) <-chan Received {
	ch := make(chan Received)
	go func() {
		defer close(ch)
		var pending []Received
		defer func() {
			if len(pending) > 0 {
				e.notifyMu.Lock()
				e.undelivered = append(pending, e.undelivered...)
				e.notifyMu.Unlock()
			}
		}()
		pause := notifyPollMin
		for {
			if len(pending) == 0 {
				// What an ended channel left first: it is older than
				// what mc holds.
				e.notifyMu.Lock()
				pending, e.undelivered = e.undelivered, nil
				e.notifyMu.Unlock()
			}
			if len(pending) == 0 {
				got, err := e.takeNotifies()
				if errors.Is(err, ErrClosed) {
					return
				}
				pending = got
			}
			if len(pending) > 0 {
				pause = notifyPollMin
				select {
				case ch <- pending[0]:
					pending = pending[1:]
				case <-ctx.Done():
					return
				case <-e.closed:
					return
				}
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-e.closed:
				return
			case <-time.After(pause):
			}
			if pause *= 2; pause > notifyPollMax {
				pause = notifyPollMax
			}
		}
	}()
	return ch
}

// SubmitWithNotify queues reqs, which all go to one segment, as the batch's
// next tasks, and n to that segment once every task of the batch (those
// submitted before too) completed, that is once the writes are in the
// target's memory (mc_te_submit_transfer_with_notify). It returns at once;
// NotifyStatus follows the notification. When a task does not complete,
// the notification is dropped, not sent. Refused with nothing queued as
// Submit refuses, and: requests to more than one segment (*Error, code
// -4), the batch's previous notification not yet resolved (code -12),
// ErrNotifyTooLarge.
func (b *Batch) SubmitWithNotify(n Notify, reqs ...Request) error {
	return b.submit(reqs, &n)
}

// NotifyStatus is the batch's notification (mc_te_get_batch_notify_status):
// pending while its tasks run or it travels; nil once the target took it;
// ErrNotifyDropped when a task of the batch did not complete, or the error
// sending it met (as SendNotify's).
func (b *Batch) NotifyStatus() (pending bool, err error) {
	h, err := b.eng.lock("NotifyStatus")
	if err != nil {
		return false, err
	}
	defer b.eng.mu.RUnlock()
	b.mu.Lock()
	freed := b.freed
	b.mu.Unlock()
	if freed {
		return false, fmt.Errorf("%w: NotifyStatus of a freed batch", ErrClosed)
	}
	switch rc := C.mc_te_get_batch_notify_status(h, b.id); {
	case rc == 1:
		return true, nil
	case rc == 0:
		return false, nil
	default:
		return false, mcError("mc_te_get_batch_notify_status", int(rc), "batch %d",
			uint64(b.id))
	}
}

// WaitNotify polls NotifyStatus, with Wait's backoff, until the batch's
// notification is resolved: nil when the target took it, else
// NotifyStatus's error or the context's (wrapped).
func (b *Batch) WaitNotify(ctx context.Context) error {
	const maxPause = time.Millisecond
	pause := 20 * time.Microsecond
	for {
		pending, err := b.NotifyStatus()
		if !pending {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mc te: waiting for the notification of batch %d: %w",
				uint64(b.id), ctx.Err())
		case <-time.After(pause):
		}
		if pause *= 2; pause > maxPause {
			pause = maxPause
		}
	}
}

// TransferWithNotify submits reqs (to one segment) as one batch with n,
// waits for its tasks and then for the notification to be taken by the
// target, and frees the batch: nil once the target took it. A task that did
// not complete is its *TaskError (the notification was dropped). When ctx
// ends first, the batch is freed in the background once its tasks end.
func (e *Engine) TransferWithNotify(ctx context.Context, n Notify, reqs ...Request) error {
	return e.runBatch(ctx, len(reqs),
		func(b *Batch) error { return b.SubmitWithNotify(n, reqs...) },
		func(b *Batch, ctx context.Context) error {
			if err := b.Wait(ctx); err != nil {
				return err
			}
			return b.WaitNotify(ctx)
		})
}
