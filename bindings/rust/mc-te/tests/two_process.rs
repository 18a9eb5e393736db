// SPDX-License-Identifier: Apache-2.0
// The safe API between two processes (P2PHANDSHAKE, etcd, redis), from
// several threads, and under bad inputs and a peer killed mid-transfer.

mod common;

use common::{pattern, Target};
use mc_te::{Engine, Error, Segment, TaskStatus};

/// The second process (see common::run_target_if_asked); a no-op otherwise.
#[test]
fn target_helper() {
    common::run_target_if_asked();
}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn thread_safety_markers() {
    assert_send_sync::<Engine>();
    assert_send_sync::<mc_te::Registration<'static, Vec<u8>>>();
    assert_send_sync::<mc_te::Registration<'static, &'static mut [u8]>>();
    assert_send_sync::<mc_te::Request<'static>>();
    assert_send_sync::<mc_te::Batch<'static>>();
    assert_send_sync::<mc_te::Notify>();
    assert_send_sync::<mc_te::Received>();
    assert_send_sync::<mc_te::NotifyStatus>();
}

fn check(what: &str, b: &[u8], seed: usize) {
    for (i, &x) in b.iter().enumerate() {
        assert_eq!(x, pattern(seed, i), "{}: byte {}", what, i);
    }
}

fn open(engine: &Engine, name: &str, size: usize) -> (Segment, u64) {
    let seg = engine.open_segment(name).expect("open_segment");
    let bufs = engine.segment_buffers(seg).expect("segment_buffers");
    assert_eq!(bufs.len(), 1, "{:?}", bufs);
    assert_eq!(bufs[0].length, size as u64);
    (seg, bufs[0].addr)
}

// Read a target's buffer, write a new pattern, read that back, in 64 KiB
// tasks of one batch.
fn read_write_read_back(engine: &Engine, name: &str, size: usize, seed: usize) {
    let (seg, remote) = open(engine, name, size);
    let mut reg = engine.register(vec![0u8; size], "*", true).unwrap();
    const BLOCK: usize = 64 << 10;
    let whole = |reg: &mc_te::Registration<'_, Vec<u8>>, write: bool| {
        let reqs: Vec<_> = (0..size)
            .step_by(BLOCK)
            .map(|off| {
                let end = std::cmp::min(off + BLOCK, size);
                if write {
                    reg.write(off..end, seg, remote + off as u64).unwrap()
                } else {
                    reg.read(off..end, seg, remote + off as u64).unwrap()
                }
            })
            .collect();
        engine.transfer(&reqs).expect("transfer");
    };
    whole(&reg, false);
    check("read", reg.as_slice(), seed);
    for (i, b) in reg.as_mut_slice().iter_mut().enumerate() {
        *b = pattern(seed + 100, i);
    }
    whole(&reg, true);
    reg.as_mut_slice().iter_mut().for_each(|b| *b = 0);
    whole(&reg, false);
    check("write, read back", reg.as_slice(), seed + 100);
    let paths = engine
        .segment_paths(seg, reg.addr() as usize, remote)
        .unwrap();
    assert!(
        !paths.is_empty() && paths.iter().map(|p| p.bytes).sum::<u64>() >= 3 * size as u64,
        "{:?}",
        paths
    );
    let buf = reg.unregister().unwrap();
    assert_eq!(buf.len(), size);
    engine.close_segment(seg).unwrap();
}

#[test]
fn two_processes_p2p_handshake() {
    let size = (1 << 20) + 123;
    let target = Target::start("P2PHANDSHAKE", "127.0.0.1", size, 7);
    let engine = Engine::new("P2PHANDSHAKE", "127.0.0.1").unwrap();
    read_write_read_back(&engine, &target.segment, size, 7);
    target.stop();
}

fn two_processes_store(store: common::Service) {
    let size = 256 << 10;
    let name = format!("127.0.0.1:{}", common::free_port());
    let target = Target::start(&store.url, &name, size, 11);
    assert_eq!(target.segment, name);
    let engine = Engine::new(&store.url, &format!("127.0.0.1:{}", common::free_port())).unwrap();
    read_write_read_back(&engine, &name, size, 11);
    target.stop();
}

#[test]
fn two_processes_etcd() {
    two_processes_store(common::start_etcd());
}

#[test]
fn two_processes_redis() {
    two_processes_store(common::start_redis());
}

// One engine, four threads, each with its own registration and batches.
#[test]
fn threads_share_an_engine() {
    let size = 1 << 20;
    let target = Target::start("P2PHANDSHAKE", "127.0.0.1", size, 5);
    let engine = Engine::new("P2PHANDSHAKE", "127.0.0.1").unwrap();
    let (seg, remote) = open(&engine, &target.segment, size);
    let quarter = size / 4;
    std::thread::scope(|s| {
        for t in 0..4 {
            let engine = &engine;
            s.spawn(move || {
                let reg = engine.register(vec![0u8; quarter], "*", false).unwrap();
                for _ in 0..10 {
                    let off = (t * quarter) as u64;
                    engine
                        .transfer(&[reg.read(0..quarter, seg, remote + off).unwrap()])
                        .unwrap();
                }
                for (i, &b) in reg.as_slice().iter().enumerate() {
                    assert_eq!(b, pattern(5, t * quarter + i));
                }
            });
        }
    });
    target.stop();
}

fn is_task(e: &Error, want: TaskStatus) -> bool {
    matches!(e, Error::Task { status, .. } if *status == want)
}

#[test]
fn bad_inputs() {
    assert!(matches!(
        Engine::new("", "127.0.0.1"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Engine::new("P2PHANDSHAKE", "127.0.0.1\0x"),
        Err(Error::InvalidArgument(_))
    ));
    match Engine::new("bogus://nowhere", "127.0.0.1") {
        Err(Error::Mc { func, code, .. }) => {
            assert_eq!(func, "mc_te_init");
            assert!(code < 0);
        }
        Err(e) => panic!("a bad metadata string: {}", e),
        Ok(_) => panic!("a bad metadata string was accepted"),
    }
    let engine = Engine::new("P2PHANDSHAKE", "127.0.0.1").unwrap();
    let other = Engine::new("P2PHANDSHAKE", "127.0.0.1").unwrap();
    assert!(matches!(
        engine.register(Vec::new(), "*", true),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        engine.register(vec![0u8; 64], "nowhere:9", true),
        Err(Error::Mc { .. })
    ));
    let mut backing = vec![0u8; 8192];
    let reg = engine.register(&mut backing[..], "*", true).unwrap();
    let foreign = other.register(vec![0u8; 4096], "*", true).unwrap();

    let me = engine.local_addr().unwrap();
    let (seg, remote) = open(&engine, &me, 8192);
    for (what, r) in [
        ("an empty range", reg.read(0..0, seg, remote)),
        (
            "a range past the registration",
            reg.read(8000..8200, seg, remote),
        ),
        ("a reversed range", reg.write(100..10, seg, remote)),
    ] {
        match r {
            Err(Error::InvalidArgument(m)) => println!("{}: {}", what, m),
            Err(e) => panic!("{}: {}", what, e),
            Ok(_) => panic!("{}: accepted", what),
        }
    }
    for (what, req) in [
        (
            "a remote range past the buffer's end",
            reg.read(0..64, seg, remote + 8192 - 32).unwrap(),
        ),
        (
            "a remote address in no buffer",
            reg.write(0..64, seg, 64).unwrap(),
        ),
        (
            "a segment not open",
            reg.read(0..64, Segment::from_raw(999), remote).unwrap(),
        ),
    ] {
        let e = engine.transfer(&[req]).expect_err(what);
        assert!(is_task(&e, TaskStatus::Invalid), "{}: {}", what, e);
        println!("{}: {}", what, e);
    }
    let e = engine
        .transfer(&[foreign.read(0..64, seg, remote).unwrap()])
        .expect_err("foreign");
    assert!(matches!(e, Error::InvalidArgument(_)), "{}", e);
    println!("another engine's registration: {}", e);

    assert!(matches!(engine.batch(0), Err(Error::InvalidArgument(_))));
    let mut b = engine.batch(1).unwrap();
    let req = reg.read(4096..8192, seg, remote).unwrap();
    assert!(matches!(
        b.submit(&[req, req]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(b.submit(&[]), Err(Error::InvalidArgument(_))));
    assert!(matches!(b.status(0), Err(Error::InvalidArgument(_))));
    b.submit(&[req]).unwrap();
    b.wait(None).unwrap();
    assert_eq!(b.status(0).unwrap().0, TaskStatus::Completed);
    drop(b);

    assert!(matches!(
        engine.open_segment(""),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        engine.open_segment("a\0b"),
        Err(Error::InvalidArgument(_))
    ));
    let e = engine
        .open_segment("127.0.0.1:1")
        .expect_err("nobody listens on port 1");
    assert!(
        matches!(
            e,
            Error::Mc {
                func: "mc_te_open_segment",
                ..
            }
        ),
        "{}",
        e
    );
    println!("{}", e);
    engine.close_segment(seg).unwrap();
    assert!(matches!(engine.segment_buffers(seg), Err(Error::Mc { .. })));
    drop(reg);
    // The borrow ended with the registration: the memory is ours again.
    backing[0] = 1;
}

// A target killed while batches read from it: the transfers end with an
// error; none hangs.
#[test]
fn peer_killed_mid_transfer() {
    let size = 64 << 20;
    let mut target = Target::start("P2PHANDSHAKE", "127.0.0.1", size, 3);
    let engine = Engine::new("P2PHANDSHAKE", "127.0.0.1").unwrap();
    let (seg, remote) = open(&engine, &target.segment, size);
    let reg = engine.register(vec![0u8; size], "*", true).unwrap();
    const BLOCK: usize = 1 << 20;
    let reqs: Vec<_> = (0..size)
        .step_by(BLOCK)
        .map(|off| {
            reg.read(off..off + BLOCK, seg, remote + off as u64)
                .unwrap()
        })
        .collect();
    engine.transfer(&reqs).expect("the first whole read");
    let mut b = engine.batch(reqs.len()).unwrap();
    b.submit(&reqs).unwrap();
    target.kill();
    let mut failure = b.wait(None).err();
    drop(b);
    for _ in 0..10 {
        if failure.is_some() {
            break;
        }
        failure = engine.transfer(&reqs).err();
    }
    match failure {
        Some(e @ Error::Task { .. }) | Some(e @ Error::Mc { .. }) => {
            println!("after the kill: {}", e)
        }
        Some(e) => panic!("after the kill: {}", e),
        None => panic!("every read from a killed peer succeeded"),
    }
}

// A wait with a timeout returns WaitTimeout while the tasks go on; the
// batch's drop waits until they end. The target offers tcp only and is
// stopped, so the task stays pending until it continues.
#[test]
fn wait_timeout_while_the_target_is_stopped() {
    let size = 16 << 20;
    let target = Target::start_with("P2PHANDSHAKE", "127.0.0.1", size, 9, &[("MC_TLS", "tcp")]);
    let engine = Engine::new("P2PHANDSHAKE", "127.0.0.1").unwrap();
    let (seg, remote) = open(&engine, &target.segment, size);
    let mut reg = engine.register(vec![0u8; size], "*", true).unwrap();
    engine
        .transfer(&[reg.read(0..size, seg, remote).unwrap()])
        .unwrap();
    reg.as_mut_slice().iter_mut().for_each(|b| *b = 0);
    target.signal("STOP");
    {
        let mut batch = engine.batch(1).unwrap();
        batch
            .submit(&[reg.read(0..size, seg, remote).unwrap()])
            .unwrap();
        let r = batch.wait(Some(std::time::Duration::from_millis(200)));
        if !matches!(r, Err(Error::WaitTimeout { pending: 1 })) {
            target.signal("CONT");
            panic!("a read from a stopped target: {:?}", r);
        }
        println!("stopped target: {}", r.unwrap_err());
        target.signal("CONT");
        // Dropped here: waits for the read to end.
    }
    check("read after the stop", reg.as_slice(), 9);
    target.stop();
}
