#!/usr/bin/perl
# GET /health (retrieval spec) and the request log line every request leaves.

use strict;
use warnings;

use MIME::Base64 qw(encode_base64);
use Test::More;

use SluiceTest;

my $res = http(GET => '/health');
json_response_is($res, 200, undef, 'GET /health');
json_response_is(http(GET => '/health?probe=1'), 400,
		 { detail => 'probe is not a known query parameter' },
		 'an unknown query parameter is refused, named');
is_deeply([ sort keys %{ $res->{json} || {} } ], [qw(status timestamp)],
	  'health body holds status and timestamp');
is($res->{json}{status}, 'healthy', 'status is healthy');
iso_time_ok($res->{json}{timestamp}, 'timestamp');

# Load balancers often probe with HEAD: same status and headers, no body.
$res = http(HEAD => '/health');
is($res->{status}, 200, 'HEAD /health is 200') or diag describe($res);
like($res->{headers}{'content-type'} // '', qr{^application/json}, 'HEAD /health content type');
is($res->{content} // '', '', 'HEAD /health has no body');

$res = http(GET => '/health', { headers => { Accept => 'application/json' } });
json_response_is($res, 200, undef, 'GET /health with Accept: application/json');
is($res->{json}{status}, 'healthy', 'status is healthy with Accept');

# The spec lets a client send its Basic credentials to /health where the
# environment blocks anonymous calls.
$res = http(GET => '/health', { basic => env('SLUICE_DEMO_BASIC') });
json_response_is($res, 200, undef, 'GET /health with demo credentials');
is($res->{json}{status}, 'healthy', 'status is healthy with credentials');

# "Authentication is not required" for /health: credentials are only checked
# when the operator turns health_auth on (06-signals covers that after a
# reload).  The test stack runs with health_auth = off, so wrong credentials
# are ignored, not refused.
$res = http(GET => '/health', { basic => 'demo:certainly-not-the-password' });
json_response_is($res, 200, undef, 'GET /health with wrong credentials');
is($res->{json}{status}, 'healthy', 'status is healthy with wrong credentials');

$res = http(GET => '/health', { basic => 'no-such-user-xyz:whatever' });
is($res->{status}, 200, 'GET /health with an unknown user') or diag describe($res);

# --- request log ---------------------------------------------------------

my $token = env('SLUICE_DEMO_TOKEN');
my ($user, $password) = split /:/, env('SLUICE_DEMO_BASIC'), 2;
my $offset = serve_log_offset();

is(http(GET => '/health', { token => $token })->{status}, 200,
   'GET /health with a bearer token');
is(http(GET => '/health', { auth => $token })->{status}, 200,
   'GET /health with a raw token');
is(http(GET => '/health', { basic => env('SLUICE_DEMO_BASIC') })->{status}, 200,
   'GET /health with Basic credentials');

my $line_re = qr/\bmsg=request request_id=[A-Za-z0-9._:-]{1,64} method=GET path=\/health status=200\b/;
my @lines;
ok(wait_until(15, sub {
	@lines = grep { $_ =~ $line_re } serve_log_since($offset);
	@lines >= 3;
}), 'the serve log has a request line for each request')
	or diag 'new log lines: ' . serve_log_since($offset);
is(scalar @lines, 3, 'exactly one request line per request')
	or diag join "\n", @lines;

my $master = master_pid();
my %workers = map { $_ => 1 } worker_pids($master);
for my $l (@lines) {
	like($l, qr{^ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\ level=info\ pid=\d+
		    \ msg=request\ request_id=[A-Za-z0-9._:-]{1,64}\ method=GET\ path=/health\ status=200
		    \ ms=\d+(?:\.\d+)?\ customer=\S+$}x,
	     'request line has ts, level, pid, request_id, method, path, status, ms, customer');
	my ($pid) = $l =~ /\bpid=(\d+)/;
	ok($pid && $workers{$pid}, "request logged by a worker of master $master")
		or diag "line: $l; workers: " . join(' ', sort keys %workers);
}

# Nothing secret in the log: not the token, not its signature on its own,
# not the password, not the Basic header.
my $log = serve_log_since(0);
ok(length $log, 'serve log is readable');
my $sig = (split /\./, $token)[2];
cmp_ok(index($log, $token), '==', -1, 'the log never holds the token');
cmp_ok(index($log, $sig), '==', -1, 'the log never holds the token signature');
cmp_ok(length $password, '>=', 8, 'demo password long enough to search for');
cmp_ok(index($log, $password), '==', -1, 'the log never holds the demo password');
cmp_ok(index($log, encode_base64(env('SLUICE_DEMO_BASIC'), '')), '==', -1,
       'the log never holds the Basic header');

done_testing();
