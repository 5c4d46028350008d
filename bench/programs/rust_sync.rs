// SPDX-License-Identifier: MIT
// A Rust program that waits the ways Rust's std does (futex through libc's
// syscall()): a Mutex-and-Condvar work queue fed by the main thread, an
// mpsc channel for results, park/unpark, a Barrier per round, scoped
// threads.  Used by bench/real_programs.py (wall time bare vs the shim).
use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::thread;

fn work(n: u64) -> u64 {
    let mut x = n;
    for _ in 0..2000 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    }
    x
}

fn main() {
    let rounds: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(200);
    let workers = 4;
    let queue = Arc::new((Mutex::new(VecDeque::<Option<u64>>::new()), Condvar::new()));
    let barrier = Arc::new(Barrier::new(workers + 1));
    let (tx, rx) = mpsc::channel::<u64>();
    let mut total = 0u64;
    thread::scope(|s| {
        for _ in 0..workers {
            let queue = Arc::clone(&queue);
            let barrier = Arc::clone(&barrier);
            let tx = tx.clone();
            s.spawn(move || loop {
                let item = {
                    let (lock, ready) = &*queue;
                    let mut q = lock.lock().unwrap();
                    while q.is_empty() {
                        q = ready.wait(q).unwrap();
                    }
                    q.pop_front().unwrap()
                };
                match item {
                    Some(n) => tx.send(work(n)).unwrap(),
                    None => {
                        barrier.wait();
                        return;
                    }
                }
            });
        }
        for round in 0..rounds {
            {
                let (lock, ready) = &*queue;
                let mut q = lock.lock().unwrap();
                for i in 0..32 {
                    q.push_back(Some(round * 32 + i));
                }
                ready.notify_all();
            }
            for _ in 0..32 {
                total = total.wrapping_add(rx.recv().unwrap());
            }
            let main = thread::current();
            let parker = thread::spawn(move || main.unpark());
            thread::park();
            parker.join().unwrap();
        }
        let (lock, ready) = &*queue;
        let mut q = lock.lock().unwrap();
        for _ in 0..workers {
            q.push_back(None);
        }
        ready.notify_all();
        drop(q);
        barrier.wait();
    });
    println!("{}", total);
}
