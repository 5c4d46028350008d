// SPDX-License-Identifier: MIT
//
// The accuracy shapes in C++20, with the standard library's own waiting
// primitives (README.md in this folder describes the shapes):
//
//   accuracy-shapes-cxx SHAPE [THREADS]
//
// std::atomic::wait, counting_semaphore, latch and barrier wait in the
// kernel through libc's syscall(SYS_futex, ...), never through a pthread
// call; std::mutex and std::thread::join go through pthreads.  Prints
// "ready" once its threads are started, then runs until killed.
#include <atomic>
#include <poll.h>
#include <unistd.h>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <latch>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr int workers = 4;
constexpr auto contention_inside = 10us;
constexpr auto contention_outside = 30us;
constexpr int pool_batch = 8;
constexpr auto pool_pause = 500us;
constexpr auto pingpong_turn = 20us;
constexpr auto oversubscribed_run = 2000us;
constexpr auto oversubscribed_wait = 100us;
constexpr auto eventloop_turn = 40us;

void spin_for(clock_type::duration how_long)
{
	const auto end = clock_type::now() + how_long;
	while (clock_type::now() < end) {
	}
}

void ready()
{
	std::printf("ready\n");
	std::fflush(stdout);
}

// Every shape ends with the main thread in std::thread::join, forever.
void join_all(std::vector<std::thread> &threads)
{
	for (auto &thread : threads)
		thread.join();
}

// idle: one thread in each of the four C++20 waits, none ever released.
void shape_idle(int)
{
	std::atomic<int> word{0};
	std::counting_semaphore<4> semaphore{0};
	std::latch latch{1};
	std::barrier barrier{2};
	std::vector<std::thread> threads;

	threads.emplace_back([&] { for (;;) word.wait(0); });
	threads.emplace_back([&] { for (;;) semaphore.acquire(); });
	threads.emplace_back([&] { latch.wait(); });
	threads.emplace_back([&] { barrier.arrive_and_wait(); });
	ready();
	join_all(threads);
}

// contention: short critical sections on one std::mutex.
void shape_contention(int)
{
	std::mutex lock;
	std::vector<std::thread> threads;

	for (int i = 0; i < workers; i++)
		threads.emplace_back([&] {
			for (;;) {
				{
					std::lock_guard guard{lock};
					spin_for(contention_inside);
				}
				spin_for(contention_outside);
			}
		});
	ready();
	join_all(threads);
}

// pool: main feeds batches of short tasks; a counting_semaphore counts the
// queued tasks and a latch per batch tells main the batch is done.
void shape_pool(int)
{
	std::mutex lock;
	std::deque<std::chrono::microseconds> tasks;
	std::counting_semaphore<pool_batch> queued{0};
	std::shared_ptr<std::latch> batch_done;
	std::vector<std::thread> threads;

	for (int i = 0; i < workers; i++)
		threads.emplace_back([&] {
			for (;;) {
				queued.acquire();
				std::chrono::microseconds task;
				std::shared_ptr<std::latch> done;
				{
					std::lock_guard guard{lock};
					task = tasks.front();
					tasks.pop_front();
					done = batch_done;
				}
				spin_for(task);
				done->count_down();
			}
		});
	ready();
	for (;;) {
		auto done = std::make_shared<std::latch>(pool_batch);
		{
			std::lock_guard guard{lock};
			batch_done = done;
			for (int i = 0; i < pool_batch; i++)
				tasks.push_back(std::chrono::microseconds{50 + 50 * (i % 4)}); // 50..200 us
		}
		queued.release(pool_batch);
		done->wait();
		std::this_thread::sleep_for(pool_pause);
	}
}

// pingpong: a token handed back and forth through two binary semaphores.
void shape_pingpong(int)
{
	std::binary_semaphore turn[2]{std::binary_semaphore{1}, std::binary_semaphore{0}};
	std::vector<std::thread> threads;

	for (int me = 0; me < 2; me++)
		threads.emplace_back([&, me] {
			for (;;) {
				turn[me].acquire();
				spin_for(pingpong_turn);
				turn[1 - me].release();
			}
		});
	ready();
	join_all(threads);
}

// oversubscribed: more busy threads than CPUs; each pauses briefly in a
// timed semaphore wait that nobody releases.
void shape_oversubscribed(int count)
{
	std::counting_semaphore<1> never{0};
	std::vector<std::thread> threads;

	for (int i = 0; i < count; i++)
		threads.emplace_back([&] {
			for (;;) {
				spin_for(oversubscribed_run);
				(void)never.try_acquire_for(oversubscribed_wait);
			}
		});
	ready();
	join_all(threads);
}

// eventloop: count event loops, each asleep in poll on its own pipe,
// passing count / 2 + 1 tokens round a ring, a byte written to the next
// loop's pipe each.
void shape_eventloop(int count)
{
	std::vector<int> read_ends(count), write_ends(count);
	std::vector<std::thread> threads;

	for (int i = 0; i < count; i++) {
		int ends[2];

		if (pipe(ends) != 0) {
			std::perror("accuracy-shapes-cxx: pipe");
			std::exit(1);
		}
		read_ends[i] = ends[0];
		write_ends[i] = ends[1];
	}
	for (int i = 0; i < count; i++)
		threads.emplace_back([&, i] {
			const char token = 1;
			for (;;) {
				pollfd wanted{read_ends[i], POLLIN, 0};
				char taken[64];

				if (poll(&wanted, 1, -1) != 1)
					continue;
				ssize_t tokens = read(read_ends[i], taken, sizeof(taken));
				for (ssize_t t = 0; t < tokens; t++) {
					spin_for(eventloop_turn);
					(void)!write(write_ends[(i + 1) % count], &token, 1);
				}
			}
		});
	const char token = 1;
	for (int i = 0; i < count / 2 + 1; i++)
		(void)!write(write_ends[(2 * i) % count], &token, 1);
	ready();
	join_all(threads);
}

struct shape {
	std::string_view name;
	void (*run)(int threads);
};

constexpr shape shapes[] = {
	{"idle", shape_idle},
	{"contention", shape_contention},
	{"pool", shape_pool},
	{"pingpong", shape_pingpong},
	{"oversubscribed", shape_oversubscribed},
	{"eventloop", shape_eventloop},
};

} // namespace

int main(int argc, char **argv)
{
	int threads = argc > 2 ? std::atoi(argv[2]) : 2 * static_cast<int>(std::thread::hardware_concurrency());

	for (const auto &shape : shapes) {
		if (argc > 1 && shape.name == argv[1]) {
			shape.run(threads > 0 ? threads : 1);
			return 0;
		}
	}
	std::fprintf(stderr, "usage: accuracy-shapes-cxx idle|contention|pool|pingpong|oversubscribed|eventloop [THREADS]\n");
	return 2;
}
