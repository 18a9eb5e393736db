// SPDX-License-Identifier: Apache-2.0
// Tests of the Go binding: two processes over P2PHANDSHAKE, etcd and redis;
// bad inputs, each a clear error; a peer killed during transfers.

package te_test

import (
	"context"
	"errors"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"mc/te"
)

// hangGuard bounds a wait that must end on its own: reaching it fails the
// test as a hang, it does not time what is measured.
const hangGuard = 2 * time.Minute

func newEngine(t *testing.T, conn, name string) *te.Engine {
	t.Helper()
	eng, err := te.New(conn, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

// registered is a registered buffer of size bytes, closed and freed at the end.
func registered(t *testing.T, eng *te.Engine, size int) *te.Buffer {
	t.Helper()
	buf, err := te.AllocBuffer(size)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := eng.Register(buf, "*", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reg.Close(); err != nil {
			t.Error(err)
		}
		if err := buf.Free(); err != nil {
			t.Error(err)
		}
	})
	return buf
}

func checkPattern(t *testing.T, what string, b []byte, seed int) {
	t.Helper()
	for i := range b {
		if b[i] != pattern(seed, i) {
			t.Fatalf("%s: byte %d is %d, want %d", what, i, b[i], pattern(seed, i))
		}
	}
}

// readWriteReadBack checks a target's buffer through eng: read it, write a
// new pattern, read that back.
func readWriteReadBack(t *testing.T, eng *te.Engine, segment string, size, seed int) {
	seg, err := eng.OpenSegment(segment)
	if err != nil {
		t.Fatal(err)
	}
	bufs, err := eng.SegmentBuffers(seg)
	if err != nil {
		t.Fatal(err)
	}
	if len(bufs) != 1 || bufs[0].Length != uint64(size) {
		t.Fatalf("segment %s publishes %+v, want one buffer of %d bytes", segment, bufs, size)
	}
	local := registered(t, eng, size)
	b := local.Bytes()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	// In 64 KiB tasks of one batch, as the C example does.
	const block = 64 << 10
	transfer := func(op te.Op) {
		var reqs []te.Request
		for off := 0; off < size; off += block {
			end := off + block
			if end > size {
				end = size
			}
			reqs = append(reqs, te.Request{Op: op, Local: b[off:end], Segment: seg,
				Remote: bufs[0].Addr + uint64(off)})
		}
		if err := eng.Transfer(ctx, reqs...); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	transfer(te.Read)
	checkPattern(t, "read", b, seed)
	for i := range b {
		b[i] = pattern(seed+100, i)
	}
	transfer(te.Write)
	for i := range b {
		b[i] = 0
	}
	transfer(te.Read)
	checkPattern(t, "write, read back", b, seed+100)
	if err := eng.CloseSegment(seg); err != nil {
		t.Fatal(err)
	}
}

func TestTwoProcessesP2PHandshake(t *testing.T) {
	const size = 1<<20 + 123
	tg := startTarget(t, "P2PHANDSHAKE", "127.0.0.1", size, 7)
	readWriteReadBack(t, newEngine(t, "P2PHANDSHAKE", "127.0.0.1"), tg.segment, size, 7)
}

func TestTwoProcessesMetadataStore(t *testing.T) {
	for _, store := range []struct {
		name  string
		start func(*testing.T) string
	}{{"etcd", startEtcd}, {"redis", startRedis}} {
		t.Run(store.name, func(t *testing.T) {
			conn := store.start(t)
			const size = 256 << 10
			name := "127.0.0.1:" + strconv.Itoa(freePort(t))
			tg := startTarget(t, conn, name, size, 11)
			if tg.segment != name {
				t.Fatalf("target published %q, want %q", tg.segment, name)
			}
			eng := newEngine(t, conn, "127.0.0.1:"+strconv.Itoa(freePort(t)))
			readWriteReadBack(t, eng, name, size, 11)
		})
	}
}

func TestBadInputs(t *testing.T) {
	if _, err := te.New("bogus://nowhere", "127.0.0.1"); !errors.Is(err, te.ErrMC) {
		t.Errorf("New with a bad metadata string: %v, want an *Error", err)
	}
	if _, err := te.New("", "127.0.0.1"); !errors.Is(err, te.ErrInvalidArgument) {
		t.Errorf("New with empty metadata: %v", err)
	}
	if _, err := te.AllocBuffer(0); !errors.Is(err, te.ErrInvalidArgument) {
		t.Errorf("AllocBuffer(0): %v", err)
	}
	eng := newEngine(t, "P2PHANDSHAKE", "127.0.0.1")
	if _, err := eng.Register(nil, "*", true); !errors.Is(err, te.ErrInvalidArgument) {
		t.Errorf("Register(nil): %v", err)
	}
	buf := registered(t, eng, 4096)
	if _, err := eng.Register(buf, "*", true); !errors.Is(err, te.ErrMC) {
		t.Errorf("registering a buffer twice: %v, want an *Error", err)
	}
	if _, err := eng.Register(func() *te.Buffer {
		b, _ := te.AllocBuffer(4096)
		_ = b.Free()
		return b
	}(), "*", true); !errors.Is(err, te.ErrClosed) {
		t.Errorf("Register of a freed buffer: %v", err)
	}
	if err := buf.Free(); !errors.Is(err, te.ErrBusy) {
		t.Errorf("Free of a registered buffer: %v, want ErrBusy", err)
	}
	if _, err := eng.Register(buf, "nowhere:9", true); !errors.Is(err, te.ErrMC) {
		t.Errorf("Register at an unknown location: %v", err)
	}

	self, err := eng.LocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	seg, err := eng.OpenSegment(self)
	if err != nil {
		t.Fatal(err)
	}
	bufs, err := eng.SegmentBuffers(seg)
	if err != nil || len(bufs) != 1 {
		t.Fatalf("own segment: %+v, %v", bufs, err)
	}
	remote := bufs[0].Addr
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	unregistered, err := te.AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer unregistered.Free()
	var taskErr *te.TaskError
	for _, c := range []struct {
		what string
		req  te.Request
		want error
	}{
		{"nil Local", te.Request{Op: te.Read, Segment: seg, Remote: remote}, te.ErrInvalidArgument},
		{"empty Local", te.Request{Op: te.Read, Local: buf.Bytes()[:0], Segment: seg, Remote: remote},
			te.ErrInvalidArgument},
		{"unknown op", te.Request{Op: 7, Local: buf.Bytes(), Segment: seg, Remote: remote},
			te.ErrInvalidArgument},
		{"Go heap memory", te.Request{Op: te.Read, Local: make([]byte, 64), Segment: seg,
			Remote: remote}, te.ErrNotRegistered},
		{"an unregistered buffer", te.Request{Op: te.Read, Local: unregistered.Bytes(),
			Segment: seg, Remote: remote}, te.ErrNotRegistered},
		{"past the end of its registration", te.Request{Op: te.Read,
			Local: unsafe.Slice(&buf.Bytes()[4000], 97), Segment: seg, Remote: remote},
			te.ErrNotRegistered},
		{"a remote range past the buffer's end", te.Request{Op: te.Read, Local: buf.Bytes()[:64],
			Segment: seg, Remote: remote + 4096 - 32}, te.ErrTask},
		{"a remote address in no buffer", te.Request{Op: te.Write, Local: buf.Bytes()[:64],
			Segment: seg, Remote: 64}, te.ErrTask},
		{"a segment not open", te.Request{Op: te.Read, Local: buf.Bytes()[:64], Segment: 999,
			Remote: remote}, te.ErrTask},
	} {
		err := eng.Transfer(ctx, c.req)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.what, err, c.want)
			continue
		}
		if c.want == te.ErrTask && (!errors.As(err, &taskErr) || taskErr.Status != te.Invalid) {
			t.Errorf("%s: %v, want an Invalid task", c.what, err)
		}
		t.Logf("%s: %v", c.what, err)
	}

	if _, err := eng.NewBatch(0); !errors.Is(err, te.ErrInvalidArgument) {
		t.Errorf("NewBatch(0): %v", err)
	}
	b, err := eng.NewBatch(1)
	if err != nil {
		t.Fatal(err)
	}
	req := te.Request{Op: te.Read, Local: buf.Bytes()[:64], Segment: seg, Remote: remote}
	if err := b.Submit(req, req); !errors.Is(err, te.ErrInvalidArgument) {
		t.Errorf("two tasks into a batch of one: %v", err)
	}
	if _, _, err := b.Status(0); !errors.Is(err, te.ErrInvalidArgument) {
		t.Errorf("Status of a task never submitted: %v", err)
	}
	if err := b.Submit(req); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.Submit(req); !errors.Is(err, te.ErrClosed) {
		t.Errorf("Submit to a freed batch: %v", err)
	}
	if _, err := eng.OpenSegment(""); !errors.Is(err, te.ErrInvalidArgument) {
		t.Errorf("OpenSegment(\"\"): %v", err)
	}
	if _, err := eng.OpenSegment("127.0.0.1:1"); !errors.Is(err, te.ErrMC) {
		t.Errorf("OpenSegment of a port nobody listens on: %v", err)
	}
	if err := eng.CloseSegment(seg); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.SegmentBuffers(seg); !errors.Is(err, te.ErrMC) {
		t.Errorf("SegmentBuffers of a closed segment: %v", err)
	}
}

// A registration used by a batch that is not freed cannot be closed.
func TestRegistrationBusyWhileBatchHoldsIt(t *testing.T) {
	eng := newEngine(t, "P2PHANDSHAKE", "127.0.0.1")
	buf, err := te.AllocBuffer(8192)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := eng.Register(buf, "*", true)
	if err != nil {
		t.Fatal(err)
	}
	self, _ := eng.LocalAddr()
	seg, err := eng.OpenSegment(self)
	if err != nil {
		t.Fatal(err)
	}
	bufs, err := eng.SegmentBuffers(seg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := eng.NewBatch(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Submit(te.Request{Op: te.Read, Local: buf.Bytes()[:4096], Segment: seg,
		Remote: bufs[0].Addr + 4096}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Close(); !errors.Is(err, te.ErrBusy) {
		t.Errorf("Close of a registration a batch uses: %v, want ErrBusy", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := buf.Free(); err != nil {
		t.Fatal(err)
	}
	// After Close, the engine refuses everything.
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.OpenSegment(self); !errors.Is(err, te.ErrClosed) {
		t.Errorf("OpenSegment on a closed engine: %v", err)
	}
}

// A target killed while batches read from it: the transfers end with an
// error, none hangs.
func TestPeerKilledMidTransfer(t *testing.T) {
	const size = 64 << 20
	tg := startTarget(t, "P2PHANDSHAKE", "127.0.0.1", size, 3)
	eng := newEngine(t, "P2PHANDSHAKE", "127.0.0.1")
	seg, err := eng.OpenSegment(tg.segment)
	if err != nil {
		t.Fatal(err)
	}
	bufs, err := eng.SegmentBuffers(seg)
	if err != nil {
		t.Fatal(err)
	}
	local := registered(t, eng, size)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	read := func() (*te.Batch, error) {
		const block = 1 << 20
		b, err := eng.NewBatch(size / block)
		if err != nil {
			return nil, err
		}
		var reqs []te.Request
		for off := 0; off < size; off += block {
			reqs = append(reqs, te.Request{Op: te.Read, Local: local.Bytes()[off : off+block],
				Segment: seg, Remote: bufs[0].Addr + uint64(off)})
		}
		return b, b.Submit(reqs...)
	}
	// One whole read first: the endpoint is up.
	b, err := read()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	_ = b.Free()
	b, err = read()
	if err != nil {
		t.Fatal(err)
	}
	tg.kill()
	// The batch in flight may have finished before the kill; the reads after
	// it cannot succeed.
	var failure error
	for attempt := 0; attempt < 10 && failure == nil; attempt++ {
		if attempt > 0 {
			if b, err = read(); err != nil {
				failure = err
				break
			}
		}
		failure = b.Wait(ctx)
		if ctx.Err() != nil {
			t.Fatalf("transfers from a killed peer hung: %v", failure)
		}
		_ = b.Free()
	}
	if failure == nil {
		t.Fatal("every read from a killed peer succeeded")
	}
	if !errors.Is(failure, te.ErrTask) && !errors.Is(failure, te.ErrMC) {
		t.Fatalf("after the kill: %v, want a failed task or call", failure)
	}
	t.Logf("after the kill: %v", failure)
}

// A wait whose context ends first returns the context's error; the batch
// holds its registration until mc ends its tasks, and Transfer then frees
// it in the background. The target offers tcp only and is stopped, so the
// tasks stay pending until it continues.
func TestContextDeadlineWhileTheTargetIsStopped(t *testing.T) {
	const size = 16 << 20
	tg := startTarget(t, "P2PHANDSHAKE", "127.0.0.1", size, 9, "MC_TLS=tcp")
	eng := newEngine(t, "P2PHANDSHAKE", "127.0.0.1")
	seg, err := eng.OpenSegment(tg.segment)
	if err != nil {
		t.Fatal(err)
	}
	bufs, err := eng.SegmentBuffers(seg)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := te.AllocBuffer(size)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	reg, err := eng.Register(buf, "*", true)
	if err != nil {
		t.Fatal(err)
	}
	req := te.Request{Op: te.Read, Local: buf.Bytes(), Segment: seg, Remote: bufs[0].Addr}
	guard, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := eng.Transfer(guard, req); err != nil {
		t.Fatal(err)
	}
	tg.signal(t, syscall.SIGSTOP)
	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	err = eng.Transfer(short, req)
	if !errors.Is(err, context.DeadlineExceeded) {
		tg.signal(t, syscall.SIGCONT)
		t.Fatalf("a read from a stopped target: %v, want the context's deadline", err)
	}
	t.Logf("stopped target: %v", err)
	if err := reg.Close(); !errors.Is(err, te.ErrBusy) {
		t.Errorf("Close while the abandoned batch runs: %v, want ErrBusy", err)
	}
	tg.signal(t, syscall.SIGCONT)
	for {
		err := reg.Close()
		if err == nil {
			break
		}
		if !errors.Is(err, te.ErrBusy) || guard.Err() != nil {
			t.Fatalf("the abandoned batch was never freed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	checkPattern(t, "read after the stop", buf.Bytes(), 9)
}
