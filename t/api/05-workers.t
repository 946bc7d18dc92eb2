#!/usr/bin/perl
# The worker pool: requests are served by children of the master, and a
# worker killed under load is replaced while the master carries on.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(time);

use SluiceTest;

my $master = master_pid();
my @workers = worker_pids($master);
is(scalar @workers, 2, 'two workers') or diag "workers: @workers";

# Leave the pool as it was found: two workers.
END {
	local ($?, $@);
	eval { wait_workers(master_pid(), 2, 15) };
}

# --- /_test/pid answers from the master's children ---------------------------

sub pids_from_workers_ok {
	my ($label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my %live = map { $_ => 1 } worker_pids($master);
	my @res = parallel_requests(clients => 4, requests => 10, path => '/_test/pid');
	is(scalar @res, 40, "$label: 40 answers");
	is(scalar(grep { $_->{status} eq '200' } @res), 40, "$label: all 200")
		or diag join ' ', map { $_->{status} } @res;
	my %seen;
	$seen{ ref $_->{json} eq 'HASH' ? $_->{json}{pid} // 'none' : 'none' }++ for @res;
	my @strangers = grep { !$live{$_} } sort keys %seen;
	is_deeply(\@strangers, [], "$label: every pid is a worker of master $master")
		or diag 'workers: ' . join(' ', sort keys %live);
	return keys %seen;
}

pids_from_workers_ok('before the kill');

# --- kill -9 under load -----------------------------------------------------

my $stream = start_requests(clients => 4, duration => 3, path => '/health');
ok($stream->wait_answered(8, 10, 0), 'the stream is being answered');
my $victim = $workers[0];
my $t_kill = time;
ok(kill('KILL', $victim), "kill -9 worker $victim");

my @now;
ok(wait_until(10, sub {
	@now = worker_pids($master);
	@now == 2 && !grep { $_ == $victim } @now;
}), 'the master respawns a worker within 10 s') or diag "workers: @now";
my $t_respawn = time;
my ($new) = grep { my $p = $_; !grep { $_ == $p } @workers } @now;
ok(defined $new, 'one worker is new' . (defined $new ? " ($new)" : ''));
ok(!proc_alive($victim), 'the killed worker is gone');

my @res = $stream->finish;
cmp_ok(scalar @res, '>', 8, 'the stream ran (' . scalar(@res) . ' requests)');
my @before = grep { $_->{end} < $t_kill } @res;
is(scalar(grep { $_->{status} ne '200' } @before), 0,
   'requests finished before the kill: all 200');
my @after = grep { $_->{start} > $t_respawn } @res;
is(scalar(grep { $_->{status} ne '200' } @after), 0,
   'requests started after the respawn: all 200 (' . scalar(@after) . ')');
# Only the request the dead worker held can fail, and nginx says 502.
my @failed = grep { $_->{status} ne '200' } @res;
cmp_ok(scalar @failed, '<=', 1, 'at most the one in-flight request failed')
	or diag join ' ', map { $_->{status} } @failed;
is(scalar(grep { $_->{status} ne '502' } @failed), 0, 'a failure is a 502')
	if @failed;

# Whether or not the stream outlived the respawn, a fresh burst must be
# served in full by the new pool.
@res = parallel_requests(clients => 4, requests => 10, path => '/health');
is(scalar(grep { $_->{status} eq '200' } @res), 40, 'after the respawn: 40 of 40 requests 200')
	or diag join ' ', map { $_->{status} } @res;

is(master_pid(), $master, 'master pid unchanged');
ok(proc_alive($master), 'master still running');
pids_from_workers_ok('after the respawn');

done_testing();
