#!/usr/bin/perl
# Documents posted in two batches, as anyone must under the 1 MiB JSON
# limit: the first ingestion item takes every processing document,
# including the second batch; the second item then finds the dataset
# already `success` with the same counts.  Its UPDATE changes no row, and
# an ingestion that took "no row changed" for "documents arrived
# meanwhile" went round forever, stopping all background work.  Here: the
# dataset succeeds, both items finish, and the upload queued behind them
# (another route, another customer's kind of work) is inferred in time.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use Time::HiRes qw(time);

use RagFixture;
use RunnerFixture qw(with_work_conf);
use SluiceTest;
use StorageTest qw(upload);

sub docs {
	my ($from, $to) = @_;
	return [ map { { text => "Document $_ is about the river Nile and its delta.",
			 metadata => { source => "doc$_.txt" } } } $from .. $to ];
}

sub ingest_items {
	my ($ds) = @_;
	return mysql("SELECT id, status FROM work_queue WHERE kind = 'rag_ingest' "
		     . "AND ref_id = '$ds' ORDER BY id");
}

# Each document takes a moment, so the second batch surely lands while the
# first item is still running.
with_work_conf(rag_test_ingest_delay_ms => 15);

my $ds = new_dataset('two batches');
is(add_documents($ds, docs(1, 200))->{status}, 202, 'first batch: 202');
ok(wait_until(30, sub { grep { $_->[1] eq 'running' } ingest_items($ds) }),
   'the first ingestion item is running');
is(add_documents($ds, docs(201, 260))->{status}, 202, 'second batch while it runs: 202');
my @items = ingest_items($ds);
is(scalar @items, 2, 'the second batch queued a second item');

my $got = wait_dataset($ds, 60);
is($got->{status}, 'success', 'the dataset succeeds');
is($got->{document_count}, 260, 'with every document of both batches');
ok(wait_until(30, sub { !grep { $_->[1] ne 'done' } ingest_items($ds) }),
   'both ingestion items are done: the second one did not go round forever')
	or diag explain [ ingest_items($ds) ];

# Work of another route, queued after them, runs within 60 s.
my $tok = token(permissions => 'STORAGE_EXPLORER.READ,STORAGE_EXPLORER.WRITE');
my $t0 = time;
my $up = upload($tok, 'after-batches', [ 'later.csv', "id,name\n1,a\n2,b\n" ]);
is($up->{status}, 201, 'an upload after them: 201');
my $dsid = $up->{json}{files}[0]{dataset_id};
my $inferred = StorageTest::wait_dataset($tok, $dsid, 60);
is($inferred->{status}, 'ready', 'its schema is inferred');
cmp_ok(time - $t0, '<', 60, 'within 60 s');

# A third batch after success goes through the same path again.
is(add_documents($ds, docs(261, 270))->{status}, 202, 'a third batch: 202');
$got = wait_dataset($ds, 60);
is($got->{status}, 'success', 'success again');
is($got->{document_count}, 270, 'with the third batch');

done_testing;
