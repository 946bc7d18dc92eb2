#!/usr/bin/perl
# A database outage: health and DB routes answer 503, routes that need no
# database keep working, and after the restart the same workers recover
# without being restarted.

use strict;
use warnings;

use Test::More;

use SluiceTest;

my $basic = env('SLUICE_DEMO_BASIC');
my $token = env('SLUICE_DEMO_TOKEN');
my $db_down = 0;

# The database comes back whatever happens below.
END {
	if ($db_down) {
		local ($?, $@);
		my $r = dev('db-start');
		print STDERR "# db-start after a failure: exit $r->{exit}\n";
		wait_until(60, sub { http(GET => '/health')->{status} == 200 });
	}
}

sub n_times {
	my ($n, $code) = @_;
	return !grep { !$code->() } 1 .. $n;
}

json_response_is(http(GET => '/health'), 200, undef, 'healthy before the outage');
is(http(GET => '/_test/basic', { basic => $basic })->{status}, 200,
   'Basic route works before the outage');

my $master = master_pid();
my @workers = worker_pids($master);
is(scalar @workers, 2, 'two workers before the outage') or diag "workers: @workers";

# --- outage ----------------------------------------------------------------

$db_down = 1;
my $r = dev('db-stop');
is($r->{exit}, 0, 'scripts/dev db-stop') or diag "$r->{out}$r->{err}";

# A worker reuses a good ping for health_ping_cache_ms (default 250 ms) and
# never a failed one: once the window is over, every worker must say so.
# The bound is that window plus 15 s of polling on a shared machine, still
# far short of forever: a good ping cached without end would fail it.
my $health_window_s = 0.25;
my $res;
ok(wait_until($health_window_s + 15, sub {
	n_times(4, sub {
		$res = http(GET => '/health');
		$res->{status} == 503;
	});
}), 'health turns 503 on every worker within the ping cache window')
	or diag describe($res);
json_response_is($res, 503, undef, 'GET /health during the outage');
is($res->{json}{status}, 'unhealthy', 'status is unhealthy');
is($res->{json}{detail}, 'database unreachable', 'detail names the database');
iso_time_ok($res->{json}{timestamp}, 'timestamp of the unhealthy report');

# Repeated so that both workers are asked, not just the one that noticed first.
for my $i (1 .. 4) {
	my $h = http(GET => '/health');
	is($h->{status}, 503, "health during the outage ($i)") or diag describe($h);
}

for my $i (1 .. 4) {
	my $b = http(GET => '/_test/basic', { basic => $basic });
	json_response_is($b, 503, { detail => 'Database unavailable' },
			 "Basic route during the outage ($i)");
	is(header($b, 'retry-after'), '1', "a retry is invited ($i)");
}

# JWT verification needs no database.
for my $i (1 .. 4) {
	my $w = http(GET => '/_test/whoami', { token => $token });
	json_response_is($w, 200, undef, "JWT route during the outage ($i)");
	is($w->{json}{customer_name}, 'demo', "whoami answers during the outage ($i)");
}
is(http(GET => '/_test/pid')->{status}, 200, 'public route during the outage');

# --- recovery -----------------------------------------------------------------

$r = dev('db-start');
is($r->{exit}, 0, 'scripts/dev db-start') or diag "$r->{out}$r->{err}";
$db_down = 0 if $r->{exit} == 0;

ok(wait_until(30, sub {
	n_times(4, sub { http(GET => '/health')->{status} == 200 });
}), 'health is 200 again within 30 s');
$res = http(GET => '/health');
json_response_is($res, 200, undef, 'GET /health after the outage');
is($res->{json}{status}, 'healthy', 'status is healthy again');

ok(wait_until(30, sub {
	n_times(6, sub { http(GET => '/_test/basic', { basic => $basic })->{status} == 200 });
}), 'Basic route is 200 again on every worker');
json_response_is(http(GET => '/_test/basic', { basic => $basic }), 200, undef,
		 'GET /_test/basic after the outage');

is(master_pid(), $master, 'master pid unchanged');
is_deeply([ worker_pids($master) ], \@workers, 'the same workers: none was restarted');

done_testing();
