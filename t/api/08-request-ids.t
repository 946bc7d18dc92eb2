#!/usr/bin/perl
# Request ids: X-Request-Id is taken from the client when well-formed and
# made otherwise, returned on every answer (sluice's, the waiter's and
# nginx's own), written in the request's log line, and carried into the log
# lines of the work and runs the request queued.  (A 5xx body repeating it
# is checked by json_response_is wherever a test gets a 5xx.)

use strict;
use warnings;

use Test::More;

use SluiceTest;
use RagFixture;

my $token = env('SLUICE_DEMO_TOKEN');

sub rid { header($_[0], 'x-request-id') // '' }

sub log_since {
	my ($file, $offset) = @_;
	open my $fh, '<:raw', $file or return '';
	seek $fh, $offset, 0;
	local $/;
	return <$fh> // '';
}

# --- taken, made, refused -------------------------------------------------------

my $off = serve_log_offset();
my $res = http(GET => '/health', { headers => { 'X-Request-Id' => "req-$$-a" } });
is($res->{status}, 200, 'health');
is(rid($res), "req-$$-a", 'a well-formed X-Request-Id comes back as sent');
ok(wait_until(10, sub { serve_log_since($off) =~ /msg=request request_id=req-$$-a method=GET path=\/health status=200/ }),
   "the request's log line carries it");

my $max = 'A.b:c-d_' x 8;
is(length $max, 64, 'set-up: a 64-character id');
is(rid(http(GET => '/health', { headers => { 'X-Request-Id' => $max } })), $max,
   '64 characters of [A-Za-z0-9._:-] are kept');

my %seen;
for my $bad ("$max-", 'a b', 'x;y', 'caf\xc3\xa9', '') {
	my $r = http(GET => '/health', { headers => { 'X-Request-Id' => $bad } });
	my $id = rid($r);
	like($id, qr/^[A-Za-z0-9._:-]{1,64}$/, "malformed '$bad': an id is made");
	isnt($id, $bad, "malformed '$bad': not the one sent");
	$seen{$id}++;
}
my $a = rid(http(GET => '/health'));
my $b = rid(http(GET => '/health'));
like($a, qr/^[A-Za-z0-9._:-]{1,64}$/, 'no X-Request-Id: an id is made');
isnt($a, $b, 'and each request gets its own');
is(scalar(grep { $_ > 1 } values %seen), 0, 'made ids do not repeat');

$off = serve_log_offset();
$res = http(GET => '/health');
my $made = rid($res);
ok(wait_until(10, sub { serve_log_since($off) =~ /request_id=\Q$made\E method=GET path=\/health/ }),
   'a made id is the one in the log line');

# --- every answer ---------------------------------------------------------------------

$res = http(GET => '/no/such/route', { headers => { 'X-Request-Id' => "req-$$-404" } });
is($res->{status}, 404, 'unknown route');
is(rid($res), "req-$$-404", 'a 404 carries it');

$res = http(POST => '/platform/pipeline', { token => $token,
	headers => { 'X-Request-Id' => "req-$$-400" }, json => { name => '' } });
is($res->{status}, 400, 'a refused body');
is(rid($res), "req-$$-400", 'a 400 carries it');

$res = http(POST => '/platform/pipeline', { token => $token,
	headers => { 'X-Request-Id' => "req-$$-413" },
	body => '{"x":"' . ('y' x (2 * 1024 * 1024)) . '"}', content_type => 'application/json' });
is($res->{status}, 413, "nginx's own 413");
is(rid($res), "req-$$-413", "nginx's own answers carry it too");

# --- into sluice work ---------------------------------------------------------------

my $work_log = env('SLUICE_WORK_LOG');
my $woff = -s $work_log // 0;
my $ds = new_dataset("rid-$$");
$res = http(POST => "/dataset/$ds/documents", { basic => demo_basic(),
	headers => { 'X-Request-Id' => "req-$$-docs" },
	json => { documents => [ { text => 'Request ids follow work into the background.' } ] } });
is($res->{status}, 202, 'documents posted') or diag describe($res);
is(rid($res), "req-$$-docs", 'the documents answer carries it');
ok(wait_until(60, sub {
	my $t = log_since($work_log, $woff);
	$t =~ /msg="work started" request_id=req-$$-docs .*kind=rag_ingest/
	    && $t =~ /msg="work finished" request_id=req-$$-docs /;
}), "the ingestion's lines in sluice work's log carry the request's id")
	or diag log_since($work_log, $woff);
is(mysql("SELECT request_id FROM work_queue WHERE kind = 'rag_ingest' AND ref_id = '$ds' ORDER BY id DESC LIMIT 1"),
   "req-$$-docs", 'the queue item keeps it');
ok(wait_dataset($ds, 60), 'the dataset is ready');

# The waiter answers long polls: nginx drops the worker's headers on the
# way there, so the waiter must say the id itself.
my $q = http(POST => "/dataset/$ds/question", { basic => demo_basic(),
	json => { question => 'What follows work?' } });
is($q->{status}, 200, 'question asked') or diag describe($q);
$res = http(GET => "/dataset/$ds/question/$q->{json}{question_id}?wait=10",
	{ basic => demo_basic(), headers => { 'X-Request-Id' => "req-$$-wait" } });
is($res->{status}, 200, 'the long poll answers');
is(rid($res), "req-$$-wait", 'a long poll carries it');

# A pipeline run asked for by a request.
my $p = http(POST => '/platform/pipeline', { token => $token, json => {
	name => "rid-$$", description => 'request ids', cron => undef,
	jobs => [ { input => { connector => 'jdbc', plugin => 'postgres', table_name => 'public.rid_none' },
		    output => { plugin => 'mariadb', raw => { table_name => 'rid_none', table_schema => 'raw' } } } ] } });
is($p->{status}, 201, 'set-up: a pipeline') or diag describe($p);
my $pid = $p->{json}{pipeline_id};
END { http(DELETE => "/platform/pipeline/$pid", { token => $token, headers => { customer_name => 'demo' } }) if $pid }
$woff = -s $work_log // 0;
$res = http(POST => '/platform/pipeline/execute', { token => $token,
	headers => { 'X-Request-Id' => "req-$$-run" },
	json => { pipeline_id => $pid, customer_id => env('SLUICE_DEMO_CUSTOMER_ID') } });
is($res->{status}, 200, 'executed') or diag describe($res);
ok(wait_until(60, sub { log_since($work_log, $woff) =~ /msg="run started" request_id=req-$$-run / }),
   "the run's lines in sluice work's log carry the request's id")
	or diag log_since($work_log, $woff);
ok(wait_until(60, sub {
	mysql("SELECT status FROM pipeline_runs WHERE pipeline_id = '$pid'") =~ /^(SUCCESS|FAILED)$/ }),
   'the run ends');

done_testing();
