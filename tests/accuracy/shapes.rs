// SPDX-License-Identifier: MIT
//
// The accuracy shapes in Rust, std only (README.md in this folder
// describes the shapes):
//
//   accuracy-shapes-rust SHAPE [THREADS]
//
// std's Mutex, Condvar, RwLock, park, channels, Barrier and the end of
// thread::scope all wait in the kernel through libc's syscall(SYS_futex,
// ...), never through a pthread call.  Written for Rust 1.63 (Debian 12's
// rustc) and later.  Prints "ready" once its threads are started, then
// runs until killed.
use std::io::{Read, Write};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Condvar, Mutex, RwLock};
use std::thread;
use std::time::{Duration, Instant};

const WORKERS: usize = 4;
const CONTENTION_INSIDE: Duration = Duration::from_micros(10);
const CONTENTION_OUTSIDE: Duration = Duration::from_micros(30);
const POOL_BATCH: u64 = 8;
const POOL_PAUSE: Duration = Duration::from_micros(500);
const PINGPONG_TURN: Duration = Duration::from_micros(20);
const OVERSUBSCRIBED_RUN: Duration = Duration::from_micros(2000);
const OVERSUBSCRIBED_WAIT: Duration = Duration::from_micros(100);
const EVENTLOOP_TURN: Duration = Duration::from_micros(40);

fn spin_for(how_long: Duration) {
    let end = Instant::now() + how_long;
    while Instant::now() < end {}
}

fn ready() {
    let mut out = std::io::stdout();
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
}

// idle: main holds a Mutex and a RwLock for writing, and one thread waits
// in each of std's blocking calls while main waits at the end of a
// thread::scope for threads that never finish.
fn shape_idle(_threads: usize) {
    let mutex = Mutex::new(());
    let pair = (Mutex::new(false), Condvar::new());
    let rwlock = RwLock::new(());
    let barrier = Barrier::new(2);
    let (_sender, receiver) = mpsc::channel::<()>();
    let _held = mutex.lock().unwrap();
    let _written = rwlock.write().unwrap();
    thread::scope(|scope| {
        scope.spawn(|| drop(mutex.lock()));
        scope.spawn(|| {
            let (lock, condvar) = &pair;
            let mut released = lock.lock().unwrap();
            while !*released {
                released = condvar.wait(released).unwrap();
            }
        });
        scope.spawn(|| loop {
            thread::park();
        });
        scope.spawn(move || {
            let _ = receiver.recv();
        });
        scope.spawn(|| drop(rwlock.read()));
        scope.spawn(|| {
            barrier.wait();
        });
        ready();
    });
}

fn join_all(threads: Vec<thread::JoinHandle<()>>) {
    for thread in threads {
        thread.join().unwrap();
    }
}

// contention: short critical sections on one Mutex.
fn shape_contention(_threads: usize) {
    let lock = Arc::new(Mutex::new(0u64));
    let threads = (0..WORKERS)
        .map(|_| {
            let lock = Arc::clone(&lock);
            thread::spawn(move || loop {
                {
                    let mut count = lock.lock().unwrap();
                    *count += 1;
                    spin_for(CONTENTION_INSIDE);
                }
                spin_for(CONTENTION_OUTSIDE);
            })
        })
        .collect();
    ready();
    join_all(threads);
}

// pool: main feeds batches of short tasks through a channel that the
// workers share; they report each finished task on another channel.
fn shape_pool(_threads: usize) {
    let (task_sender, task_receiver) = mpsc::channel::<Duration>();
    let (done_sender, done_receiver) = mpsc::channel::<()>();
    let task_receiver = Arc::new(Mutex::new(task_receiver));
    for _ in 0..WORKERS {
        let tasks = Arc::clone(&task_receiver);
        let done = done_sender.clone();
        thread::spawn(move || loop {
            let task = tasks.lock().unwrap().recv().unwrap();
            spin_for(task);
            done.send(()).unwrap();
        });
    }
    ready();
    loop {
        for i in 0..POOL_BATCH {
            task_sender.send(Duration::from_micros(50 + 50 * (i % 4))).unwrap(); // 50..200 us
        }
        for _ in 0..POOL_BATCH {
            done_receiver.recv().unwrap();
        }
        thread::sleep(POOL_PAUSE);
    }
}

// pingpong: a token handed back and forth over two channels.
fn shape_pingpong(_threads: usize) {
    let (to_first, first_inbox) = mpsc::channel::<u64>();
    let (to_second, second_inbox) = mpsc::channel::<u64>();
    to_first.send(0).unwrap();
    let players = vec![(first_inbox, to_second), (second_inbox, to_first)];
    let threads = players
        .into_iter()
        .map(|(inbox, peer)| {
            thread::spawn(move || loop {
                let token = inbox.recv().unwrap();
                spin_for(PINGPONG_TURN);
                peer.send(token + 1).unwrap();
            })
        })
        .collect();
    ready();
    join_all(threads);
}

// oversubscribed: more busy threads than CPUs; each pauses briefly in
// thread::park_timeout.
fn shape_oversubscribed(count: usize) {
    let threads = (0..count)
        .map(|_| {
            thread::spawn(|| loop {
                spin_for(OVERSUBSCRIBED_RUN);
                thread::park_timeout(OVERSUBSCRIBED_WAIT);
            })
        })
        .collect();
    ready();
    join_all(threads);
}

// eventloop: count event loops, each asleep in poll (libc's: std has no
// readiness wait) on its own end of a socket pair, passing count / 2 + 1
// tokens round a ring, a byte written to the next loop's pair each.
#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}
const POLLIN: i16 = 1;
extern "C" {
    fn poll(fds: *mut PollFd, count: u64, timeout: i32) -> i32;
}

fn shape_eventloop(count: usize) {
    let pairs: Vec<(UnixStream, UnixStream)> = (0..count).map(|_| UnixStream::pair().unwrap()).collect();
    let writers: Arc<Vec<UnixStream>> = Arc::new(pairs.iter().map(|(w, _)| w.try_clone().unwrap()).collect());
    let threads = pairs
        .into_iter()
        .enumerate()
        .map(|(me, (_, mut inbox))| {
            let writers = Arc::clone(&writers);
            thread::spawn(move || loop {
                let mut wanted = PollFd { fd: inbox.as_raw_fd(), events: POLLIN, revents: 0 };
                if unsafe { poll(&mut wanted, 1, -1) } != 1 {
                    continue;
                }
                let mut taken = [0u8; 64];
                let tokens = inbox.read(&mut taken).unwrap();
                for _ in 0..tokens {
                    spin_for(EVENTLOOP_TURN);
                    (&writers[(me + 1) % count]).write_all(&[1]).unwrap();
                }
            })
        })
        .collect();
    for i in 0..count / 2 + 1 {
        (&writers[(2 * i) % count]).write_all(&[1]).unwrap();
    }
    ready();
    join_all(threads);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cpus = thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let threads = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(2 * cpus).max(1);
    let shapes: [(&str, fn(usize)); 6] = [
        ("idle", shape_idle),
        ("contention", shape_contention),
        ("pool", shape_pool),
        ("pingpong", shape_pingpong),
        ("oversubscribed", shape_oversubscribed),
        ("eventloop", shape_eventloop),
    ];
    match shapes.iter().find(|(name, _)| args.get(1).map(String::as_str) == Some(*name)) {
        Some((_, run)) => run(threads),
        None => {
            eprintln!("usage: accuracy-shapes-rust idle|contention|pool|pingpong|oversubscribed|eventloop [THREADS]");
            std::process::exit(2);
        }
    }
}
