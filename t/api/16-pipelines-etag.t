#!/usr/bin/perl
# ETag and If-None-Match on GET /platform/pipelines and GET
# /platform/pipeline/{id}: a strong tag, the same for the same bytes; 304
# with the tag, X-Request-Id and the security headers and no body, answered
# by the worker itself; the list, "*" and weak forms; every write that
# changes the answer (create, PATCH, delete, a run finishing) makes the old
# tag get the new 200, a write that changes nothing the list shows (pause)
# leaves the list's tag alone but not the detail's; another customer
# sending this one's tag gets their own 200; a list of 160 KB (written to
# the connection in several FastCGI records) arrives byte for byte.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use RunnerFixture;

sub customer {
	my ($name) = @_;
	my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', $name, '--if-missing',
			  '-c', env('SLUICE_CONF') ]);
	is($r->{exit}, 0, "set-up: customer $name") or diag $r->{err};
	(my $id = $r->{out}) =~ s/\s+\z//;
	return ($id, token(customer => $name, permissions => 'PLATFORM.READ,PLATFORM.WRITE'));
}

my ($cid, $token) = customer("etag-16-$$");
my ($other_id, $other) = customer("etag-16-other-$$");
my $TAG = qr/^"[0-9a-f]{32}"$/;

sub get {
	my ($path, $inm, $tok) = @_;
	return http(GET => $path, { token => $tok // $token,
		headers => defined $inm ? { 'If-None-Match' => $inm } : {} });
}

# A 200 with a tag: the tag.
sub full {
	my ($res, $what) = @_;
	is($res->{status}, 200, "$what: 200") or diag describe($res);
	like(header($res, 'etag') // '', $TAG, "$what: a strong ETag");
	return header($res, 'etag') // '';
}

sub not_modified {
	my ($res, $tag, $what) = @_;
	is($res->{status}, 304, "$what: 304") or diag describe($res);
	is(header($res, 'etag'), $tag, "$what: the same ETag");
	is($res->{content}, '', "$what: no body");
	ok(defined header($res, 'x-request-id'), "$what: X-Request-Id");
	is(header($res, 'x-content-type-options'), 'nosniff', "$what: the security headers");
	ok(defined header($res, 'strict-transport-security'), "$what: HSTS");
}

sub tag_is_stale {
	my ($path, $old, $what) = @_;
	my $res = get($path, $old);
	my $tag = full($res, "$what: the old tag");
	isnt($tag, $old, "$what: a new tag");
	is_deeply($res->{json}, get($path)->{json}, "$what: the new body");
	return ($tag, $res->{json});
}

# --- a tag, stable ------------------------------------------------------------------

my $p1 = make_pipeline(token => $token, name => 'etag one', cron => '0 3 * * *');
my $first = get('/platform/pipelines');
my $tag = full($first, 'list');
my $again = get('/platform/pipelines');
is(full($again, 'list again'), $tag, 'the same tag for the same list');
is($again->{content}, $first->{content}, '... and the same bytes');
is(scalar @{ $first->{json} }, 1, 'the list holds the customer\'s one pipeline');

# --- 304 in every form --------------------------------------------------------------

my $off = serve_log_offset();
my $rid = "etag-$$";
my $res = http(GET => '/platform/pipelines', { token => $token,
	headers => { 'If-None-Match' => $tag, 'X-Request-Id' => $rid } });
not_modified($res, $tag, 'If-None-Match with the tag');
is(header($res, 'x-request-id'), $rid, 'the 304 names the request');
ok(wait_until(10, sub { serve_log_since($off) =~
	/msg=request request_id=\Q$rid\E method=GET path=\/platform\/pipelines status=304 / }),
   'the worker answered 304 itself (its log line)');

not_modified(get('/platform/pipelines', "W/$tag"), $tag, 'the weak form');
not_modified(get('/platform/pipelines', qq{"nope", W/"x" ,$tag}), $tag, 'a list containing it');
not_modified(get('/platform/pipelines', '*'), $tag, '"*"');
full(get('/platform/pipelines', '"00000000000000000000000000000000"'), 'another tag');
full(get('/platform/pipelines', substr($tag, 0, -2) . '"'), 'the tag one digit short');
full(get('/platform/pipelines', substr($tag, 1, -1)), 'the tag unquoted');
full(get('/platform/pipelines', "*, $tag"), 'a malformed list');

my $page = get('/platform/pipelines?page=1&limit=5');
my $page_tag = full($page, 'one page');
isnt($page_tag, $tag, 'the page has its own tag (other bytes)');
not_modified(get('/platform/pipelines?page=1&limit=5', $page_tag), $page_tag, 'the page with its tag');
full(get('/platform/pipelines?page=1&limit=5', $tag), 'the page with the whole list\'s tag');

# --- another customer ---------------------------------------------------------------

$res = get('/platform/pipelines', $tag, $other);
is(full($res, 'another customer with this tag'), header(get('/platform/pipelines', undef, $other), 'etag'),
   '... gets their own tag');
is_deeply($res->{json}, [], '... and their own (empty) list');

# --- each write that changes the list -----------------------------------------------

my $p2 = make_pipeline(token => $token, name => 'etag two', cron => '0 4 * * *');
($tag, my $list) = tag_is_stale('/platform/pipelines', $tag, 'after a create');
is_deeply([ map { $_->{pipeline_id} } @$list ], [ $p1->{pipeline_id}, $p2->{pipeline_id} ],
	  'the new list has both');

my $detail = "/platform/pipeline/$p1->{pipeline_id}";
my $dtag = full(get($detail), 'detail');
not_modified(get($detail, $dtag), $dtag, 'detail with its tag');

$res = http(PATCH => $detail, { token => $token, json => { name => 'etag renamed' } });
is($res->{status}, 200, 'PATCH name') or diag describe($res);
($tag, $list) = tag_is_stale('/platform/pipelines', $tag, 'after a PATCH');
is($list->[0]{name}, 'etag renamed', 'the new list has the new name');
($dtag) = tag_is_stale($detail, $dtag, 'detail after a PATCH');

$res = http(POST => '/platform/pipeline/pause', { token => $token,
	json => { customer_id => $cid, pipeline_id => $p1->{pipeline_id} } });
is($res->{status}, 200, 'pause') or diag describe($res);
not_modified(get('/platform/pipelines', $tag), $tag,
	     'after a pause: the list (which does not show paused) is the same bytes');
($dtag, my $d) = tag_is_stale($detail, $dtag, 'detail after a pause');
is($d->{paused}, JSON::PP::true, 'the new detail says paused');

$res = http(POST => '/platform/pipeline/resume', { token => $token,
	json => { customer_id => $cid, pipeline_id => $p1->{pipeline_id} } });
is($res->{status}, 200, 'resume') or diag describe($res);
($dtag, $d) = tag_is_stale($detail, $dtag, 'detail after a resume');
is($d->{paused}, JSON::PP::false, 'the new detail says not paused');

my $run = execute_run($p2->{pipeline_id}, token => $token, customer_id => $cid);
my $row = wait_run($run, 90);
ok($row, 'the run finished') or diag explain [ log_messages($run) ];
($tag, $list) = tag_is_stale('/platform/pipelines', $tag, 'after a run finished');
is($list->[1]{last_status}, $row->{status}, 'the new list has the run\'s last_status');

$res = http(DELETE => "/platform/pipeline/$p2->{pipeline_id}", { token => $token,
	headers => { customer_name => "etag-16-$$" } });
is($res->{status}, 200, 'delete') or diag describe($res);
($tag, $list) = tag_is_stale('/platform/pipelines', $tag, 'after a delete');
is_deeply([ map { $_->{pipeline_id} } @$list ], [ $p1->{pipeline_id} ], 'the new list lost it');

# --- another customer's pipeline by id: 404 whatever the tag -------------------------

$res = get($detail, $dtag, $other);
is($res->{status}, 404, 'another customer\'s pipeline with its tag: 404') or diag describe($res);
ok(!defined header($res, 'etag'), '... and no tag');

# --- a list bigger than two FastCGI records ------------------------------------------
# Answers this big go to the connection without libfcgi's buffer, in records
# of 65,528 bytes: every byte must arrive, also where a record ends inside a
# multi-byte character or an escape.

my ($big_id, $big) = customer("etag-16-big-$$");
my @want;
for my $i (0 .. 35) {
	my $d = "big $i \x{e9}\x{20ac}\"\\\x01 " . ('x' x ($i % 7)) . ("\x{e9}ab\x{1f600}" x 440);
	$d = substr($d, 0, 1900);            # under 4,096 bytes
	push @want, $d;
	my $r = http(POST => '/platform/pipeline', { token => $big, json => { name => "big $i",
		description => $d, cron => undef, jobs => [ tap_job() ] } });
	is($r->{status}, 201, "set-up: big pipeline $i") or diag describe($r);
}
$res = get('/platform/pipelines', undef, $big);
my $big_tag = full($res, 'the big list');
cmp_ok(length $res->{content}, '>', 2 * 65528, 'the list spans three records');
is(header($res, 'content-length'), length $res->{content}, 'Content-Length is what arrived');
is_deeply([ map { $_->{description} } @{ $res->{json} || [] } ], \@want,
	  'every description arrived intact');
not_modified(get('/platform/pipelines', $big_tag, $big), $big_tag, 'the big list with its tag');

done_testing();
