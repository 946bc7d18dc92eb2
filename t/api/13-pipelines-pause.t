#!/usr/bin/perl
# POST /platform/pipeline/pause and /resume: the 200 body, paused and
# next_run_at in the database and in the detail, the 400s naming the
# field, 403 for another customer_id, 404 for unknown, malformed and
# another customer's ids, hyphenated ids.

use strict;
use warnings;

use Test::More;
use Time::Local qw(timegm_modern);

use SluiceTest;

my $token = env('SLUICE_DEMO_TOKEN');
my $cid = env('SLUICE_DEMO_CUSTOMER_ID');
my $NOT_FOUND = { detail => 'Pipeline not found' };

sub create {
	my ($cron) = @_;
	my $res = http(POST => '/platform/pipeline', { token => $token, json => { name => 'pause-13',
		cron => $cron, jobs => [ { input => { connector => 'singer', plugin => 'tap-x', table_name => 't' },
		output => { plugin => 'mariadb', raw => { table_name => 't', table_schema => 'raw' } } } ] } });
	is($res->{status}, 201, 'create ' . ($cron // 'without cron')) or diag describe($res);
	return $res->{json}{pipeline_id};
}

sub call {
	my ($what, $body, $tok) = @_;
	return http(POST => "/platform/pipeline/$what", { token => $tok // $token, json => $body });
}

sub db_state {
	my ($p) = @_;
	my ($row) = mysql("SELECT paused, IFNULL(DATE_FORMAT(next_run_at, '%Y-%m-%dT%H:%i:%sZ'), 'NULL') "
			  . "FROM pipelines WHERE id = '$p'");
	return $row;
}

# The next 04:30 UTC after now, as the API writes it.
sub next_0430 {
	my @t = gmtime(time + 60);
	my $n = timegm_modern(0, 30, 4, $t[3], $t[4], $t[5] + 1900);
	$n += 86400 if $n <= time;
	my @n = gmtime($n);
	return sprintf '%04d-%02d-%02dT04:30:00Z', $n[5] + 1900, $n[4] + 1, $n[3];
}

my $p = create('30 4 * * *');
my $manual = create(undef);
is_deeply(db_state($p), [ 0, next_0430() ], 'created: not paused, next_run_at set');

# --- pause ---------------------------------------------------------------------------

my $res = call(pause => { customer_id => $cid, pipeline_id => $p });
json_response_is($res, 200, { status => JSON::PP::true,
	data => { pipeline_id => $p, paused => JSON::PP::true, next_run_at => undef } }, 'pause');
is_deeply(db_state($p), [ 1, 'NULL' ], 'paused: paused = 1, next_run_at NULL');
is(http(GET => "/platform/pipeline/$p", { token => $token })->{json}{paused}, JSON::PP::true,
   'detail: paused true');
json_response_is(call(pause => { customer_id => $cid, pipeline_id => $p }), 200, undef,
		 'pausing again is fine');

# --- resume ------------------------------------------------------------------------------

(my $hyphen = $p) =~ tr/_/-/;
$res = call(resume => { customer_id => $cid, pipeline_id => $hyphen });
json_response_is($res, 200, { status => JSON::PP::true,
	data => { pipeline_id => $p, paused => JSON::PP::false, next_run_at => next_0430() } },
	'resume by the hyphenated id: next_run_at from the cron');
is_deeply(db_state($p), [ 0, next_0430() ], 'resumed: paused = 0, next_run_at the next firing');
is(http(GET => "/platform/pipeline/$p", { token => $token })->{json}{paused}, JSON::PP::false,
   'detail: paused false');

json_response_is(call(pause => { customer_id => $cid, pipeline_id => $manual }), 200, undef,
		 'pause without cron');
$res = call(resume => { customer_id => $cid, pipeline_id => $manual });
json_response_is($res, 200, { status => JSON::PP::true,
	data => { pipeline_id => $manual, paused => JSON::PP::false, next_run_at => undef } },
	'resume without cron: next_run_at null');
is_deeply(db_state($manual), [ 0, 'NULL' ], 'no cron: next_run_at stays NULL');

# --- errors, for both operations --------------------------------------------------------------

my $other = craft_jwt(undef, { sub => 'x@example.com', customer_id => '0a0a0a0a-3333-4222-8333-444444444413',
	customer_name => 'other-13', permissions => [ 'PLATFORM.READ', 'PLATFORM.WRITE' ],
	iat => time, exp => time + 3600 });
for my $what ('pause', 'resume') {
	json_response_is(call($what, {}), 400,
		{ detail => 'customer_id is required' }, "$what {}: 400");
	json_response_is(call($what, { customer_id => $cid }), 400,
		{ detail => 'pipeline_id is required' }, "$what without pipeline_id");
	json_response_is(call($what, { pipeline_id => $p }), 400,
		{ detail => 'customer_id is required' }, "$what without customer_id");
	json_response_is(call($what, { customer_id => $cid, pipeline_id => undef }), 400,
		{ detail => 'pipeline_id is required' }, "$what pipeline_id null");
	json_response_is(call($what, { customer_id => $cid, pipeline_id => 5 }), 400,
		{ detail => 'pipeline_id must be a string' }, "$what pipeline_id a number");
	json_response_is(call($what, { customer_id => [], pipeline_id => $p }), 400,
		{ detail => 'customer_id must be a string' }, "$what customer_id an array");
	json_response_is(call($what, { customer_id => $cid, pipeline_id => $p, force => 1 }), 400,
		{ detail => 'force is not a known field' }, "$what with an unknown field");
	json_response_is(http(POST => "/platform/pipeline/$what", { token => $token, body => '[]',
		content_type => 'application/json' }), 400,
		{ detail => 'The body must be a JSON object' }, "$what body an array");
	json_response_is(call($what, { customer_id => 'someone-else', pipeline_id => $p }), 403,
		{ detail => 'customer_id does not match the token\'s customer' }, "$what another customer_id");
	json_response_is(call($what, { customer_id => $cid, pipeline_id => '01234567_89ab_4cde_8f01_23456789abcd' }),
		404, $NOT_FOUND, "$what unknown id");
	json_response_is(call($what, { customer_id => $cid, pipeline_id => 'nope' }), 404, $NOT_FOUND,
		"$what malformed id");
	json_response_is(call($what, { customer_id => '0a0a0a0a-3333-4222-8333-444444444413',
		pipeline_id => $p }, $other), 404, $NOT_FOUND, "$what another customer's pipeline");
	# Bounds: 255 characters are a value (not this customer's, not a
	# pipeline), 256 a 400 naming the field.
	json_response_is(call($what, { customer_id => 'c' x 255, pipeline_id => $p }), 403,
		{ detail => 'customer_id does not match the token\'s customer' }, "$what customer_id of 255");
	json_response_is(call($what, { customer_id => 'c' x 256, pipeline_id => $p }), 400,
		{ detail => 'customer_id must be 1 to 255 characters long' }, "$what customer_id of 256");
	json_response_is(call($what, { customer_id => $cid, pipeline_id => 'p' x 255 }), 404,
		$NOT_FOUND, "$what pipeline_id of 255");
	json_response_is(call($what, { customer_id => $cid, pipeline_id => 'p' x 256 }), 400,
		{ detail => 'pipeline_id must be 1 to 255 characters long' }, "$what pipeline_id of 256");
	json_response_is(http(POST => "/platform/pipeline/$what", { json => { customer_id => $cid,
		pipeline_id => $p } }), 401, undef, "$what without a token");
	my $ro = token(customer => 'demo', permissions => 'PLATFORM.READ');
	json_response_is(call($what, { customer_id => $cid, pipeline_id => $p }, $ro), 403, undef,
		"$what without PLATFORM.WRITE");
}
is_deeply(db_state($p), [ 0, next_0430() ], 'the refused calls changed nothing');

done_testing;
