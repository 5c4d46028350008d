# SPDX-License-Identifier: MIT
# Python threads through every kind of wait the interpreter makes:
# locks, conditions, events, semaphores, barriers, queues, pools, sleeps,
# select on pipes, socket pairs, subprocesses and fork.  Prints only
# results that do not depend on scheduling.
import concurrent.futures
import hashlib
import os
import queue
import select
import socket
import subprocess
import sys
import threading
import time

def counter_with_lock(nthreads=8, rounds=2000):
    lock = threading.Lock()
    total = [0]
    def work():
        for _ in range(rounds):
            with lock:
                total[0] += 1
    threads = [threading.Thread(target=work) for _ in range(nthreads)]
    for t in threads: t.start()
    for t in threads: t.join()
    return total[0]

def producer_consumer(items=5000):
    q = queue.Queue(maxsize=16)
    out = []
    def produce():
        for i in range(items):
            q.put(i)
        q.put(None)
    def consume():
        while True:
            item = q.get()
            if item is None:
                return
            out.append(item * item)
    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    for t in threads: t.start()
    for t in threads: t.join()
    return sum(out)

def condition_pingpong(rounds=500):
    cond = threading.Condition()
    state = {"turn": 0, "log": 0}
    def player(me):
        for _ in range(rounds):
            with cond:
                while state["turn"] != me:
                    cond.wait()
                state["log"] = state["log"] * 3 + me + 1
                state["log"] %= 1000000007
                state["turn"] = 1 - me
                cond.notify_all()
    threads = [threading.Thread(target=player, args=(i,)) for i in range(2)]
    for t in threads: t.start()
    for t in threads: t.join()
    return state["log"]

def barrier_and_semaphore(nthreads=6, rounds=50):
    barrier = threading.Barrier(nthreads)
    sem = threading.BoundedSemaphore(2)
    lock = threading.Lock()
    seen = []
    def work(me):
        for r in range(rounds):
            with sem:
                with lock:
                    seen.append((r, me))
            barrier.wait()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(nthreads)]
    for t in threads: t.start()
    for t in threads: t.join()
    return len(seen), sorted(seen)[-1]

def event_and_timeouts():
    event = threading.Event()
    waited = event.wait(0.01)
    lock = threading.Lock()
    lock.acquire()
    got = lock.acquire(timeout=0.01)
    threading.Timer(0.02, event.set).start()
    fired = event.wait(30)
    time.sleep(0.01)
    return waited, got, fired

def pipes_and_sockets():
    r, w = os.pipe()
    a, b = socket.socketpair()
    def writer():
        for i in range(200):
            os.write(w, b"%d\n" % i)
            b.sendall(b"x" * 100)
        os.close(w)
        b.close()
    t = threading.Thread(target=writer)
    t.start()
    pipe_data = b""
    sock_data = b""
    open_fds = {r, a.fileno()}
    while open_fds:
        ready, _, _ = select.select(list(open_fds), [], [], 30)
        for fd in ready:
            if fd == r:
                chunk = os.read(r, 4096)
                if not chunk:
                    open_fds.discard(r)
                pipe_data += chunk
            else:
                chunk = a.recv(4096)
                if not chunk:
                    open_fds.discard(a.fileno())
                sock_data += chunk
    t.join()
    os.close(r)
    a.close()
    return hashlib.sha256(pipe_data).hexdigest()[:16], len(sock_data)

def pool_hashes():
    data = [bytes([i]) * (1000 + i) for i in range(64)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        hashes = list(pool.map(lambda d: hashlib.sha256(d).hexdigest()[:8], data))
    return hashlib.sha256("".join(hashes).encode()).hexdigest()[:16]

def subprocesses():
    outs = []
    def run(i):
        return subprocess.run(["sh", "-c", "echo $((%d * 7))" % i], capture_output=True, text=True).stdout.strip()
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        outs = list(pool.map(run, range(12)))
    return outs

def fork_from_thread():
    result = {}
    def work():
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        _, status = os.waitpid(pid, 0)
        result["status"] = os.waitstatus_to_exitcode(status)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    return result["status"]

print("counter", counter_with_lock())
print("queue", producer_consumer())
print("condition", condition_pingpong())
print("barrier", barrier_and_semaphore())
print("event", event_and_timeouts())
print("pipes", pipes_and_sockets())
print("pool", pool_hashes())
print("subprocess", subprocesses())
print("fork", fork_from_thread())
sys.stdout.flush()
