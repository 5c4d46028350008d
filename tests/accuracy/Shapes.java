// SPDX-License-Identifier: MIT
//
// The accuracy shapes in Java, with java.util.concurrent and monitors
// (README.md in this folder describes the shapes):
//
//   java -cp DIR Shapes SHAPE [THREADS]
//
// HotSpot parks a thread (LockSupport.park, ReentrantLock, BlockingQueue,
// Object.wait, Thread.join) in pthread_cond_wait or pthread_cond_timedwait.
// Prints "ready" once its threads are started, then runs until killed.
import java.io.IOException;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

public final class Shapes {
	private static final int WORKERS = 4;
	private static final long CONTENTION_INSIDE_NS = 10_000;
	private static final long CONTENTION_OUTSIDE_NS = 30_000;
	private static final int POOL_BATCH = 8;
	private static final long POOL_PAUSE_NS = 500_000;
	private static final long PINGPONG_TURN_NS = 20_000;
	private static final long OVERSUBSCRIBED_RUN_NS = 2_000_000;
	private static final long OVERSUBSCRIBED_WAIT_NS = 100_000;
	private static final long EVENTLOOP_TURN_NS = 40_000;

	private interface Body {
		void run() throws InterruptedException;
	}

	private static void spinFor(long nanoseconds) {
		long end = System.nanoTime() + nanoseconds;
		while (System.nanoTime() < end) {
		}
	}

	private static void ready() {
		System.out.println("ready");
		System.out.flush();
	}

	private static Thread start(Body body) {
		Thread thread = new Thread(() -> {
			try {
				body.run();
			} catch (InterruptedException e) {
				Thread.currentThread().interrupt();
			}
		});
		thread.setDaemon(true);
		thread.start();
		return thread;
	}

	// Every shape ends with the main thread in Thread.join, forever.
	private static void joinAll(List<Thread> threads) throws InterruptedException {
		for (Thread thread : threads)
			thread.join();
	}

	// idle: one thread each in ReentrantLock.lock (held by main),
	// Object.wait, LockSupport.park and BlockingQueue.take.
	private static void idle(int unused) throws InterruptedException {
		ReentrantLock lock = new ReentrantLock();
		Object monitor = new Object();
		BlockingQueue<Integer> tasks = new LinkedBlockingQueue<>();
		List<Thread> threads = new ArrayList<>();

		lock.lock();
		threads.add(start(lock::lock));
		threads.add(start(() -> {
			synchronized (monitor) {
				for (;;)
					monitor.wait();
			}
		}));
		threads.add(start(() -> {
			for (;;)
				LockSupport.park();
		}));
		threads.add(start(tasks::take));
		ready();
		joinAll(threads);
	}

	// contention: short critical sections on one ReentrantLock.
	private static void contention(int unused) throws InterruptedException {
		ReentrantLock lock = new ReentrantLock();
		List<Thread> threads = new ArrayList<>();

		for (int i = 0; i < WORKERS; i++)
			threads.add(start(() -> {
				for (;;) {
					lock.lock();
					try {
						spinFor(CONTENTION_INSIDE_NS);
					} finally {
						lock.unlock();
					}
					spinFor(CONTENTION_OUTSIDE_NS);
				}
			}));
		ready();
		joinAll(threads);
	}

	// pool: main feeds batches of short tasks through a BlockingQueue and
	// waits for each batch on a CountDownLatch.
	private static void pool(int unused) throws InterruptedException {
		BlockingQueue<Runnable> tasks = new LinkedBlockingQueue<>();

		for (int i = 0; i < WORKERS; i++)
			start(() -> {
				for (;;)
					tasks.take().run();
			});
		ready();
		for (;;) {
			CountDownLatch done = new CountDownLatch(POOL_BATCH);
			for (int i = 0; i < POOL_BATCH; i++) {
				long taskNs = (50 + 50 * (i % 4)) * 1_000L; // 50..200 us
				tasks.put(() -> {
					spinFor(taskNs);
					done.countDown();
				});
			}
			done.await();
			LockSupport.parkNanos(POOL_PAUSE_NS);
		}
	}

	// pingpong: a token handed back and forth over two one-slot queues.
	private static void pingpong(int unused) throws InterruptedException {
		List<BlockingQueue<Long>> inboxes = List.of(new ArrayBlockingQueue<>(1), new ArrayBlockingQueue<>(1));
		List<Thread> threads = new ArrayList<>();

		inboxes.get(0).put(0L);
		for (int me = 0; me < 2; me++) {
			BlockingQueue<Long> inbox = inboxes.get(me), peer = inboxes.get(1 - me);
			threads.add(start(() -> {
				for (;;) {
					long token = inbox.take();
					spinFor(PINGPONG_TURN_NS);
					peer.put(token + 1);
				}
			}));
		}
		ready();
		joinAll(threads);
	}

	// oversubscribed: more busy threads than CPUs; each pauses briefly in
	// LockSupport.parkNanos.
	private static void oversubscribed(int count) throws InterruptedException {
		List<Thread> threads = new ArrayList<>();

		for (int i = 0; i < count; i++)
			threads.add(start(() -> {
				for (;;) {
					spinFor(OVERSUBSCRIBED_RUN_NS);
					LockSupport.parkNanos(OVERSUBSCRIBED_WAIT_NS);
				}
			}));
		ready();
		joinAll(threads);
	}

	// eventloop: count event loops, each asleep in its own Selector's
	// select(), passing count / 2 + 1 tokens round a ring: a token is a
	// count in the loop's slot and a Selector.wakeup() (a write to the
	// selector's eventfd or pipe).
	private static void eventloop(int count) throws InterruptedException {
		List<Thread> threads = new ArrayList<>();
		Selector[] selectors = new Selector[count];
		AtomicIntegerArray tokens = new AtomicIntegerArray(count);

		try {
			for (int i = 0; i < count; i++)
				selectors[i] = Selector.open();
		} catch (IOException e) {
			throw new IllegalStateException(e);
		}
		for (int i = 0; i < count; i++) {
			final int me = i;
			threads.add(start(() -> {
				for (;;) {
					try {
						selectors[me].select();
					} catch (IOException e) {
						throw new IllegalStateException(e);
					}
					for (int taken = tokens.getAndSet(me, 0); taken > 0; taken--) {
						spinFor(EVENTLOOP_TURN_NS);
						int next = (me + 1) % count;
						tokens.incrementAndGet(next);
						selectors[next].wakeup();
					}
				}
			}));
		}
		for (int i = 0; i < count / 2 + 1; i++) {
			int at = (2 * i) % count;
			tokens.incrementAndGet(at);
			selectors[at].wakeup();
		}
		ready();
		joinAll(threads);
	}

	private interface Shape {
		void run(int threads) throws InterruptedException;
	}

	public static void main(String[] args) throws InterruptedException {
		Map<String, Shape> shapes = Map.of("idle", Shapes::idle, "contention", Shapes::contention, "pool",
				Shapes::pool, "pingpong", Shapes::pingpong, "oversubscribed", Shapes::oversubscribed, "eventloop",
				Shapes::eventloop);
		Shape shape = args.length > 0 ? shapes.get(args[0]) : null;
		int threads = args.length > 1 ? Integer.parseInt(args[1]) : 2 * Runtime.getRuntime().availableProcessors();

		if (shape == null) {
			System.err.println("usage: Shapes idle|contention|pool|pingpong|oversubscribed|eventloop [THREADS]");
			System.exit(2);
		}
		shape.run(Math.max(1, threads));
	}
}
