# SPDX-License-Identifier: MIT
# Perl ithreads: shared variables with lock/cond_wait/cond_signal,
# Thread::Queue, Thread::Semaphore, detach and join.  Prints only results
# that do not depend on scheduling.
use strict;
use warnings;
use threads;
use threads::shared;
use Thread::Queue;
use Thread::Semaphore;
use Digest::MD5 qw(md5_hex);

my $counter :shared = 0;
my @workers = map {
    threads->create(sub {
        for (1 .. 2000) { lock($counter); $counter++; }
        return threads->tid() > 0 ? 1 : 0;
    })
} 1 .. 6;
my $ok = 0;
$ok += $_->join() for @workers;
print "counter $counter joined $ok\n";

my $queue = Thread::Queue->new();
my $results = Thread::Queue->new();
my @consumers = map {
    threads->create(sub {
        while (defined(my $item = $queue->dequeue())) {
            $results->enqueue(md5_hex("item$item"));
        }
    })
} 1 .. 4;
$queue->enqueue($_) for 1 .. 500;
$queue->end();
$_->join() for @consumers;
my @digests;
while (defined(my $d = $results->dequeue_nb())) { push @digests, $d; }
print "queue ", scalar(@digests), " ", md5_hex(join("", sort @digests)), "\n";

my $turn :shared = 0;
my $log :shared = 0;
my @players = map {
    my $me = $_;
    threads->create(sub {
        for (1 .. 300) {
            lock($turn);
            cond_wait($turn) until $turn == $me;
            $log = ($log * 3 + $me + 1) % 1000000007;
            $turn = 1 - $me;
            cond_broadcast($turn);
        }
    })
} 0 .. 1;
$_->join() for @players;
print "pingpong $log\n";

my $sem = Thread::Semaphore->new(2);
my $inside :shared = 0;
my $most :shared = 0;
my @users = map {
    threads->create(sub {
        for (1 .. 50) {
            $sem->down();
            { lock($inside); $inside++; $most = $inside if $inside > $most; }
            select(undef, undef, undef, 0.0005);
            { lock($inside); $inside--; }
            $sem->up();
        }
    })
} 1 .. 5;
$_->join() for @users;
print "semaphore most<=2 ", ($most <= 2 ? "yes" : "no"), "\n";

my $sleeper = threads->create(sub { sleep 0; select(undef, undef, undef, 0.01); return 42 });
print "sleeper ", $sleeper->join(), "\n";
