// SPDX-License-Identifier: Apache-2.0
// What the tests share: the test binary run again as a second process (a
// target that registers a patterned buffer, prints where it is, and serves
// it until its standard input closes), and etcd and redis-server started on
// free loopback ports, as test/gtest/common/services.cc does for mc_gtest.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use mc_te::Engine;

pub const TARGET_ENV: &str = "TE_RUST_TEST_TARGET"; // "CONN NAME SIZE SEED"
/// Makes the target print a line per notification (note_line); the value
/// is the size of a region (see tests/notify.rs).
pub const NOTES_ENV: &str = "TE_RUST_TEST_NOTES";

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{:02x}", x)).collect()
}

/// "NOTE SENDER HEX(NAME) HEX(MSG) MEMORY": MEMORY is what `mem` held when
/// the notification was taken: for a name "region\0K", "ok" when region K
/// holds pattern(100 + K), else "bad"; "-" for other names.
pub fn note_line(n: &mc_te::Received, mem: &[u8], region: usize) -> String {
    let prefix = b"region\0";
    let mut memory = "-";
    if n.notify.name.starts_with(prefix) {
        memory = "bad";
        let k = std::str::from_utf8(&n.notify.name[prefix.len()..])
            .ok()
            .and_then(|s| s.parse::<usize>().ok());
        if let Some(k) = k {
            if (k + 1) * region <= mem.len()
                && mem[k * region..(k + 1) * region]
                    .iter()
                    .enumerate()
                    .all(|(i, &x)| x == pattern(100 + k, i))
            {
                memory = "ok";
            }
        }
    }
    format!(
        "NOTE {} {} {} {}",
        String::from_utf8_lossy(&n.sender),
        hex(&n.notify.name),
        hex(&n.notify.msg),
        memory
    )
}

pub fn pattern(seed: usize, i: usize) -> u8 {
    (seed * 131 + i * 7 + (i >> 8)) as u8
}

/// The second process's body, run by the test named `target_helper` of the
/// binary when TARGET_ENV is set.
pub fn run_target_if_asked() {
    let spec = match std::env::var(TARGET_ENV) {
        Ok(spec) => spec,
        Err(_) => return,
    };
    let f: Vec<&str> = spec.split_whitespace().collect();
    let (conn, name) = (f[0], f[1]);
    let size: usize = f[2].parse().unwrap();
    let seed: usize = f[3].parse().unwrap();
    let engine = Engine::new(conn, name).expect("target: engine");
    let buf: Vec<u8> = (0..size).map(|i| pattern(seed, i)).collect();
    let reg = engine.register(buf, "*", true).expect("target: register");
    let segment = if conn == "P2PHANDSHAKE" {
        engine.local_addr().expect("target: local_addr")
    } else {
        name.to_string()
    };
    println!("READY {} {}", segment, reg.len());
    std::io::stdout().flush().unwrap();
    let region: usize = std::env::var(NOTES_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let closed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let closed = closed.clone();
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
            closed.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    // Notifications polled until the input closes.
    while region > 0 && !closed.load(std::sync::atomic::Ordering::SeqCst) {
        for n in engine.get_notifies().expect("target: get_notifies") {
            println!("{}", note_line(&n, reg.as_slice(), region));
        }
        std::io::stdout().flush().unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    reader.join().unwrap();
    reg.unregister().expect("target: unregister");
    std::process::exit(0);
}

/// A running second process; killed when dropped.
pub struct Target {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its output after READY.
    pub lines: std::io::Lines<BufReader<ChildStdout>>,
    pub segment: String,
}

impl Target {
    pub fn start(conn: &str, name: &str, size: usize, seed: usize) -> Target {
        Target::start_with(conn, name, size, seed, &[])
    }

    /// As start, with `env` added to the target's environment.
    pub fn start_with(
        conn: &str,
        name: &str,
        size: usize,
        seed: usize,
        env: &[(&str, &str)],
    ) -> Target {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args([
                "target_helper",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(TARGET_ENV, format!("{} {} {} {}", conn, name, size, seed))
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the target");
        let stdout = child.stdout.take().unwrap();
        let mut segment = None;
        let mut lines = BufReader::new(stdout).lines();
        while let Some(line) = lines.next() {
            let line = match line {
                Ok(line) => line,
                Err(_) => break,
            };
            // libtest may have printed "test target_helper ... " before it.
            let ready = match line.find("READY ") {
                Some(at) => &line[at..],
                None => continue,
            };
            let f: Vec<&str> = ready.split_whitespace().collect();
            if f.len() == 3 {
                segment = Some(f[1].to_string());
                break;
            }
        }
        let segment = match segment {
            Some(s) => s,
            None => {
                let _ = child.kill();
                panic!(
                    "the target exited before its READY line: {:?}",
                    child.wait()
                );
            }
        };
        let stdin = child.stdin.take();
        Target {
            child,
            stdin,
            lines,
            segment,
        }
    }

    /// Closes its input.
    pub fn close_input(&mut self) {
        self.stdin.take();
    }

    /// Closes its input and waits: it must exit cleanly.
    pub fn stop(mut self) {
        self.stdin.take();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "target exited with {}", status);
    }

    /// Sends a signal by kill(1) (no libc crate here): STOP, CONT. After
    /// STOP it returns once every thread of the target has stopped, as the
    /// Go and C++ helpers do (kill only queues the signal: on a loaded
    /// machine the target went on serving a read sent right after it).
    pub fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .args(["-s", sig, &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -s {} failed", sig);
        if sig != "STOP" {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.stopped() {
            assert!(Instant::now() < deadline, "the target did not stop within 10 s");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Whether every thread of the target is in the stopped state ('T' in
    /// /proc/PID/task/TID/stat, after the command name in parentheses).
    fn stopped(&self) -> bool {
        let tasks = format!("/proc/{}/task", self.child.id());
        let entries = match std::fs::read_dir(&tasks) {
            Ok(e) => e,
            Err(_) => return false,
        };
        entries.flatten().all(|t| {
            std::fs::read_to_string(t.path().join("stat"))
                .ok()
                .and_then(|stat| stat.rsplit(") ").next().map(|rest| rest.starts_with('T')))
                .unwrap_or(false)
        })
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A metadata service process; killed and its directory removed on drop.
pub struct Service {
    child: Child,
    dir: PathBuf,
    pub url: String,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mc-rust-{}-{}-{}",
        name,
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// Sends `request` and returns what came back before the peer closed or 1 s.
fn exchange(port: u16, request: &str) -> String {
    let mut s = match TcpStream::connect(("127.0.0.1", port)) {
        Ok(s) => s,
        Err(_) => return String::new(),
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    if s.write_all(request.as_bytes()).is_err() {
        return String::new();
    }
    let mut out = [0u8; 4096];
    let n = s.read(&mut out).unwrap_or(0);
    String::from_utf8_lossy(&out[..n]).into_owned()
}

fn start_service(
    bin: &str,
    package: &str,
    args: &[String],
    dir: PathBuf,
    url: String,
    ready: &dyn Fn() -> bool,
) -> Service {
    let log = std::fs::File::create(dir.join("log")).unwrap();
    let child = match Command::new(bin)
        .args(args)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => panic!(
            "cannot start {} ({}): install {} (contrib/install-deps.sh)",
            bin, e, package
        ),
    };
    let service = Service { child, dir, url };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready() {
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(service.dir.join("log")).unwrap_or_default();
            panic!("{} did not answer within 30 s; its log:\n{}", bin, log);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    service
}

/// etcd on free ports: url "etcd://127.0.0.1:PORT".
pub fn start_etcd() -> Service {
    let (client, peer) = (free_port(), free_port());
    let c = format!("http://127.0.0.1:{}", client);
    let p = format!("http://127.0.0.1:{}", peer);
    let dir = temp_dir("etcd");
    let args: Vec<String> = vec![
        "--name",
        "mc-rust-test",
        "--data-dir",
        &dir.join("data").to_string_lossy(),
        "--listen-client-urls",
        &c,
        "--advertise-client-urls",
        &c,
        "--listen-peer-urls",
        &p,
        "--initial-advertise-peer-urls",
        &p,
        "--initial-cluster",
        &format!("mc-rust-test={}", p),
        "--initial-cluster-state",
        "new",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    start_service(
        "etcd",
        "etcd-server",
        &args,
        dir,
        format!("etcd://127.0.0.1:{}", client),
        &|| {
            let r = exchange(client, "GET /health HTTP/1.0\r\n\r\n");
            r.starts_with("HTTP/1.") && r.contains(" 200 ") && r.contains("true")
        },
    )
}

/// redis-server on a free port: url "redis://127.0.0.1:PORT".
pub fn start_redis() -> Service {
    let port = free_port();
    let dir = temp_dir("redis");
    let args: Vec<String> = vec![
        "--port".to_string(),
        port.to_string(),
        "--bind".to_string(),
        "127.0.0.1".to_string(),
        "--save".to_string(),
        String::new(),
        "--appendonly".to_string(),
        "no".to_string(),
        "--dir".to_string(),
        dir.to_string_lossy().into_owned(),
        "--daemonize".to_string(),
        "no".to_string(),
    ];
    start_service(
        "redis-server",
        "redis-server",
        &args,
        dir,
        format!("redis://127.0.0.1:{}", port),
        &|| exchange(port, "PING\r\n").starts_with("+PONG"),
    )
}
