// SPDX-License-Identifier: Apache-2.0
// The error types of the binding: a failed C call (*Error), a task that did
// not complete (*TaskError), and the sentinels errors.Is matches them with.

package te

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels for errors.Is.
var (
	// ErrInvalidArgument: an argument the binding refuses before calling mc
	// (nil or empty buffer, zero size, negative length, unknown opcode).
	ErrInvalidArgument = errors.New("mc te: invalid argument")
	// ErrNotRegistered: a Request's Local slice is not inside a Buffer
	// registered with this engine.
	ErrNotRegistered = errors.New("mc te: memory not registered with this engine")
	// ErrBusy: a Buffer or Registration is still in use (registered, or the
	// source of a batch that has not ended).
	ErrBusy = errors.New("mc te: in use")
	// ErrClosed: the Engine, Buffer, Registration or Batch was closed.
	ErrClosed = errors.New("mc te: closed")
	// ErrTask: a task ended in a state other than COMPLETED (*TaskError).
	ErrTask = errors.New("mc te: task did not complete")
	// ErrMC: mc returned a failure (*Error).
	ErrMC = errors.New("mc te: call failed")
	// ErrNotifyTooLarge: a notification's name and message exceed
	// MC_NOTIFY_MAX_SIZE, here or at the target (*Error, code -15).
	ErrNotifyTooLarge = errors.New("mc te: notification too large")
	// ErrNotifyQueueFull: the target's MC_NOTIFY_QUEUE_LENGTH queue is full
	// (*Error, code -2).
	ErrNotifyQueueFull = errors.New("mc te: target's notification queue full")
	// ErrNotifyRefused: the target refused the notification (MC_AUTH_TOKEN,
	// or the sender's identity not proved; *Error, code -18).
	ErrNotifyRefused = errors.New("mc te: notification refused")
	// ErrNotifyDropped: a batch's notification was not sent because a task
	// of the batch did not complete (*Error, code -7).
	ErrNotifyDropped = errors.New("mc te: notification dropped")
)

// Error is a failed call into mc's C API: the function, its return code
// (negative; mc logs the cause through its own log) and what the binding
// passed to it.
type Error struct {
	Func string // "mc_te_open_segment"
	Code int    // what it returned
	Msg  string // the arguments, e.g. `segment "10.0.0.2:15123"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("mc te: %s failed (code %d): %s", e.Func, e.Code, e.Msg)
}

// Is makes errors.Is(err, ErrMC) true for every *Error, and the ErrNotify*
// sentinels true for the codes of the notification calls.
func (e *Error) Is(target error) bool {
	if target == ErrMC {
		return true
	}
	if !strings.Contains(e.Func, "notify") {
		return false
	}
	switch e.Code {
	case -15:
		return target == ErrNotifyTooLarge
	case -2:
		return target == ErrNotifyQueueFull
	case -18:
		return target == ErrNotifyRefused
	case -7:
		return target == ErrNotifyDropped && e.Func == "mc_te_get_batch_notify_status"
	}
	return false
}

func mcError(fn string, code int, format string, args ...interface{}) error {
	return &Error{Func: fn, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// TaskError is a task of a batch that ended INVALID (refused at submit:
// segment not open, remote range outside the segment's buffers, length 0),
// FAILED, TIMEOUT or CANCELED.
type TaskError struct {
	Task        int        // index in submission order
	Status      TaskStatus // its final state
	Transferred uint64     // bytes known to have arrived
}

func (e *TaskError) Error() string {
	why := ""
	if e.Status == Invalid {
		why = ": refused at submit (segment not open, or remote range outside its buffers)"
	}
	return fmt.Sprintf("mc te: task %d ended %s (%d bytes arrived)%s", e.Task, e.Status,
		e.Transferred, why)
}

// Is makes errors.Is(err, ErrTask) true for every *TaskError.
func (e *TaskError) Is(target error) bool { return target == ErrTask }

func argError(format string, args ...interface{}) error {
	return fmt.Errorf("%w: "+format, append([]interface{}{ErrInvalidArgument}, args...)...)
}
