// SPDX-License-Identifier: Apache-2.0
// Tests of notifications between two processes over P2PHANDSHAKE: notified
// writes checked in the target's memory when it takes each notification,
// exactly once and in order, the sender's name, the size limit, binary
// bytes.

package te_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"mc/te"
)

// Received is te.Received, short for the tests.
type Received = te.Received

// regionMsg is region k's message: bytes a C string would cut.
func regionMsg(k int) []byte { return []byte{0, byte(k), 0xff, 0, 'k', 0} }

func TestNotifications(t *testing.T) {
	const region, regions = 64 << 10, 5
	tg := startTarget(t, "P2PHANDSHAKE", "127.0.0.1", region*regions, 1,
		notesEnv+"="+strconv.Itoa(region))
	lines := tg.lines()
	eng := newEngine(t, "P2PHANDSHAKE", "127.0.0.1")
	self, err := eng.LocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	seg, err := eng.OpenSegment(tg.segment)
	if err != nil {
		t.Fatal(err)
	}
	bufs, err := eng.SegmentBuffers(seg)
	if err != nil {
		t.Fatal(err)
	}
	local := registered(t, eng, region*regions).Bytes()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	var want []te.Notify
	write := func(k int) te.Request {
		b := local[k*region : (k+1)*region]
		for i := range b {
			b[i] = pattern(100+k, i)
		}
		return te.Request{Op: te.Write, Local: b, Segment: seg,
			Remote: bufs[0].Addr + uint64(k*region)}
	}
	// Each region written by a batch whose notification names it; one by
	// hand (Batch), the others by TransferWithNotify.
	for k := 0; k < regions; k++ {
		n := te.Notify{Name: "region\x00" + strconv.Itoa(k), Msg: regionMsg(k)}
		want = append(want, n)
		if k != 2 {
			if err := eng.TransferWithNotify(ctx, n, write(k)); err != nil {
				t.Fatalf("region %d: %v", k, err)
			}
			continue
		}
		b, err := eng.NewBatch(1)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.SubmitWithNotify(n, write(k)); err != nil {
			t.Fatal(err)
		}
		if err := b.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.WaitNotify(ctx); err != nil {
			t.Fatal(err)
		}
		if pending, err := b.NotifyStatus(); pending || err != nil {
			t.Fatalf("a taken notification: pending %v, %v", pending, err)
		}
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, c := range []struct {
		n      te.Notify
		byName bool
	}{
		{te.Notify{Name: "every byte", Msg: all}, true},
		{te.Notify{Name: "by id\x00\xff"}, false},
		{te.Notify{Msg: []byte{0}}, true},
	} {
		if c.byName {
			err = eng.SendNotify(tg.segment, c.n)
		} else {
			err = eng.SendNotifyTo(seg, c.n)
		}
		if err != nil {
			t.Fatalf("%q: %v", c.n.Name, err)
		}
		want = append(want, c.n)
	}

	// Too large: refused here, nothing sent, nothing queued.
	big := te.Notify{Name: "big", Msg: make([]byte, 64<<10)}
	if err := eng.SendNotify(tg.segment, big); !errors.Is(err, te.ErrNotifyTooLarge) {
		t.Errorf("SendNotify of %d bytes: %v, want ErrNotifyTooLarge", len(big.Msg), err)
	} else {
		t.Logf("too large: %v", err)
	}
	if err := eng.SendNotifyTo(seg, big); !errors.Is(err, te.ErrNotifyTooLarge) {
		t.Errorf("SendNotifyTo of %d bytes: %v, want ErrNotifyTooLarge", len(big.Msg), err)
	}
	err = eng.TransferWithNotify(ctx, big, write(0))
	if !errors.Is(err, te.ErrNotifyTooLarge) {
		t.Errorf("TransferWithNotify of %d bytes: %v, want ErrNotifyTooLarge", len(big.Msg), err)
	}
	end := te.Notify{Name: "end", Msg: []byte("end")}
	if err := eng.SendNotify(tg.segment, end); err != nil {
		t.Fatal(err)
	}
	want = append(want, end)

	// What the target received, in order, each once: the line of "end"
	// comes last, and nothing after it until the target exits.
	for i, n := range want {
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-ctx.Done():
			t.Fatalf("notification %d (%q) never arrived", i, n.Name)
		}
		if !ok {
			t.Fatalf("the target exited before notification %d (%q)", i, n.Name)
		}
		memory := "-"
		if strings.HasPrefix(n.Name, "region\x00") {
			memory = "ok"
		}
		got := fmt.Sprintf("NOTE %s %s %s %s", self, hex.EncodeToString([]byte(n.Name)),
			hex.EncodeToString(n.Msg), memory)
		if line != got {
			t.Errorf("notification %d: the target printed\n  %s\nwant\n  %s", i, line, got)
		}
	}
	_ = tg.stdin.Close()
	for line := range lines {
		t.Errorf("after the last notification, the target printed %q", line)
	}
}

// A batch whose task does not complete: its notification is dropped.
func TestNotifyDroppedWhenATaskFails(t *testing.T) {
	eng := newEngine(t, "P2PHANDSHAKE", "127.0.0.1")
	self, err := eng.LocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	seg, err := eng.OpenSegment(self)
	if err != nil {
		t.Fatal(err)
	}
	buf := registered(t, eng, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	b, err := eng.NewBatch(1)
	if err != nil {
		t.Fatal(err)
	}
	// Address 64 is in no buffer of the segment: the task is Invalid.
	if err := b.SubmitWithNotify(te.Notify{Name: "never"}, te.Request{Op: te.Write,
		Local: buf.Bytes()[:64], Segment: seg, Remote: 64}); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx); !errors.Is(err, te.ErrTask) {
		t.Fatalf("a write to no buffer: %v, want a failed task", err)
	}
	if err := b.WaitNotify(ctx); !errors.Is(err, te.ErrNotifyDropped) {
		t.Errorf("the notification of a failed batch: %v, want ErrNotifyDropped", err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	// Nothing arrives; the channel closes with its context.
	short, cancelShort := context.WithCancel(context.Background())
	ch := eng.Notifications(short)
	if err := eng.SendNotify(self, te.Notify{Name: "only"}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-ch:
		if n.Name != "only" || n.Sender != self {
			t.Errorf("got %+v, want \"only\" from %s", n, self)
		}
	case <-ctx.Done():
		t.Fatal("the notification to itself never arrived")
	}
	cancelShort()
	for n := range ch {
		t.Errorf("after the cancel: %+v", n)
	}
}

// Notifications taken from mc by a channel whose context ended before they
// were received go to the next channel, none lost or repeated; Close
// closes a channel.
func TestNotificationsAcrossChannels(t *testing.T) {
	eng := newEngine(t, "P2PHANDSHAKE", "127.0.0.1")
	self, err := eng.LocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	const count = 20
	for i := 0; i < count; i++ {
		if err := eng.SendNotify(self, te.Notify{Name: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	guard, cancelGuard := context.WithTimeout(context.Background(), hangGuard)
	defer cancelGuard()
	var got []string
	receive := func(ch <-chan Received, n int) {
		for len(got) < n {
			select {
			case r, ok := <-ch:
				if !ok {
					t.Fatalf("the channel closed after %d notifications", len(got))
				}
				got = append(got, r.Name)
			case <-guard.Done():
				t.Fatalf("%d of %d notifications arrived", len(got), n)
			}
		}
	}
	first, cancel := context.WithCancel(context.Background())
	ch := eng.Notifications(first)
	receive(ch, 1)
	cancel()
	// Until it closes, it may still deliver.
	for r := range ch {
		got = append(got, r.Name)
	}
	ch = eng.Notifications(context.Background())
	receive(ch, count)
	for i, name := range got {
		if name != strconv.Itoa(i) {
			t.Fatalf("received %q, want 0 .. %d in order", got, count-1)
		}
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	for r := range ch {
		t.Errorf("after Close: %+v", r)
	}
}
