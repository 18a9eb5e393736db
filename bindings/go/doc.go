// SPDX-License-Identifier: Apache-2.0

// Package te is a Go binding of mc's Transfer Engine over its C API
// (<mc/transfer_engine_c.h>, pkg-config mc-te): engines, registered
// buffers, segments and batches of reads and writes between processes.
//
//	eng, err := te.New("P2PHANDSHAKE", "127.0.0.1")
//	defer eng.Close()
//	buf, err := te.AllocBuffer(1 << 20)      // memory Go's GC does not own
//	defer buf.Free()
//	reg, err := eng.Register(buf, "*", true) // remote accessible
//	defer reg.Close()
//	seg, err := eng.OpenSegment("10.0.0.2:15123")
//	bufs, err := eng.SegmentBuffers(seg)
//	err = eng.Transfer(ctx, te.Request{Op: te.Read, Local: buf.Bytes(),
//		Segment: seg, Remote: bufs[0].Addr})
//
// Memory: the engine reads and writes registered memory after the call that
// hands it over has returned, which cgo forbids for memory of Go's heap (and
// Go 1.19, Debian 12's, has no runtime.Pinner). Registered memory is
// therefore always a Buffer from AllocBuffer, an anonymous mmap outside the
// Go heap that stays mapped until Free; Buffer.Bytes exposes it as a []byte.
// A Request's Local slice must lie inside a Buffer registered with the same
// engine, which is checked before anything is submitted.
//
// Errors: every failure is an error; those from mc carry the C function and
// its return code (*Error), those of a task its final state (*TaskError).
// errors.Is matches them against ErrMC, ErrTask, ErrInvalidArgument,
// ErrNotRegistered, ErrBusy and ErrClosed.
//
// Thread safety: an Engine and everything made from it may be used from any
// goroutine, as the C API allows (mc::TransferEngine is safe from any
// thread). A Batch's methods may be called concurrently too.
//
// Notifications (Mooncake's getNotifies/sendNotify): Batch.SubmitWithNotify
// sends a Notify once the batch's writes are in the target's memory,
// SendNotify and SendNotifyTo one alone; Engine.Notifications delivers those
// taken, with the sender's verified segment name, as a channel.
package te
