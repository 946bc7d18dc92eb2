#!/usr/bin/perl
# embedding_provider = openai against a local stub (t/lib/EmbedStub.pm):
# ingestion stores the endpoint's vectors and questions are answered with
# them; requests carry at most openai_batch_size inputs; 500 and 429
# (with Retry-After) are retried; failure after openai_max_retries, a
# wrong dimension, a malformed or an oversized answer fails the dataset
# with a reason; the API key goes out as a Bearer token and appears in no
# log, response or table.

use strict;
use warnings;

use File::Temp qw(tempdir);
use List::Util qw(max sum);
use Test::More;
use Time::HiRes qw(time);

use EmbedStub;
use SluiceTest;

my $DIM = 32;
my $BATCH = 4;
my $RETRIES = 2;
my $basic = env('SLUICE_DEMO_BASIC');
my $orig = conf_read();
my $dirty = 0;
my $keydir = tempdir(CLEANUP => 1);
my $key = 'sk-stub-' . join '', map { sprintf '%02x', int rand 256 } 1 .. 16;
my $keyfile = "$keydir/openai.key";
my @logs = map { env('SLUICE_VAR') . "/log/$_" }
	qw(serve.log work.log nginx-error.log);
my %log_start = map { $_ => (-s $_ // 0) } @logs;
my $stub = EmbedStub->start(dim => $DIM);

# Whatever happens, the stack ends with its own config loaded.
END {
	local ($?, $@);
	$stub->stop if $stub;
	eval {
		reload_stack($orig) if $dirty || conf_read() ne $orig;
		1;
	} or print STDERR "# restoring the config failed: $@";
}

open my $kfh, '>', $keyfile or die "$keyfile: $!";
print {$kfh} "$key\n";
close $kfh;
chmod 0600, $keyfile;

$dirty = 1;
reload_stack(conf_with($orig,
	embedding_provider   => 'openai',
	embedding_dimensions => $DIM,
	openai_base_url      => $stub->url,
	openai_model         => 'stub-embed-1',
	openai_api_key_file  => $keyfile,
	openai_batch_size    => $BATCH,
	openai_max_retries   => $RETRIES,
	openai_timeout_ms    => 5000,
	# small snippets, so one document makes several and fills a batch
	chunk_size           => 120,
	chunk_overlap        => 10,
));
pass('serve reloaded and work restarted with embedding_provider = openai');

my @seen;    # every response body, searched for the key at the end

sub api {
	my ($method, $path, $json) = @_;
	my $r = http($method => $path, { basic => $basic,
		defined $json ? (json => $json) : () });
	push @seen, $r->{content};
	return $r;
}

# A dataset with these documents; its id after the ingestion ended, with
# the final GET /dataset/{id} answer.
sub ingest {
	my ($name, @texts) = @_;
	my $r = api(POST => '/dataset', { name => $name });
	is($r->{status}, 201, "$name: created") or diag describe($r);
	my $id = $r->{json}{dataset_id} // return;
	$r = api(POST => "/dataset/$id/documents", { documents => [
		map { { text => $texts[$_], metadata => { n => $_ } } } 0 .. $#texts ] });
	like($r->{status}, qr/^20[012]$/, "$name: documents accepted") or diag describe($r);
	my $last;
	wait_until(60, sub {
		$last = api(GET => "/dataset/$id");
		($last->{json}{status} // 'processing') ne 'processing';
	}, 0.2) or diag "$name: still processing: " . describe($last);
	return ($id, $last);
}

# The ingestion's work rows once none is pending: the number of attempts
# `sluice work` made (the queue may run a failed ingestion again).
sub ingest_attempts {
	my ($id) = @_;
	wait_until(60, sub {
		mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'rag_ingest' "
		      . "AND ref_id = '$id' AND finished_at IS NULL") == 0;
	}, 0.2) or diag "the ingestion of $id is still queued";
	return mysql("SELECT COALESCE(SUM(attempts), 0) FROM work_queue "
		     . "WHERE kind = 'rag_ingest' AND ref_id = '$id'");
}

sub reason_of {
	my ($res) = @_;
	my $j = $res->{json} || {};
	return $j->{error} // $j->{reason} // $j->{status_reason} // '';
}

sub dot {
	my ($a, $b) = @_;
	return sum(map { $a->[$_] * $b->[$_] } 0 .. $#$a);
}

# --- ingestion and a question through the stub ---------------------------------

my @animals = qw(zebra giraffe walrus pelican otter badger lynx heron bison marmot);
my @docs = map {
	my $a = $animals[$_];
	"The $a notes, part $_.\n\n"
	. join(' ', map { "The $a was seen on day $_ of the survey." } 1 .. 12)
	. "\n\nNothing else is written about the $a here."
} 0 .. $#animals;

my $mark = @{ $stub->requests };
my ($ds, $res) = ingest('stub-ok', @docs);
is($res->{json}{status}, 'success', 'ingestion through the stub succeeds')
	or diag describe($res);

my @reqs = @{ $stub->requests($mark) };
my @ok = grep { $_->{status} == 200 } @reqs;
cmp_ok(scalar @ok, '>=', 10, 'the snippets took several requests');
cmp_ok(max(map { $_->{inputs} // 0 } @reqs), '<=', $BATCH,
       "no request has more than openai_batch_size = $BATCH inputs");
ok((grep { ($_->{inputs} // 0) == $BATCH } @reqs), 'full batches are used');
is(sum(map { $_->{inputs} } @ok), $res->{json}{snippet_count},
   'one input per snippet') if defined $res->{json}{snippet_count};
is(scalar(grep { ($_->{auth} // '') ne "Bearer $key" } @reqs), 0,
   'every request carries the key as a Bearer token');
is(scalar(grep { ($_->{model} // '') ne 'stub-embed-1' } @reqs), 0,
   'every request names openai_model');
is(scalar(grep { ($_->{ctype} // '') !~ m{^application/json} } @reqs), 0,
   'JSON bodies');

# The stored vectors are the stub's: float32 little-endian rows.
my @rows = mysql("SELECT HEX(embedding), HEX(page_content) FROM rag_snippets "
	. "WHERE dataset_id = '$ds' ORDER BY document_id, position");
$_->[1] = pack 'H*', $_->[1] for @rows;
cmp_ok(scalar @rows, '>=', scalar @docs, 'snippets stored');
my $bad = 0;
for my $row (@rows) {
	my @got = unpack 'f<*', pack 'H*', $row->[0];
	my $want = EmbedStub::embed($row->[1], $DIM);
	$bad++ if @got != $DIM || grep { abs($got[$_] - $want->[$_]) > 1e-5 } 0 .. $#got;
}
is($bad, 0, "every stored embedding is the stub's vector of its snippet ($DIM floats)");

# A question is embedded by the same endpoint and finds the right document.
$mark = @{ $stub->requests };
$res = api(POST => "/dataset/$ds/question", {
	question => 'what is written about the walrus', distance_metric => 'cos',
	hybrid => JSON::PP::false, maximal_marginal_relevance => JSON::PP::false,
	top_n => 1 });
is($res->{status}, 200, 'question accepted') or diag describe($res);
my $qid = $res->{json}{question_id} // '';
$res = api(GET => "/dataset/$ds/question/$qid?wait=20");
is($res->{json}{status}, 'success', 'question answered') or diag describe($res);
my $top = ($res->{json}{relevant_documents} || [])->[0] || {};
like($top->{page_content} // '', qr/walrus/, 'the walrus document comes first');
my $q = EmbedStub::embed('what is written about the walrus', $DIM);
my $s = EmbedStub::embed($top->{page_content} // '', $DIM);
ok(abs(($top->{score} // 99) - dot($q, $s)) < 1e-4,
   'its cos score is that of the stub vectors')
	or diag "score $top->{score}, expected " . dot($q, $s);
ok((grep { ($_->{first} // '') =~ /walrus/ && $_->{inputs} == 1 }
    @{ $stub->requests($mark) }), 'the question went to the stub');

# --- retries -------------------------------------------------------------------------

$stub->control(fail_first => 2, fail_status => 500);
$mark = @{ $stub->requests };
($ds, $res) = ingest('stub-500', 'first document about herons', 'second about bison');
is($res->{json}{status}, 'success', 'two 500 answers, then success') or diag describe($res);
my @st = map { $_->{status} } @{ $stub->requests($mark) };
is_deeply([ @st[0 .. 2] ], [ 500, 500, 200 ], 'retried after each 500');

$stub->control(fail_first => 1, fail_status => 429, retry_after => 1);
$mark = @{ $stub->requests };
($ds, $res) = ingest('stub-429', 'a document about otters');
is($res->{json}{status}, 'success', 'a 429, then success') or diag describe($res);
@reqs = @{ $stub->requests($mark) };
is_deeply([ map { $_->{status} } @reqs[0, 1] ], [ 429, 200 ], 'retried after the 429');
cmp_ok(($reqs[1]{t} // 0) - ($reqs[0]{t} // 0), '>=', 0.9, 'Retry-After: 1 was honoured');

# --- failures -------------------------------------------------------------------------

$stub->control(fail_first => 1000, fail_status => 503);
$mark = @{ $stub->requests };
($ds, $res) = ingest('stub-down', 'nobody will embed this');
is($res->{json}{status}, 'failed', 'endless 503: the dataset fails');
like(reason_of($res), qr/embedding.*503/i, 'with a reason naming the answer')
	or diag describe($res);
my $attempts = ingest_attempts($ds);
cmp_ok($attempts, '>=', 1, "ingestion attempts: $attempts");
is(scalar @{ $stub->requests($mark) }, $attempts * ($RETRIES + 1),
   "openai_max_retries = $RETRIES: three requests per ingestion attempt");
$res = api(POST => "/dataset/$ds/question", { question => 'anything' });
is($res->{status}, 422, 'a failed dataset refuses questions') or diag describe($res);

$stub->control(wrong_dim => 1);
$mark = @{ $stub->requests };
($ds, $res) = ingest('stub-dim', 'a document of the wrong size');
is($res->{json}{status}, 'failed', 'a wrong dimension fails the dataset');
like(reason_of($res), qr/expected $DIM/, 'naming the dimension') or diag describe($res);
$attempts = ingest_attempts($ds);
is(scalar @{ $stub->requests($mark) }, $attempts,
   'a malformed answer is not retried: one request per ingestion attempt');

$stub->control(garbage => 1);
($ds, $res) = ingest('stub-garbage', 'a document answered with garbage');
is($res->{json}{status}, 'failed', 'a truncated JSON answer fails the dataset');
like(reason_of($res), qr/not valid JSON/, 'saying so') or diag describe($res);

# The limit is 1 MiB plus 48 bytes per expected value: 2 MiB is over it.
$stub->control(pad => 2 * 1024 * 1024);
$mark = @{ $stub->requests };
($ds, $res) = ingest('stub-huge', 'a document answered at length');
is($res->{json}{status}, 'failed', 'an oversized answer fails the dataset');
like(reason_of($res), qr/larger than \d+ bytes/, 'naming the limit') or diag describe($res);
$attempts = ingest_attempts($ds);
is(scalar @{ $stub->requests($mark) }, $attempts, 'and is not retried');

# A group whose embedding fails after a group stored.  Ingestion embeds a
# group (at most 256 documents) while it stores the one before; here the
# first 256 documents make the first group and the next 44 the second,
# with one the stub will not embed.  The first group must stay stored,
# and be embedded once only: a failure that threw it away would have
# every later attempt embed it again.
$stub->control(wrong_dim_on => 'unembeddable');
$mark = @{ $stub->requests };
my @texts = ((map { "kept document $_" } 0 .. 255),
	     (map { $_ == 280 ? 'an unembeddable document' : "late document $_" } 256 .. 299));
($ds, $res) = ingest('stub-second-group', @texts);
is($res->{json}{status}, 'failed', 'a failing second group fails the dataset')
	or diag describe($res);
like(reason_of($res), qr/expected $DIM/, 'with the reason') or diag describe($res);
my %by = map { $_->[0] => $_->[1] } mysql("SELECT status, COUNT(*) FROM rag_documents "
	. "WHERE dataset_id = '$ds' GROUP BY status");
is($by{success} // 0, 256, 'the first group is stored: 256 documents success');
is($by{failed} // 0, 44, 'the second group failed: 44 documents');
is(mysql("SELECT COUNT(*) FROM rag_snippets s JOIN rag_documents d ON d.id = s.document_id "
	 . "WHERE d.dataset_id = '$ds' AND d.status = 'success'"), 256,
   'with a snippet each');
is(mysql("SELECT COUNT(*) FROM rag_snippets s JOIN rag_documents d ON d.id = s.document_id "
	 . "WHERE d.dataset_id = '$ds' AND d.status = 'failed'"), 0,
   'and none of the failed group');
@reqs = @{ $stub->requests($mark) };
is(sum(0, map { $_->{inputs} } grep { ($_->{first} // '') =~ /^kept / } @reqs), 256,
   'each document of the first group was embedded once');
cmp_ok(ingest_attempts($ds), '>=', 1, 'the ingestion ran');
$stub->control();

# --- the key stays secret -----------------------------------------------------------

my $leaks = 0;
for my $f (@logs) {
	open my $fh, '<:raw', $f or next;
	seek $fh, $log_start{$f}, 0;
	local $/;
	my $text = <$fh> // '';
	if (index($text, $key) >= 0) {
		$leaks++;
		diag "the key is in $f";
	}
}
is($leaks, 0, 'the key is in no log (the stub echoed it in its error answers)');
ok(!grep({ index($_ // '', $key) >= 0 } @seen), 'nor in any response');
is(scalar(mysql("SELECT COUNT(*) FROM rag_datasets WHERE error LIKE '%$key%'")), 0,
   'nor in a stored reason');

done_testing();
