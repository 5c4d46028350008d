// SPDX-License-Identifier: MIT
// tests/sync: a C++ program that deadlocks two named mutexes (members of
// two global accounts) in opposite orders: tdstat -w must name the cycle
// with demangled callers.
// A bank with two accounts; transfers lock the source, then the target.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
struct Account { std::mutex lock; long balance; };
Account checking{{}, 1000}, savings{{}, 1000};
static void transfer(Account &from, Account &to, long amount)
{
	std::lock_guard<std::mutex> a(from.lock);
	std::this_thread::sleep_for(std::chrono::milliseconds(10));
	std::lock_guard<std::mutex> b(to.lock);
	from.balance -= amount;
	to.balance += amount;
}
int main()
{
	std::thread payday([] { for (;;) transfer(savings, checking, 100); });
	std::thread rent([] { for (;;) transfer(checking, savings, 50); });
	payday.join();
	rent.join();
}
