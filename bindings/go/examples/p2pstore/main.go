// SPDX-License-Identifier: Apache-2.0
// A P2P store in the spirit of Mooncake's: `put` registers a payload with a
// Transfer Engine and publishes its name, segment, address and size in the
// metadata store; `get`, in another process, looks the name up, opens the
// segment and reads the payload straight from the owner's memory.
//
//	p2pstore -metadata etcd://127.0.0.1:2379 -local 127.0.0.1:15500 put NAME FILE
//	p2pstore -metadata etcd://127.0.0.1:2379 -local 127.0.0.1:15501 get NAME OUT
//
// put serves until its standard input closes or it gets SIGINT/SIGTERM,
// then withdraws the name. Both print the payload's SHA-256. The stores:
// etcd://host:port (its v3 JSON gateway), http://host:port/metadata
// (mc_metadata_server) and redis://host:port.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"mc/te"
)

// object is what put publishes under "mc/p2pstore/NAME".
type object struct {
	Segment string `json:"segment"`
	Addr    uint64 `json:"addr"`
	Length  int    `json:"length"`
	SHA256  string `json:"sha256"`
}

func main() {
	metadata := flag.String("metadata", "", "metadata store: etcd://, http://.../metadata or redis://")
	local := flag.String("local", "127.0.0.1", "this engine's host[:port] (its segment name)")
	timeout := flag.Duration("timeout", time.Minute, "bound on get's transfer")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(),
			"usage: %s -metadata URL [-local HOST[:PORT]] put NAME FILE | get NAME OUT\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	if *metadata == "" || len(args) != 3 || (args[0] != "put" && args[0] != "get") {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	if args[0] == "put" {
		err = put(*metadata, *local, args[1], args[2])
	} else {
		err = get(*metadata, *local, args[1], args[2], *timeout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "p2pstore:", err)
		os.Exit(1)
	}
}

func key(name string) string { return "mc/p2pstore/" + name }

func put(metadata, local, name, file string) error {
	payload, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if len(payload) == 0 {
		return fmt.Errorf("%s is empty", file)
	}
	st, err := openStore(metadata)
	if err != nil {
		return err
	}
	eng, err := te.New(metadata, local)
	if err != nil {
		return err
	}
	defer eng.Close()
	buf, err := te.AllocBuffer(len(payload))
	if err != nil {
		return err
	}
	defer buf.Free()
	copy(buf.Bytes(), payload)
	reg, err := eng.Register(buf, "*", true)
	if err != nil {
		return err
	}
	defer reg.Close()
	obj := object{Segment: local, Addr: uint64(addrOf(buf.Bytes())), Length: len(payload),
		SHA256: fmt.Sprintf("%x", sha256.Sum256(payload))}
	value, _ := json.Marshal(obj)
	if err := st.put(key(name), string(value)); err != nil {
		return err
	}
	defer st.del(key(name))
	fmt.Printf("READY %s %d bytes sha256 %s\n", name, obj.Length, obj.SHA256)
	done := make(chan os.Signal, 1)
	signal.Notify(done, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		done <- syscall.SIGTERM
	}()
	<-done
	return nil
}

func get(metadata, local, name, out string, timeout time.Duration) error {
	st, err := openStore(metadata)
	if err != nil {
		return err
	}
	value, err := st.get(key(name))
	if err != nil {
		return err
	}
	var obj object
	if err := json.Unmarshal([]byte(value), &obj); err != nil || obj.Length <= 0 {
		return fmt.Errorf("%s: not a p2pstore object: %q", key(name), value)
	}
	eng, err := te.New(metadata, local)
	if err != nil {
		return err
	}
	defer eng.Close()
	seg, err := eng.OpenSegment(obj.Segment)
	if err != nil {
		return err
	}
	buf, err := te.AllocBuffer(obj.Length)
	if err != nil {
		return err
	}
	defer buf.Free()
	reg, err := eng.Register(buf, "*", false)
	if err != nil {
		return err
	}
	defer reg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	if err := eng.Transfer(ctx, te.Request{Op: te.Read, Local: buf.Bytes(), Segment: seg,
		Remote: obj.Addr}); err != nil {
		return err
	}
	took := time.Since(start)
	sum := fmt.Sprintf("%x", sha256.Sum256(buf.Bytes()))
	if sum != obj.SHA256 {
		return fmt.Errorf("%s: read %d bytes with sha256 %s, published %s", name, obj.Length, sum,
			obj.SHA256)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Printf("got %s: %d bytes from %s in %v, sha256 %s\n", name, obj.Length, obj.Segment, took,
		sum)
	return nil
}
