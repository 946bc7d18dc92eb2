#!/usr/bin/perl
# Signals to the master: TERM drains in-flight requests and exits; HUP
# reloads the config, replacing the workers without dropping requests; a
# broken config on HUP, or one whose database login is refused, is refused
# and the old workers keep serving.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(time sleep);

use SluiceTest;

my $SHUTDOWN_TIMEOUT = 10;    # shutdown_timeout of the test stack
my $orig = conf_read();
my $dirty = 0;                # the running master has loaded a changed config

# Whatever fails below, the stack ends as it began: the original config,
# loaded by a running master with two workers.
END {
	local ($?, $@);
	eval {
		conf_write($orig) if conf_read() ne $orig;
		my $m = eval { master_pid() };
		if (!$m || !proc_alive($m)) {
			my $r = dev('serve-start');
			print STDERR "# serve-start after a failure: exit $r->{exit}\n";
		} elsif ($dirty) {
			my @old = worker_pids($m);
			kill 'HUP', $m;
			wait_workers($m, 2, 30, \@old);
		}
		wait_until(30, sub { http(GET => '/health')->{status} == 200 });
		1;
	} or print STDERR "# restoring the stack failed: $@";
}

sub health_ok {
	my ($n, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my @bad;
	for (1 .. $n) {
		my $r = http(GET => '/health');
		push @bad, describe($r) if $r->{status} != 200;
	}
	is(scalar @bad, 0, "$label: $n health checks 200") or diag join "\n", @bad;
}

# Write $text, HUP the master, wait for $n workers none of which is old.
sub reload {
	my ($master, $text, $n, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my @old = worker_pids($master);
	conf_write($text);
	$dirty = $text ne $orig;
	ok(kill('HUP', $master), "$label: HUP the master");
	my @new = wait_workers($master, $n, 30, \@old);
	is(scalar @new, $n, "$label: $n new workers, none of the old ones")
		or diag 'workers now: ' . join(' ', worker_pids($master))
		    . '; before: ' . join(' ', @old);
	ok(!grep({ proc_alive($_) } @old), "$label: the old workers have exited");
	return @new;
}

sub all_200 {
	my ($res, $label) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my @bad = grep { $_->{status} ne '200' } @$res;
	is(scalar @bad, 0, "$label: all " . scalar(@$res) . ' requests 200')
		or diag join "\n", map { "$_->{status} $_->{content}" } @bad[0 .. ($#bad > 9 ? 9 : $#bad)];
}

# --- (a) TERM drains the request in flight -----------------------------------

my $master = master_pid();
my @workers = worker_pids($master);
is(scalar @workers, 2, 'two workers') or diag "workers: @workers";
health_ok(2, 'before TERM');

my $slow = start_requests(clients => 1, requests => 1,
			  path => '/_test/sleep?ms=3000', opts => { timeout => 60 });
my $t_sent = time;
# The request must be inside a worker before TERM, or nginx would find the
# socket closed: a worker sleeping in the handler shows in its wait channel.
# Seen within 50 ms of getting there, it leaves TERM most of the 3 s.
ok(wait_until(10, sub { busy_worker($master) }, 0.05),
   'precondition: a worker is sleeping in the request before TERM')
	or diag sprintf('none seen %.1f s after the request was sent', time - $t_sent);

my $t_term = time;
ok(kill('TERM', $master), "TERM master $master");

my ($r) = $slow->finish;
is($r->{status}, 200, 'the request in flight completes') or diag $r->{content};
is_deeply($r->{json}, { slept_ms => 3000 }, 'with its full answer');

my $limit = $SHUTDOWN_TIMEOUT + 5;
ok(wait_until($t_term + $limit - time, sub { !proc_alive($master) }),
   "master exits within ${limit}s of TERM");
ok(wait_until(5, sub { !grep { proc_alive($_) } @workers }),
   'all workers are gone')
	or diag 'still running: ' . join ' ', grep { proc_alive($_) } @workers;

my $start = dev('serve-start');
is($start->{exit}, 0, 'scripts/dev serve-start') or diag "$start->{out}$start->{err}";
ok(wait_until(30, sub {
	my $m = eval { master_pid() };
	$m && $m != $master && proc_alive($m);
}), 'a new master is running');
ok(wait_until(30, sub { http(GET => '/health')->{status} == 200 }),
   'health is 200 again');
$master = master_pid();
@workers = wait_workers($master, 2, 30);
is(scalar @workers, 2, 'the new master has two workers');

# --- (b) HUP reload ------------------------------------------------------------

# Requests keep flowing during the reload: quick ones, and slow ones the
# old workers must finish while they drain.
my @streams = (
	start_requests(clients => 2, path => '/health'),
	start_requests(clients => 2, path => '/_test/sleep?ms=200'),
);
ok(!grep({ !$_->wait_answered(2, 10, 0) } @streams), 'the streams are being answered');
my @three = reload($master, conf_with($orig, workers => 3), 3, 'workers = 3');
ok(!grep({ !$_->wait_answered(2, 10) } @streams), 'and go on being answered by the new workers');
my @res = map { $_->stop } @streams;
# Two answers per stream before the reload and two after, all collected.
cmp_ok(scalar @res, '>=', 4 * @streams, 'requests ran across the reload');
all_200(\@res, 'during the reload (none 502)');
is(master_pid(), $master, 'master pid unchanged by the reload');

my %three = map { $_ => 1 } @three;
my @pids = parallel_requests(clients => 4, requests => 6, path => '/_test/pid');
all_200(\@pids, '/_test/pid after the reload');
is(scalar(grep { !(ref $_->{json} eq 'HASH' && $three{ $_->{json}{pid} // 0 }) } @pids), 0,
   'answers come from the new workers');

# health_auth on (and the test routes off) after a reload.
reload($master, conf_with($orig, health_auth => 'on', testing_routes => 'off'), 2,
       'health_auth = on');
my $res = http(GET => '/health');
json_response_is($res, 401, undef, 'health without credentials when health_auth is on');
is($res->{json}{status}, 'unhealthy', '401 status is unhealthy');
ok(length($res->{json}{detail} // ''), '401 detail says why');
$res = http(GET => '/health', { basic => 'demo:certainly-not-the-password' });
json_response_is($res, 401, undef, 'health with wrong credentials when health_auth is on');
is($res->{json}{status}, 'unhealthy', 'wrong credentials: status is unhealthy');
$res = http(GET => '/health', { basic => env('SLUICE_DEMO_BASIC') });
json_response_is($res, 200, undef, 'health with demo credentials when health_auth is on');
is($res->{json}{status}, 'healthy', 'status is healthy with credentials');
json_response_is(http(GET => '/_test/pid'), 404, { detail => 'Not Found' },
		 'test routes are gone with testing_routes = off');

reload($master, $orig, 2, 'original config');
health_ok(4, 'original config, no credentials');
is(http(GET => '/_test/pid')->{status}, 200, 'test routes are back');

# --- (c) a broken config on HUP --------------------------------------------------

@workers = worker_pids($master);
my $offset = serve_log_offset();
my $broken = $orig;
$broken .= "\n" unless $broken =~ /\n\z/;
conf_write($broken . "bogus_key = 1\n");
ok(kill('HUP', $master), 'HUP with a broken config');
my @err;
ok(wait_until(15, sub {
	@err = grep { /\blevel=error\b/ && /bogus_key/ } serve_log_since($offset);
}), 'the master logs the config error, naming the key')
	or diag 'new log lines: ' . serve_log_since($offset);
ok(proc_alive($master), 'master still running');
is(master_pid(), $master, 'same master pid');
is_deeply([ worker_pids($master) ], \@workers, 'the old workers keep serving');
health_ok(4, 'after the refused reload');
is_deeply([ worker_pids($master) ], \@workers, 'and stay in place');

# --- (d) a config the database refuses on HUP ------------------------------------
# It parses, so new workers start; they exit fatally on the refused login.
# The master abandons the reload instead of shutting down, and the old
# workers, never told to stop, go on serving.

$offset = serve_log_offset();
conf_write(conf_with($orig, db_password => 'not-the-database-password'));
$dirty = 1;
ok(kill('HUP', $master), 'HUP with credentials the database refuses');
my @abandoned;
ok(wait_until(15, sub {
	@abandoned = grep { /\blevel=error\b/ && /reload abandoned/ } serve_log_since($offset);
}), 'the master logs that it abandoned the reload')
	or diag 'new log lines: ' . serve_log_since($offset);
ok(proc_alive($master), 'master still running after the refused credentials');
# The master logs once it has told the new workers to stop; they may still
# be exiting, so: every old worker is there now, and only they remain.
my %now = map { $_ => 1 } worker_pids($master);
is_deeply([ grep { !$now{$_} } @workers ], [], 'the old workers keep serving');
ok(wait_until(15, sub { "@{[ worker_pids($master) ]}" eq "@workers" }),
   'the new workers are gone, the old ones remain')
	or diag "workers: @{[ worker_pids($master) ]}, before: @workers";
health_ok(4, 'after the abandoned reload');
my @during = parallel_requests(clients => 2, requests => 5, path => '/health');
all_200(\@during, 'requests after the abandoned reload');
is_deeply([ worker_pids($master) ], \@workers, 'and stay in place');

# A good config reloads fine after a refused one.
reload($master, $orig, 2, 'original config after the refused ones');
health_ok(4, 'after restoring the config');

done_testing();
