#!/usr/bin/perl
# GET /platform/pipelines from the render cache (http/body_cache.h): the
# whole list is rendered once per state of its rows and then sent by nginx
# from a file, named by the versions of the rows (sql/015).
#
# - The cached answer is the worker's: ETag, X-Request-Id, the security
#   headers, JSON, no nginx tag, date or ranges; and it is the file (a
#   file changed by hand is what arrives, so the test sees the path taken).
# - It is never stale: after every kind of write, through the API and by
#   SQL as the runner or an operator writes (jobs, bookmarks, a rename that
#   differs only in letter case or a trailing space, which the tables'
#   collation calls equal), the whole list equals a page rendered afresh.
# - Under a writer renaming in a loop, readers never see an older name
#   after a newer one, and the last read is the last write.
# - Isolation: the internal location is not reachable, another customer
#   with this tag gets its own list.
# - A lost file is rendered again; files not used for 30 s are removed
#   when the next is stored, the one in use is kept.

use strict;
use warnings;

use File::Basename qw(dirname);
use Test::More;
use POSIX ();
use Time::HiRes qw(sleep);

use SluiceTest;
use RunnerFixture;
use TablesFixture qw(customer_with_token storage_root);

my ($cid, $token) = customer_with_token("cache-17-$$", 'PLATFORM.READ,PLATFORM.WRITE');
my ($other_id, $other) = customer_with_token("cache-17-other-$$", 'PLATFORM.READ,PLATFORM.WRITE');
my $CACHE = storage_root() . "/.render-cache";

sub list {
	my (%o) = @_;
	return http(GET => '/platform/pipelines', { token => $o{token} // $token,
		headers => $o{headers} // {} });
}

# The whole list must equal what a render from the rows gives now: a page
# of the same pipelines is never cached.
sub fresh_ok {
	my ($what) = @_;
	my $res = list();
	is($res->{status}, 200, "$what: 200") or diag describe($res);
	my $page = http(GET => '/platform/pipelines?page=1&limit=100', { token => $token });
	is($page->{status}, 200, "$what: a fresh page") or diag describe($page);
	is_deeply($res->{json}, $page->{json}{pipelines}, "$what: the list is the rows' state now")
		or diag explain [ $res->{json}, $page->{json}{pipelines} ];
	return $res;
}

# The cache file an answer came from (by its ETag), or undef.
sub cache_file {
	my ($res) = @_;
	my ($name) = (header($res, 'etag') // '') =~ /^"([0-9a-f]{32})"$/ or return undef;
	my @f = glob("$CACHE/*/$name");
	return @f == 1 ? $f[0] : undef;
}

# --- the cached answer ---------------------------------------------------------------

my $p1 = make_pipeline(token => $token, name => 'Nightly', cron => '0 3 * * *',
	jobs => [ tap_job(), jdbc_job(input => { plugin => 'mysql', table_name => 'shop.orders',
		load_type => 'incremental', incremental_column_name => 'updated_at',
		incremental_column_type => 'datetime' }) ]);
my $pid = $p1->{pipeline_id};
my @jobs = map { $_->{job_id} } @{ $p1->{jobs} };
my $first = fresh_ok('first list');
my $file = cache_file($first);
ok(defined $file, 'the render is kept as a file named by its ETag') or diag `ls -lR $CACHE 2>&1`;
my $bytes = do { local (@ARGV, $/) = $file; <> } if defined $file;
is($bytes, $first->{content}, 'the file holds the answer\'s bytes');
my $mode = (stat $file)[2] & 07777;
is($mode & 07, 0, 'the file is not readable by others');

my $rid = "cache-17-$$";
my $second = list(headers => { 'X-Request-Id' => $rid });
is($second->{status}, 200, 'the list again: 200') or diag describe($second);
is($second->{content}, $first->{content}, '... the same bytes');
is(header($second, 'etag'), header($first, 'etag'), '... the same ETag, sluice\'s');
is(header($second, 'x-request-id'), $rid, '... X-Request-Id, the request\'s');
like(header($second, 'content-type') // '', qr{^application/json}, '... JSON');
is(header($second, 'x-content-type-options'), 'nosniff', '... nosniff');
ok(defined header($second, 'strict-transport-security'), '... HSTS');
is(header($second, 'cache-control'), 'no-store', '... no-store');
is(header($second, 'last-modified'), undef, '... no Last-Modified of the file');
is(header($second, 'accept-ranges'), undef, '... no ranges offered');
is(header($second, 'content-length'), length $second->{content}, '... Content-Length');

my $ranged = list(headers => { Range => 'bytes=0-9' });
is($ranged->{status}, 200, 'a Range request gets the whole answer');
is($ranged->{content}, $first->{content}, '... every byte');
my $since = list(headers => { 'If-Modified-Since' => 'Fri, 01 Jan 2100 00:00:00 GMT' });
is($since->{status}, 200, 'If-Modified-Since decides nothing: 200');
my $nm = list(headers => { 'If-None-Match' => header($first, 'etag') });
is($nm->{status}, 304, 'If-None-Match with the tag: 304') or diag describe($nm);
is(header($nm, 'etag'), header($first, 'etag'), '... with the tag');

# The file is what nginx sends: change it by hand (same length) and it
# arrives; put it back.
SKIP: {
	skip 'no cache file', 2 unless defined $file;
	(my $marked = $bytes) =~ s/Nightly/NIGHTLX/;
	open my $fh, '>:raw', $file or die "$file: $!";
	print {$fh} $marked;
	close $fh;
	is(list()->{content}, $marked, 'an unchanged list is sent from the file');
	open $fh, '>:raw', $file or die "$file: $!";
	print {$fh} $bytes;
	close $fh;
	is(list()->{content}, $bytes, '... and the file restored');
}

# --- never stale -----------------------------------------------------------------------

my $tag = header($first, 'etag');
sub changed_ok {
	my ($what) = @_;
	my $res = fresh_ok($what);
	isnt(header($res, 'etag'), $tag, "$what: a new tag");
	$tag = header($res, 'etag');
	return $res->{json};
}

sub patch_ok {
	my ($body, $what) = @_;
	my $res = http(PATCH => "/platform/pipeline/$pid", { token => $token, json => $body });
	is($res->{status}, 200, "set-up: $what") or diag describe($res);
}

patch_ok({ name => 'NIGHTLY' }, 'rename in another letter case');
is(changed_ok('a rename in letter case only')->[0]{name}, 'NIGHTLY', '... shows it');
patch_ok({ name => 'NIGHTLY ' }, 'rename with a trailing space');
is(changed_ok('a rename adding a trailing space')->[0]{name}, 'NIGHTLY ', '... shows it');
patch_ok({ description => "d\x{e9}" }, 'describe');
changed_ok('a new description');
patch_ok({ cron => '5 4 * * *', cron_timezone => 'Europe/Paris' }, 'cron');
changed_ok('a new cron and time zone');
my $res = http(PUT => "/platform/jobs/$jobs[0]/memory", { token => $token,
	json => { amount => 512 } });
is($res->{status}, 200, 'set-up: job memory') or diag describe($res);
changed_ok('a job\'s memory');
$res = http(PATCH => "/platform/jobs/$jobs[1]/input", { token => $token,
	json => { incremental_column_value => '2024-01-31T23:59:59Z' } });
is($res->{status}, 200, 'set-up: a bookmark') or diag describe($res);
is(changed_ok('a bookmark through the API')->[0]{jobs}[1]{input}{incremental_column_value},
   '2024-01-31T23:59:59Z', '... shows it');

# What the runner and an operator write, by SQL.
mysql('UPDATE job_state SET incremental_column_value = \'2025-02-01\' WHERE job_id = ' . sq($jobs[1]));
is(changed_ok('a bookmark written by SQL')->[0]{jobs}[1]{input}{incremental_column_value},
   '2025-02-01', '... shows it');
mysql('UPDATE jobs SET job_status = \'FAILED\' WHERE id = ' . sq($jobs[0]));
is(changed_ok('a job status written by SQL')->[0]{jobs}[0]{job_status}, 'FAILED', '... shows it');
mysql('UPDATE pipelines SET last_status = \'SUCCESS\' WHERE id = ' . sq($pid));
changed_ok('a last_status written by SQL');
mysql('UPDATE job_state SET state = \'{"x": 1}\' WHERE job_id = ' . sq($jobs[0]));
is(header(fresh_ok('a Singer state (not shown)'), 'etag'), $tag, '... keeps the tag');
mysql('UPDATE pipelines SET next_run_at = UTC_TIMESTAMP(3) + INTERVAL 1 DAY WHERE id = ' . sq($pid));
is(header(fresh_ok('a schedule tick (not shown)'), 'etag'), $tag, '... keeps the tag');

# The state row removed and made again: new row, new name.
mysql('DELETE FROM job_state WHERE job_id = ' . sq($jobs[1]));
changed_ok('a bookmark row deleted');
mysql('INSERT INTO job_state (job_id, incremental_column_value) VALUES (' . sq($jobs[1]) . ', \'2025-02-01\')');
is(changed_ok('the same bookmark made again')->[0]{jobs}[1]{input}{incremental_column_value},
   '2025-02-01', '... shows it');
mysql('INSERT INTO jobs (id, pipeline_id, job_index, name, connector, input, output) '
      . 'VALUES (' . sq("${pid}_9") . ', ' . sq($pid) . ', 9, \'by hand\', \'jdbc\', '
      . '\'{"plugin": "mysql"}\', \'{"plugin": "mariadb"}\')');
is(scalar @{ changed_ok('a job inserted by hand')->[0]{jobs} }, 3, '... shows it');
mysql('DELETE FROM jobs WHERE id = ' . sq("${pid}_9"));
is(scalar @{ changed_ok('a job deleted by hand')->[0]{jobs} }, 2, '... shows it gone');

# A run moves the pipeline's status by itself (CREATED, RUNNING, then the
# outcome, written just after the run's own row), so it is compared once
# the pipeline and its jobs show the outcome: two reads while it runs may
# rightly differ.
my $run = execute_run($pid, token => $token, customer_id => $cid);
my $ended = wait_run($run, 120);
ok($ended, 'set-up: the run ended');
ok(wait_until(30, sub { mysql('SELECT COUNT(*) FROM jobs WHERE pipeline_id = ' . sq($pid)
	. " AND job_status IN ('CREATED', 'RUNNING')") == 0 && mysql('SELECT last_status FROM '
	. 'pipelines WHERE id = ' . sq($pid)) eq ($ended // {})->{status} }),
   'set-up: the pipeline and its jobs show the outcome');
is(changed_ok('the run ended')->[0]{last_status}, ($ended // {})->{status}, '... shows it');

my $p2 = make_pipeline(token => $token, name => 'second');
is(scalar @{ changed_ok('a create') }, 2, '... lists both');
$res = http(DELETE => "/platform/pipeline/$p2->{pipeline_id}", { token => $token,
	headers => { customer_name => "cache-17-$$" } });
is($res->{status}, 200, 'set-up: delete') or diag describe($res);
is(scalar @{ changed_ok('a delete') }, 1, '... lists one');

# --- readers racing a writer -----------------------------------------------------------

my $N = 40;
my $writer = fork // die "fork: $!";
if ($writer == 0) {
	for my $i (1 .. $N) {
		my $r = http(PATCH => "/platform/pipeline/$pid", { token => $token,
			json => { description => "v$i" } });
		exit 1 unless $r->{status} == 200;
	}
	exit 0;
}
my ($last, $backwards, $reads, $errors) = (0, 0, 0, 0);
while (1) {
	my $done = waitpid($writer, POSIX::WNOHANG()) == $writer;
	my $status = $?;
	my $r = list();
	$reads++;
	if ($r->{status} != 200 || ref $r->{json} ne 'ARRAY') {
		$errors++;
	} elsif ((my $d = $r->{json}[0]{description}) =~ /^v(\d+)$/) {
		$backwards++ if $1 < $last;
		$last = $1;
	}
	if ($done) {
		is($status, 0, 'the writer\'s PATCHes all answered 200');
		last;
	}
}
is($errors, 0, "$reads reads during $N writes: all 200 with a list");
is($backwards, 0, '... none older than one read before it');
is(list()->{json}[0]{description}, "v$N", 'after the writer: the last write');

# --- isolation ---------------------------------------------------------------------------

my $now = list();
my ($dir, $name) = (cache_file($now) // '') =~ m{([0-9a-f]{16})/([0-9a-f]{32})$};
ok($name, 'set-up: the current file');
for my $path ("/_sluice_render/$dir/$name", "/_protected_storage/.render-cache/$dir/$name") {
	my $r = http(GET => $path, { token => $token });
	is($r->{status}, 404, "$path from outside: 404");
	unlike($r->{content}, qr/NIGHTLY/, '... without the list');
}
my $theirs = list(token => $other, headers => { 'If-None-Match' => header($now, 'etag') });
is($theirs->{status}, 200, 'another customer with this tag: 200');
is_deeply($theirs->{json}, [], '... their own empty list');
isnt(header($theirs, 'etag'), header($now, 'etag'), '... under their own tag');

# --- lost files and pruning ------------------------------------------------------------------

unlink cache_file($now);
$res = list();
is($res->{status}, 200, 'the file removed by hand: 200');
is($res->{content}, $now->{content}, '... the same bytes, rendered again');
ok(defined cache_file($res), '... and kept again');

my $cur = cache_file($res);
my $stale = dirname($cur) . '/' . ('0' x 32);
open my $fh, '>', $stale or die "$stale: $!";
close $fh;
my $young = dirname($cur) . '/' . ('1' x 32);
open $fh, '>', $young or die "$young: $!";
close $fh;
my $old = time - 120;
utime $old, $old, $stale, $cur;
patch_ok({ description => 'pruned' }, 'a write');
my $next = fresh_ok('after the write');
ok(!-e $stale, 'a file unused for 120 s is removed when the next is stored');
ok(-e $young, 'a file used just now is kept');
ok(!-e $cur, 'the replaced list, unused for 120 s, too');
ok(defined cache_file($next), 'the new one is there');
unlink $young;

done_testing();
