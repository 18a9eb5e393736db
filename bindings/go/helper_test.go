// SPDX-License-Identifier: Apache-2.0
// The second process of the tests: the test binary run again as a target
// that registers a patterned buffer, prints where it is, and serves it until
// its standard input closes. Also etcd and redis-server started on free
// loopback ports, as test/gtest/common/services.cc does for mc_gtest.

package te_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mc/te"
)

const helperEnv = "TE_GO_TEST_TARGET" // "CONN NAME SIZE SEED"

// notesEnv makes the target print a line per notification it receives
// (printNote); its value is the size of a region (see TestNotifications).
const notesEnv = "TE_GO_TEST_NOTES"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		os.Exit(runTarget(spec))
	}
	os.Exit(m.Run())
}

func pattern(seed, i int) byte { return byte(seed*131 + i*7 + i>>8) }

func runTarget(spec string) int {
	var conn, name string
	var size, seed int
	if _, err := fmt.Sscan(spec, &conn, &name, &size, &seed); err != nil {
		fmt.Fprintln(os.Stderr, "target: bad spec:", spec, err)
		return 2
	}
	eng, err := te.New(conn, name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "target:", err)
		return 1
	}
	defer eng.Close()
	buf, err := te.AllocBuffer(size)
	if err != nil {
		fmt.Fprintln(os.Stderr, "target:", err)
		return 1
	}
	b := buf.Bytes()
	for i := range b {
		b[i] = pattern(seed, i)
	}
	reg, err := eng.Register(buf, "*", true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "target:", err)
		return 1
	}
	segment := name
	if conn == "P2PHANDSHAKE" {
		if segment, err = eng.LocalAddr(); err != nil {
			fmt.Fprintln(os.Stderr, "target:", err)
			return 1
		}
	}
	fmt.Printf("READY %s %d\n", segment, size)
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	if region, _ := strconv.Atoi(os.Getenv(notesEnv)); region > 0 {
		go func() {
			defer close(done)
			for n := range eng.Notifications(ctx) {
				printNote(n, b, region)
			}
		}()
	} else {
		close(done)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
	<-done
	if err := reg.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "target:", err)
		return 1
	}
	return 0
}

// printNote prints "NOTE SENDER HEX(NAME) HEX(MSG) MEMORY": MEMORY is what
// the buffer held the moment the notification was received: for a name
// "region\x00K", "ok" when region K (of region bytes) holds pattern(100+K),
// else "bad"; "-" for other names.
func printNote(n te.Received, b []byte, region int) {
	memory := "-"
	if k, err := strconv.Atoi(strings.TrimPrefix(n.Name, "region\x00")); err == nil &&
		strings.HasPrefix(n.Name, "region\x00") {
		memory = "ok"
		if (k+1)*region > len(b) {
			memory = "bad"
		} else {
			for i, v := range b[k*region : (k+1)*region] {
				if v != pattern(100+k, i) {
					memory = "bad"
					break
				}
			}
		}
	}
	fmt.Printf("NOTE %s %s %s %s\n", n.Sender, hex.EncodeToString([]byte(n.Name)),
		hex.EncodeToString(n.Msg), memory)
}

// target is a running second process.
type target struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  *bufio.Reader
	segment string
}

// lines delivers the target's output after READY, closed at its end.
func (tg *target) lines() <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		for {
			line, err := tg.stdout.ReadString('\n')
			if err != nil {
				return
			}
			ch <- strings.TrimSuffix(line, "\n")
		}
	}()
	return ch
}

// startTarget runs the test binary as a target, with env added to its
// environment, and waits for its READY line.
func startTarget(t *testing.T, conn, name string, size, seed int, env ...string) *target {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d %d", helperEnv, conn, name, size, seed))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tg := &target{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout)}
	t.Cleanup(func() { tg.stop(t) })
	line, err := tg.stdout.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 3 || f[0] != "READY" {
		t.Fatalf("target did not start: read %q (%v)", line, err)
	}
	tg.segment = f[1]
	return tg
}

// stop closes the target's input and waits for its exit; it must be clean
// unless it was killed.
func (tg *target) stop(t *testing.T) {
	if tg.cmd.ProcessState != nil {
		return
	}
	_ = tg.stdin.Close()
	err := tg.cmd.Wait()
	if ws, ok := tg.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return
	}
	if err != nil {
		t.Errorf("target exited with %v", err)
	}
}

// signal sends sig to the target; after SIGSTOP it returns once the target
// has stopped (kill only queues the signal: on a loaded machine the target
// went on serving a request sent right after it).
func (tg *target) signal(t *testing.T, sig syscall.Signal) {
	if err := tg.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if sig != syscall.SIGSTOP {
		return
	}
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(tg.cmd.Process.Pid, &ws, syscall.WUNTRACED, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("waiting for the target to stop: %v", err)
		}
		if ws.Stopped() {
			return
		}
		t.Fatalf("the target ended instead of stopping: %v", ws)
	}
}

func (tg *target) kill() {
	_ = tg.cmd.Process.Kill()
	_ = tg.cmd.Wait()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startService runs a metadata service binary with its log in a temporary
// directory and waits until ready() says it answers. A missing binary fails
// the test, naming the package that provides it.
func startService(t *testing.T, bin, pkg string, args []string, ready func() bool) {
	t.Helper()
	path, err := exec.LookPath(bin)
	if err != nil {
		t.Fatalf("%s is not installed (package %s; contrib/install-deps.sh installs it): %v",
			bin, pkg, err)
	}
	logPath := filepath.Join(t.TempDir(), bin+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for !ready() {
		select {
		case <-ctx.Done():
			log, _ := os.ReadFile(logPath)
			t.Fatalf("%s did not answer within 30 s; its log:\n%s", bin, log)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startEtcd returns "etcd://127.0.0.1:PORT".
func startEtcd(t *testing.T) string {
	client, peer := freePort(t), freePort(t)
	c := "http://127.0.0.1:" + strconv.Itoa(client)
	p := "http://127.0.0.1:" + strconv.Itoa(peer)
	startService(t, "etcd", "etcd-server", []string{"--name", "mc-go-test",
		"--data-dir", filepath.Join(t.TempDir(), "etcd"),
		"--listen-client-urls", c, "--advertise-client-urls", c,
		"--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
		"--initial-cluster", "mc-go-test=" + p, "--initial-cluster-state", "new"},
		func() bool {
			resp, err := http.Get(c + "/health")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode == 200 && strings.Contains(string(body), "true")
		})
	return "etcd://127.0.0.1:" + strconv.Itoa(client)
}

// startRedis returns "redis://127.0.0.1:PORT".
func startRedis(t *testing.T) string {
	port := strconv.Itoa(freePort(t))
	startService(t, "redis-server", "redis-server", []string{"--port", port,
		"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir(),
		"--daemonize", "no"},
		func() bool {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
			if err != nil {
				return false
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(time.Second))
			if _, err := c.Write([]byte("PING\r\n")); err != nil {
				return false
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			return strings.HasPrefix(line, "+PONG")
		})
	return "redis://127.0.0.1:" + port
}
