// SPDX-License-Identifier: Apache-2.0
// Notifications between two processes over P2PHANDSHAKE: notified writes
// checked in the target's memory when it takes each notification, exactly
// once and in order, the sender's name, the size limit, binary bytes.

mod common;

use common::{hex, pattern, Target, NOTES_ENV};
use mc_te::{Engine, Error, Notify, NotifyStatus, NOTIFY_DROPPED, NOTIFY_TOO_LARGE};

/// The second process (see common::run_target_if_asked); a no-op otherwise.
#[test]
fn target_helper() {
    common::run_target_if_asked();
}

fn is_code(r: &mc_te::Result<()>, want: i32) -> bool {
    matches!(r, Err(Error::Mc { code, .. }) if *code == want)
}

#[test]
fn notifications_two_processes() {
    const REGION: usize = 64 << 10;
    const REGIONS: usize = 5;
    let region = REGION.to_string();
    let mut tg = Target::start_with(
        "P2PHANDSHAKE",
        "127.0.0.1",
        REGION * REGIONS,
        1,
        &[(NOTES_ENV, region.as_str())],
    );
    let engine = Engine::new("P2PHANDSHAKE", "127.0.0.1").unwrap();
    let me = engine.local_addr().unwrap();
    let seg = engine.open_segment(&tg.segment).unwrap();
    let remote = engine.segment_buffers(seg).unwrap()[0].addr;
    let mut reg = engine
        .register(vec![0u8; REGION * REGIONS], "*", true)
        .unwrap();
    for (j, x) in reg.as_mut_slice().iter_mut().enumerate() {
        *x = pattern(100 + j / REGION, j % REGION);
    }
    let mut want = Vec::new();
    for k in 0..REGIONS {
        let n = Notify::new(format!("region\0{}", k), vec![0, k as u8, 0xff, 0, b'k', 0]);
        let w = reg
            .write(
                k * REGION..(k + 1) * REGION,
                seg,
                remote + (k * REGION) as u64,
            )
            .unwrap();
        let mut batch = engine.batch(1).unwrap();
        batch.submit_with_notify(&[w], &n).unwrap();
        batch.wait(None).unwrap();
        batch.wait_notify(None).unwrap();
        assert_eq!(batch.notify_status().unwrap(), NotifyStatus::Taken);
        want.push(n);
    }
    let every: Vec<u8> = (0..=255u8).collect();
    let by_name = Notify::new("every byte", every);
    engine.send_notify_by_name(&tg.segment, &by_name).unwrap();
    want.push(by_name);
    let by_id = Notify::new(&b"by id\0\xff"[..], Vec::new());
    engine.send_notify_by_id(seg, &by_id).unwrap();
    want.push(by_id);

    // Too large: refused here, nothing sent, nothing queued.
    let big = Notify::new("big", vec![0u8; 64 << 10]);
    let r = engine.send_notify_by_name(&tg.segment, &big);
    assert!(is_code(&r, NOTIFY_TOO_LARGE), "{:?}", r);
    let r = engine.send_notify_by_id(seg, &big);
    assert!(is_code(&r, NOTIFY_TOO_LARGE), "{:?}", r);
    {
        let mut batch = engine.batch(1).unwrap();
        let w = reg.write(0..REGION, seg, remote).unwrap();
        let r = batch.submit_with_notify(&[w], &big);
        assert!(is_code(&r, NOTIFY_TOO_LARGE), "{:?}", r);
    }
    let end = Notify::new("end", "end");
    engine.send_notify_by_name(&tg.segment, &end).unwrap();
    want.push(end);

    // In order, each once: "end" last, and nothing after it.
    for (i, n) in want.iter().enumerate() {
        let line = tg
            .lines
            .next()
            .unwrap_or_else(|| panic!("the target exited before notification {}", i))
            .unwrap();
        let memory = if n.name.starts_with(b"region\0") {
            "ok"
        } else {
            "-"
        };
        let expect = format!("NOTE {} {} {} {}", me, hex(&n.name), hex(&n.msg), memory);
        assert_eq!(line, expect, "notification {}", i);
    }
    tg.close_input();
    let rest: Vec<_> = tg.lines.by_ref().collect();
    assert!(
        rest.iter()
            .all(|l| l.as_ref().map_or(true, |l| !l.contains("NOTE"))),
        "after the last notification: {:?}",
        rest
    );
    tg.stop();
}

#[test]
fn notify_dropped_when_a_task_fails() {
    let engine = Engine::new("P2PHANDSHAKE", "127.0.0.1").unwrap();
    let me = engine.local_addr().unwrap();
    let seg = engine.open_segment(&me).unwrap();
    let reg = engine.register(vec![0u8; 4096], "*", true).unwrap();
    let mut batch = engine.batch(1).unwrap();
    // Address 64 is in no buffer of the segment: the task is Invalid.
    batch
        .submit_with_notify(
            &[reg.write(0..64, seg, 64).unwrap()],
            &Notify::new("never", ""),
        )
        .unwrap();
    assert!(batch.wait(None).is_err());
    let r = batch.wait_notify(None);
    assert!(is_code(&r, NOTIFY_DROPPED), "{:?}", r);
    drop(batch);
    engine
        .send_notify_by_name(&me, &Notify::new("only", ""))
        .unwrap();
    let mut got = Vec::new();
    while got.is_empty() {
        got = engine.get_notifies().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(got.len(), 1, "{:?}", got);
    assert_eq!(got[0].sender, me.as_bytes());
    assert_eq!(got[0].notify, Notify::new("only", ""));
}
