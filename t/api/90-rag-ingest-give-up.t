#!/usr/bin/perl
# Documents posted while an ingestion gives up are not lost.  An ingestion
# that failed its last attempt (the embeddings endpoint answering 503)
# marks the dataset's processing documents failed.  A client's POST landing
# just before that, in the moment between the attempt's end and the
# give-up, queued a new ingestion and set its documents processing; the
# give-up then failed them with the old reason, and the new ingestion found
# nothing to store and settled the dataset `success` with the new documents
# failed and never embedded.  Here the give-up is held open
# (rag_test_give_up_delay_ms), the endpoint recovers, a second document is
# posted in the pause: both documents must end `success` with their
# snippets, and the dataset too.  The same when the process doing the
# ingestion was killed on its last attempt, and the give-up is a run of its
# own.  A dataset with nothing posted meanwhile still fails, with the
# reason.
use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use EmbedStub;
use RagFixture;
use SluiceTest;

my $DIM = 16;
my $PAUSE_MS = 4000;
my $orig = conf_read();
my $stub = EmbedStub->start(dim => $DIM);
# Ingestion embeds through the stub, which answers 503 when told to, with
# no retry within an attempt; a give-up waits $PAUSE_MS.
my $with_stub = conf_with($orig,
	embedding_provider        => 'openai',
	embedding_dimensions      => $DIM,
	openai_base_url           => $stub->url,
	openai_model              => 'stub-embed-1',
	openai_max_retries        => 0,
	openai_timeout_ms         => 5000,
	rag_test_give_up_delay_ms => $PAUSE_MS,
);

END {
	local ($?, $@);
	$stub->stop if $stub;
	eval { reload_stack($orig) if conf_read() ne $orig; 1 }
		or print STDERR "# restoring the config failed: $@";
}

reload_stack($with_stub);

# The ingestion items of a dataset: [attempts, status] of each.
sub items {
	my ($ds) = @_;
	return mysql("SELECT attempts, status FROM work_queue WHERE kind = 'rag_ingest' "
		     . "AND ref_id = '$ds' ORDER BY id");
}

sub documents_of {
	my ($ds) = @_;
	my $res = rag(GET => "/dataset/$ds/documents?limit=100");
	is($res->{status}, 200, 'GET documents: 200') or diag describe($res);
	return { map { ($_->{metadata}{n} // '?') => $_ } @{ $res->{json}{documents} || [] } };
}

# --- a document posted while the give-up waits --------------------------------

$stub->control(fail_first => 1_000_000, fail_status => 503);
my $ds = new_dataset('give-up race');
my $woff = work_log_offset();
my $res = add_documents($ds, [ { text => 'The first document is about herons.',
				 metadata => { n => 'first' } } ]);
is($res->{status}, 202, 'the first document: 202') or diag describe($res);

# The last attempt has failed once the item says so and its error is the
# endpoint's; the give-up then waits $PAUSE_MS.
my $last_failed = wait_until(60, sub {
	my @it = items($ds);
	@it == 1 && $it[0][0] == 3 && $it[0][1] eq 'running'
		&& (rag(GET => "/dataset/$ds")->{json}{error} // '') =~ /attempt 2 of 3/
		&& work_log_since($woff) =~ /503/;
}, 0.05);
ok($last_failed, 'the third and last attempt runs, after two that failed');
# The third attempt's request fails at once; the pause follows it.
wait_until(10, sub { @{ $stub->requests } >= 3 }, 0.02);
sleep 0.5;
$stub->control();
$res = add_documents($ds, [ { text => 'The second document is about bison.',
			      metadata => { n => 'second' } } ]);
is($res->{status}, 202, 'a second document posted during the give-up: 202')
	or diag describe($res);

my $body = wait_dataset($ds, 60);
is($body->{status}, 'success', 'the dataset ends success') or diag json_encode($body);
my $docs = documents_of($ds);
for my $n (qw(first second)) {
	is($docs->{$n}{status}, 'success', "the $n document is stored")
		or diag json_encode($docs->{$n});
	is($docs->{$n}{snippet_count}, 1, "the $n document has its snippet");
}
is($body->{snippet_count}, 2, 'the dataset counts both snippets');
like(work_log_since($woff), qr/msg="ingestion not given up: a newer one is queued" [^\n]*dataset=\Q$ds\E/,
     'the work log says the give-up was left to the newer ingestion');
my $hit = eval { answer($ds, { question => 'bison' }) } || {};
like(($hit->{relevant_documents} || [])->[0]{page_content} // '', qr/bison/,
     'a question finds the second document');

# --- the same when the process died on its last attempt ------------------------
# Killed three times, the item waits in the queue only to give up; a POST
# then must queue an ingestion of its own rather than take that item for
# one, and the give-up must leave the dataset to it.

reload_stack(conf_with($orig,
	rag_test_give_up_delay_ms => $PAUSE_MS,
	rag_test_ingest_delay_ms  => 1500,
));
my $ds3 = new_dataset('give-up after kills');
$woff = work_log_offset();
$res = add_documents($ds3, [ { text => 'The first document is about larks.',
			       metadata => { n => 'first' } } ]);
is($res->{status}, 202, 'a document whose ingestion is killed three times: 202');
for my $attempt (1 .. 3) {
	my $pid;
	wait_until(30, sub {
		($pid) = work_log_since($woff) =~
			/msg="work started" [^\n]*ref=\Q$ds3\E [^\n]*attempt=$attempt child=(\d+)\n/;
		$pid;
	}, 0.05);
	ok($pid && kill('KILL', $pid), "attempt ${attempt}'s child killed")
		or diag work_log_since($woff);
}
my $give_up = wait_until(30, sub {
	work_log_since($woff) =~ /msg="work started" [^\n]*ref=\Q$ds3\E [^\n]* give_up=1/;
}, 0.05);
ok($give_up, 'the item is run once more, to give up');
sleep 0.5;
$res = add_documents($ds3, [ { text => 'The second document is about moles.',
			       metadata => { n => 'second' } } ]);
is($res->{status}, 202, 'a second document posted during the give-up: 202');
$body = wait_dataset($ds3, 60);
is($body->{status}, 'success', 'the dataset ends success') or diag json_encode($body);
$docs = documents_of($ds3);
is($docs->{$_}{status}, 'success', "the $_ document is stored") for qw(first second);
is($body->{snippet_count}, 2, 'the dataset counts both snippets');
reload_stack($with_stub);

# --- nothing posted meanwhile: the dataset fails -------------------------------

$stub->control(fail_first => 1_000_000, fail_status => 503);
my $ds2 = new_dataset('give-up alone');
$res = add_documents($ds2, [ { text => 'Nobody will embed this.', metadata => { n => 'only' } } ]);
is($res->{status}, 202, 'a document on its own: 202');
$body = wait_dataset($ds2, 60);
is($body->{status}, 'failed', 'with the endpoint down and nothing else posted, the dataset fails');
like($body->{error} // '', qr/503/, 'with the endpoint\'s answer as the reason');
is(documents_of($ds2)->{only}{status}, 'failed', 'and so does its document');
$stub->control();

done_testing();
