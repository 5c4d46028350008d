# SPDX-License-Identifier: MIT
"""The accuracy shapes in Python, with the threading and queue modules
(README.md in this folder describes the shapes):

    python3 shapes.py SHAPE [THREADS]

CPython's locks wait in sem_wait/sem_clockwait and its GIL in
pthread_cond_timedwait, so only one thread runs Python code at a time:
the busy shapes have fewer runnable threads than in the other runtimes,
and that is part of what they measure.  Prints "ready" once its threads
are started, then runs until killed.
"""
import asyncio
import os
import queue
import sys
import threading
import time

WORKERS = 4
CONTENTION_INSIDE = 10e-6
CONTENTION_OUTSIDE = 30e-6
POOL_BATCH = 8
POOL_PAUSE = 500e-6
PINGPONG_TURN = 20e-6
OVERSUBSCRIBED_RUN = 2000e-6
OVERSUBSCRIBED_WAIT = 100e-6
EVENTLOOP_TURN = 40e-6


def spin_for(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def ready():
    print("ready", flush=True)


def start(target, *args):
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def join_all(threads):
    """Every shape ends with the main thread in Thread.join, forever."""
    for thread in threads:
        thread.join()


def shape_idle(_threads):
    """One thread each in Lock.acquire (held by main), Condition.wait,
    Event.wait and Queue.get."""
    lock = threading.Lock()
    lock.acquire()
    condition = threading.Condition()
    event = threading.Event()
    tasks = queue.Queue()

    def wait_condition():
        with condition:
            condition.wait()

    threads = [start(lock.acquire), start(wait_condition), start(event.wait),
               start(tasks.get)]
    ready()
    join_all(threads)


def shape_contention(_threads):
    lock = threading.Lock()

    def work():
        while True:
            with lock:
                spin_for(CONTENTION_INSIDE)
            spin_for(CONTENTION_OUTSIDE)

    threads = [start(work) for _ in range(WORKERS)]
    ready()
    join_all(threads)


def shape_pool(_threads):
    """Main feeds batches of short tasks through a Queue and waits for
    each batch with Queue.join."""
    tasks = queue.Queue()

    def work():
        while True:
            spin_for(tasks.get())
            tasks.task_done()

    for _ in range(WORKERS):
        start(work)
    ready()
    while True:
        for i in range(POOL_BATCH):
            tasks.put((50 + 50 * (i % 4)) * 1e-6)  # 50..200 us
        tasks.join()
        time.sleep(POOL_PAUSE)


def shape_pingpong(_threads):
    """A token handed back and forth over two one-slot queues."""
    inboxes = [queue.Queue(maxsize=1), queue.Queue(maxsize=1)]
    inboxes[0].put(0)

    def play(me):
        while True:
            token = inboxes[me].get()
            spin_for(PINGPONG_TURN)
            inboxes[1 - me].put(token + 1)

    threads = [start(play, 0), start(play, 1)]
    ready()
    join_all(threads)


def shape_oversubscribed(count):
    def work():
        while True:
            spin_for(OVERSUBSCRIBED_RUN)
            time.sleep(OVERSUBSCRIBED_WAIT)

    threads = [start(work) for _ in range(count)]
    ready()
    join_all(threads)


def shape_eventloop(count):
    """count asyncio event loops, one per thread, asleep in epoll_wait,
    passing count / 2 + 1 tokens round a ring with call_soon_threadsafe
    (which wakes the next loop through its self-pipe, a socket pair)."""
    loops = [asyncio.new_event_loop() for _ in range(count)]

    def token(me):
        spin_for(EVENTLOOP_TURN)
        following = (me + 1) % count
        loops[following].call_soon_threadsafe(token, following)

    def run(loop):
        asyncio.set_event_loop(loop)
        loop.run_forever()

    threads = [start(run, loop) for loop in loops]
    for i in range(count // 2 + 1):
        at = (2 * i) % count
        loops[at].call_soon_threadsafe(token, at)
    ready()
    join_all(threads)


SHAPES = {
    "idle": shape_idle,
    "contention": shape_contention,
    "pool": shape_pool,
    "pingpong": shape_pingpong,
    "oversubscribed": shape_oversubscribed,
    "eventloop": shape_eventloop,
}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in SHAPES:
        sys.exit("usage: shapes.py " + "|".join(SHAPES) + " [THREADS]")
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2 * len(os.sched_getaffinity(0))
    SHAPES[sys.argv[1]](max(1, threads))


if __name__ == "__main__":
    main()
