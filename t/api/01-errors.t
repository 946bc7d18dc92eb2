#!/usr/bin/perl
# The common error answers: 404, 405, and JSON body checks (415, 413, 400)
# on POST /_test/echo, plus parameter bounds of /_test/sleep.

use strict;
use warnings;

use JSON::PP ();
use Test::More;
use Time::HiRes qw(time);

use SluiceTest;

my $token = env('SLUICE_DEMO_TOKEN');
my $LIMIT = 1048576;    # body_max_bytes of the test stack
my $DEPTH = 32;         # json_max_depth of the test stack

# The upper bound of /_test/sleep takes 10 s: it runs in the background on
# one worker while the rest of this file uses the other.
my $slow = start_requests(clients => 1, requests => 1,
			  path => '/_test/sleep?ms=10000', opts => { timeout => 60 });

# --- 404 -----------------------------------------------------------------

for my $case (
	[ GET  => '/nope' ],
	[ GET  => '/health/extra' ],
	[ GET  => '/_test' ],
	[ GET  => '/_test/nope' ],
	[ GET  => '/nope?x=1' ],
	[ GET  => '/no%20such/caf%C3%A9' ],
	[ GET  => '/%7Euser/a%2Fb' ],
	[ POST => '/nope' ],
	[ DELETE => '/nope' ],
) {
	my ($m, $p) = @$case;
	my $o = $m eq 'POST' ? { token => $token, json => { a => 1 } } : {};
	json_response_is(http($m, $p, $o), 404, { detail => 'Not Found' }, "$m $p");
}

# --- 405 -----------------------------------------------------------------

for my $case (
	[ POST   => '/health',       'GET' ],
	[ DELETE => '/health',       'GET' ],
	[ PUT    => '/_test/whoami', 'GET' ],
	[ GET    => '/_test/echo',   'POST' ],
) {
	my ($m, $p, $allow) = @$case;
	my $res = http($m, $p, { token => $token });
	json_response_is($res, 405, { detail => 'Method Not Allowed' }, "$m $p");
	is(header($res, 'allow'), $allow, "$m $p: Allow: $allow");
}

# --- echo: valid bodies ----------------------------------------------------

sub echo {
	my ($body, %o) = @_;
	return http(POST => '/_test/echo', { token => $token, body => $body,
		content_type => 'application/json', %o });
}

for my $data (
	{ name => 'sluice', n => 42, neg => -7, list => [ 1, 'two', undef ],
	  yes => JSON::PP::true, no => JSON::PP::false,
	  nested => { a => { b => [ {} , [] ] } } },
	[ "\x{fc}n\x{ef}c\x{f8}d\x{e9} \x{2713}", 'tab\there', "quote\"back\\slash" ],
	{},
	[],
) {
	my $res = echo(json_encode($data));
	json_response_is($res, 200, { echo => $data }, 'echo ' . json_encode($data));
}

my $res = echo(qq(  {"a": 1}\r\n\t ));
json_response_is($res, 200, { echo => { a => 1 } }, 'echo with surrounding whitespace');

$res = echo('{"a":1}', content_type => 'application/json; charset=utf-8');
json_response_is($res, 200, { echo => { a => 1 } }, 'Content-Type with charset');

# --- 415 -----------------------------------------------------------------

my $ct_detail = { detail => 'Content-Type must be application/json' };
json_response_is(echo('{"a":1}', content_type => 'text/plain'), 415, $ct_detail,
		 'Content-Type text/plain');
json_response_is(echo('{"a":1}', content_type => 'application/x-www-form-urlencoded'),
		 415, $ct_detail, 'Content-Type form-urlencoded');
json_response_is(echo('{"a":1}', content_type => 'application/jsonx'), 415,
		 $ct_detail, 'Content-Type application/jsonx');
json_response_is(http(POST => '/_test/echo', { token => $token, body => '{"a":1}',
		      no_content_type => 1 }),
		 415, $ct_detail, 'no Content-Type');

# --- 413 at the limit + 1, 200 at the limit ------------------------------

my $at_limit = '"' . ('a' x ($LIMIT - 2)) . '"';
is(length $at_limit, $LIMIT, "body of exactly $LIMIT bytes");
$res = echo($at_limit, timeout => 60);
is($res->{status}, 200, "$LIMIT-byte body accepted") or diag describe($res);
ok(defined $res->{json} && ref $res->{json} eq 'HASH'
   && defined $res->{json}{echo} && $res->{json}{echo} eq 'a' x ($LIMIT - 2),
   "$LIMIT-byte body echoed whole");

my $over = '"' . ('a' x ($LIMIT - 1)) . '"';
is(length $over, $LIMIT + 1, 'body of limit + 1 bytes');
json_response_is(echo($over, timeout => 60), 413,
		 { detail => "Request body too large (limit $LIMIT bytes)" },
		 'body of limit + 1 bytes');

# --- 400 -----------------------------------------------------------------

my $malformed = qr/^Malformed JSON: .+ at offset \d+$/;
for my $body ('{"a":', '{a:1}', '[1,2', '{"a":1,}', "'x'", 'nul', '{"a":tru}',
	      '{"a" 1}', '"unterminated',
	      # trailing garbage after a complete value
	      '{"a":1} x', '{"a":1}{"b":2}', '[1]]', '1 2') {
	my $res = echo($body);
	json_response_is($res, 400, undef, "malformed body '$body'");
	like($res->{json}{detail} // '', $malformed, "'$body': detail says where")
		if ref $res->{json} eq 'HASH';
}

json_response_is(echo(''), 400, { detail => 'Request body is empty' }, 'empty body');

# Nesting: json_max_depth levels are fine, one more is refused.
for my $kind (qw(array object)) {
	my $nest = sub {
		my ($n) = @_;
		return $kind eq 'array' ? ('[' x $n) . (']' x $n)
		    : ('{"a":' x $n) . '1' . ('}' x $n);
	};
	my $ok = $nest->($DEPTH);
	$res = echo($ok);
	json_response_is($res, 200, { echo => json_decode($ok) },
			 "$kind nested $DEPTH deep");
	$res = echo($nest->($DEPTH + 1));
	json_response_is($res, 400, undef, "$kind nested " . ($DEPTH + 1) . ' deep');
	like($res->{json}{detail} // '',
	     qr/^Malformed JSON: nesting deeper than $DEPTH at offset \d+$/,
	     "$kind nested " . ($DEPTH + 1) . ' deep: detail');
}

# --- /_test/sleep bounds --------------------------------------------------

for my $q ('ms=abc', 'ms=10001', 'ms=-1', 'ms=12abc', 'ms=1.5', 'ms=') {
	my $res = http(GET => "/_test/sleep?$q");
	json_response_is($res, 400, undef, "GET /_test/sleep?$q");
	ok(ref $res->{json} eq 'HASH' && length($res->{json}{detail} // ''),
	   "GET /_test/sleep?$q: detail says why");
}

for my $c ([ 'ms=1&x=2', 'x is not a known query parameter' ],
	   [ 'ms=1&ms=2', 'ms is given more than once' ],
	   [ '', 'ms is required' ],
	   [ 'ms=10001', 'ms must be an integer from 0 to 10000' ]) {
	json_response_is(http(GET => "/_test/sleep?$c->[0]"), 400, { detail => $c->[1] },
			 "GET /_test/sleep?$c->[0]: detail names the parameter");
}

json_response_is(http(GET => '/_test/sleep?ms=0'), 200, { slept_ms => 0 },
		 'GET /_test/sleep?ms=0');
my $t0 = time;
json_response_is(http(GET => '/_test/sleep?ms=300'), 200, { slept_ms => 300 },
		 'GET /_test/sleep?ms=300');
cmp_ok(time - $t0, '>=', 0.3, 'ms=300 took at least 300 ms');

my ($r) = $slow->finish;
is($r->{status}, 200, 'GET /_test/sleep?ms=10000 (upper bound)')
	or diag $r->{content};
is_deeply($r->{json}, { slept_ms => 10000 }, 'slept 10000 ms');
cmp_ok($r->{end} - $r->{start}, '>=', 10, 'ms=10000 took at least 10 s');

done_testing();
