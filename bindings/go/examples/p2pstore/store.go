// SPDX-License-Identifier: Apache-2.0
// Just enough of a client for the three metadata stores the engine speaks,
// with the standard library: etcd's v3 JSON gateway, mc_metadata_server's
// GET/PUT/DELETE ?key=, and redis' RESP.

package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

type store interface {
	put(key, value string) error
	get(key string) (string, error)
	del(key string) error
}

func openStore(metadata string) (store, error) {
	switch {
	case strings.HasPrefix(metadata, "etcd://"):
		return etcdStore{"http://" + strings.TrimPrefix(metadata, "etcd://")}, nil
	case strings.HasPrefix(metadata, "http://"):
		return httpStore{metadata}, nil
	case strings.HasPrefix(metadata, "redis://"):
		return redisStore{strings.TrimPrefix(metadata, "redis://")}, nil
	}
	return nil, fmt.Errorf("metadata %q: p2pstore needs a store (etcd://, http://, redis://)",
		metadata)
}

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

var client = &http.Client{Timeout: 10 * time.Second}

type etcdStore struct{ base string }

func (s etcdStore) call(path string, req map[string]string, resp interface{}) error {
	body, _ := json.Marshal(req)
	r, err := client.Post(s.base+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer r.Body.Close()
	data, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, r.Status, data)
	}
	if resp == nil {
		return nil
	}
	return json.Unmarshal(data, resp)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func (s etcdStore) put(key, value string) error {
	return s.call("/v3/kv/put", map[string]string{"key": b64(key), "value": b64(value)}, nil)
}

func (s etcdStore) get(key string) (string, error) {
	var resp struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := s.call("/v3/kv/range", map[string]string{"key": b64(key)}, &resp); err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("etcd: no key %q", key)
	}
	v, err := base64.StdEncoding.DecodeString(resp.Kvs[0].Value)
	return string(v), err
}

func (s etcdStore) del(key string) error {
	return s.call("/v3/kv/deleterange", map[string]string{"key": b64(key)}, nil)
}

type httpStore struct{ url string }

func (s httpStore) do(method, key, value string) (string, error) {
	req, err := http.NewRequest(method, s.url+"?key="+url.QueryEscape(key),
		strings.NewReader(value))
	if err != nil {
		return "", err
	}
	r, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer r.Body.Close()
	data, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s %s: %s: %s", method, key, r.Status, data)
	}
	return string(data), nil
}

func (s httpStore) put(key, value string) error {
	_, err := s.do(http.MethodPut, key, value)
	return err
}

func (s httpStore) get(key string) (string, error) { return s.do(http.MethodGet, key, "") }

func (s httpStore) del(key string) error {
	_, err := s.do(http.MethodDelete, key, "")
	return err
}

type redisStore struct{ addr string }

// command sends one RESP command and reads a simple, integer or bulk reply.
func (s redisStore) command(args ...string) (string, bool, error) {
	c, err := net.DialTimeout("tcp", s.addr, 10*time.Second)
	if err != nil {
		return "", false, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var out strings.Builder
	fmt.Fprintf(&out, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&out, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, out.String()); err != nil {
		return "", false, err
	}
	rd := bufio.NewReader(c)
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", false, err
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "-"):
		return "", false, fmt.Errorf("redis %s: %s", args[0], line[1:])
	case strings.HasPrefix(line, "$-1"):
		return "", false, nil
	case strings.HasPrefix(line, "$"):
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", false, err
		}
		data := make([]byte, n+2)
		if _, err := io.ReadFull(rd, data); err != nil {
			return "", false, err
		}
		return string(data[:n]), true, nil
	}
	return line[1:], true, nil
}

func (s redisStore) put(key, value string) error {
	_, _, err := s.command("SET", key, value)
	return err
}

func (s redisStore) get(key string) (string, error) {
	v, ok, err := s.command("GET", key)
	if err == nil && !ok {
		err = fmt.Errorf("redis: no key %q", key)
	}
	return v, err
}

func (s redisStore) del(key string) error {
	_, _, err := s.command("DEL", key)
	return err
}
