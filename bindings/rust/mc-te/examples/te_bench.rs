// SPDX-License-Identifier: Apache-2.0
// te_bench: what Mooncake's transfer_engine_bench does, over the safe API.
// A target registers a buffer and serves it until its standard input
// closes; an initiator runs THREADS threads, each submitting batches of
// BATCH tasks of BLOCK bytes (reads or writes) to its own part of the
// target's buffer for DURATION seconds, and reports the bandwidth.
//
//   te_bench --mode target [--metadata P2PHANDSHAKE] [--local 127.0.0.1] [--buffer-size 1g]
//   te_bench --mode initiator --segment 127.0.0.1:15123 [--operation read|write]
//            [--block-size 64k] [--batch-size 128] [--threads 4] [--duration 5]

use std::io::{Read, Write};
use std::process::exit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mc_te::{Engine, Error, Op};

const USAGE: &str = "usage: te_bench --mode target|initiator [options]
  --metadata CONN      P2PHANDSHAKE (default), etcd://H:P, redis://H:P, http://H:P/metadata
  --local HOST[:PORT]  this engine's address (default 127.0.0.1)
  --buffer-size SIZE   target: bytes registered (default 1g)
  --segment NAME       initiator: the target's segment (its READY line)
  --operation OP       initiator: read (default) or write
  --block-size SIZE    bytes per task (default 64k)
  --batch-size N       tasks per batch (default 128)
  --threads N          initiator threads (default 4)
  --duration SECONDS   how long the initiator runs (default 5)
SIZE takes k, m, g suffixes (powers of 1024). The target prints
'READY segment=NAME addr=0x... length=N' and serves until its standard
input closes; threads * batch-size * block-size must fit in its buffer.";

struct Options {
    mode: String,
    metadata: String,
    local: String,
    buffer_size: usize,
    segment: String,
    op: Op,
    block_size: usize,
    batch_size: usize,
    threads: usize,
    duration: f64,
}

fn parse_size(s: &str) -> Option<usize> {
    let (digits, shift) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 10),
        'm' | 'M' => (&s[..s.len() - 1], 20),
        'g' | 'G' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    digits.parse::<usize>().ok()?.checked_mul(1usize << shift)
}

fn fail(msg: &str) -> ! {
    eprintln!("te_bench: {}\n{}", msg, USAGE);
    exit(2)
}

fn parse_args() -> Options {
    let mut o = Options {
        mode: String::new(),
        metadata: "P2PHANDSHAKE".to_string(),
        local: "127.0.0.1".to_string(),
        buffer_size: 1 << 30,
        segment: String::new(),
        op: Op::Read,
        block_size: 64 << 10,
        batch_size: 128,
        threads: 4,
        duration: 5.0,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        if flag == "--help" || flag == "-h" {
            // Not println!: a closed pipe (te_bench --help | head) is no panic.
            let _ = writeln!(std::io::stdout(), "{}", USAGE);
            exit(0);
        }
        let value = match args.get(i + 1) {
            Some(v) => v.as_str(),
            None => fail(&format!("{} needs a value", flag)),
        };
        let size = || {
            parse_size(value).unwrap_or_else(|| fail(&format!("{}: bad size {:?}", flag, value)))
        };
        let count = || match value.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => fail(&format!("{}: bad count {:?}", flag, value)),
        };
        match flag {
            "--mode" => o.mode = value.to_string(),
            "--metadata" => o.metadata = value.to_string(),
            "--local" => o.local = value.to_string(),
            "--buffer-size" => o.buffer_size = size(),
            "--segment" => o.segment = value.to_string(),
            "--operation" => {
                o.op = match value {
                    "read" => Op::Read,
                    "write" => Op::Write,
                    _ => fail(&format!("--operation: {:?} is not read or write", value)),
                }
            }
            "--block-size" => o.block_size = size(),
            "--batch-size" => o.batch_size = count(),
            "--threads" => o.threads = count(),
            "--duration" => {
                o.duration = match value.parse::<f64>() {
                    Ok(d) if d > 0.0 => d,
                    _ => fail(&format!("--duration: bad value {:?}", value)),
                }
            }
            _ => fail(&format!("unknown option {}", flag)),
        }
        i += 2;
    }
    if o.mode != "target" && o.mode != "initiator" {
        fail("--mode target or --mode initiator");
    }
    if o.mode == "initiator" && o.segment.is_empty() {
        fail("the initiator needs --segment");
    }
    if o.block_size == 0 {
        fail("--block-size must be positive");
    }
    o
}

fn target(o: &Options, engine: &Engine) -> Result<(), Error> {
    let reg = engine.register(vec![0u8; o.buffer_size], "*", true)?;
    let segment = if o.metadata == "P2PHANDSHAKE" {
        engine.local_addr()?
    } else {
        o.local.clone()
    };
    println!(
        "READY segment={} addr={:#x} length={}",
        segment,
        reg.addr(),
        reg.len()
    );
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    reg.unregister().map(|_| ())
}

fn initiator(o: &Options, engine: &Engine) -> Result<(), Error> {
    let seg = engine.open_segment(&o.segment)?;
    let remote = match engine.segment_buffers(seg)?.into_iter().next() {
        Some(b) => b,
        None => {
            return Err(Error::InvalidArgument(format!(
                "segment {} has no buffer",
                o.segment
            )))
        }
    };
    let per_thread = o.batch_size * o.block_size;
    if (per_thread * o.threads) as u64 > remote.length {
        return Err(Error::InvalidArgument(format!(
            "{} threads x {} tasks x {} bytes exceed the target's {} bytes",
            o.threads, o.batch_size, o.block_size, remote.length
        )));
    }
    let bytes = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let results: Vec<Result<(), Error>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..o.threads)
            .map(|t| {
                let (bytes, stop) = (&bytes, &stop);
                s.spawn(move || -> Result<(), Error> {
                    let reg = engine.register(vec![t as u8; per_thread], "*", false)?;
                    let base = remote.addr + (t * per_thread) as u64;
                    let reqs = (0..o.batch_size)
                        .map(|i| {
                            let range = i * o.block_size..(i + 1) * o.block_size;
                            let at = base + range.start as u64;
                            match o.op {
                                Op::Read => reg.read(range, seg, at),
                                Op::Write => reg.write(range, seg, at),
                            }
                        })
                        .collect::<Result<Vec<_>, Error>>()?;
                    while !stop.load(Ordering::Relaxed) {
                        engine.transfer(&reqs)?;
                        bytes.fetch_add(per_thread as u64, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(o.duration));
        stop.store(true, Ordering::Relaxed);
        workers
            .into_iter()
            .map(|w| w.join().expect("a worker panicked"))
            .collect()
    });
    let secs = start.elapsed().as_secs_f64();
    for r in results {
        r?;
    }
    let total = bytes.load(Ordering::Relaxed) as f64;
    println!(
        "{:?}: {} threads, batch {}, block {} B: {:.0} MiB in {:.2} s = {:.3} GB/s ({:.2} Gbit/s)",
        o.op,
        o.threads,
        o.batch_size,
        o.block_size,
        total / (1 << 20) as f64,
        secs,
        total / secs / 1e9,
        total * 8.0 / secs / 1e9
    );
    Ok(())
}

fn main() {
    let o = parse_args();
    let engine = match Engine::new(&o.metadata, &o.local) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("te_bench: {}", e);
            exit(1)
        }
    };
    let r = if o.mode == "target" {
        target(&o, &engine)
    } else {
        initiator(&o, &engine)
    };
    if let Err(e) = r {
        eprintln!("te_bench: {}", e);
        exit(1);
    }
}
