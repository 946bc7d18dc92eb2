#!/usr/bin/perl
# What a client posting documents in batches costs the service:
#
# - Each request's documents are stored by multi-row INSERTs under
#   time-ordered (version 7) ids, so the documents' key grows at its end:
#   the ids a request answers are version 7, in the order the documents
#   were posted, and a later request's come after an earlier one's.
# - A batch posted while the dataset is being ingested queues a second
#   ingestion item; the running one takes that batch too (it goes round
#   when the dataset's generation moves), so the second finds the dataset
#   settled and stops without building the whole index again.  Here a
#   lease held elsewhere for a few seconds keeps the first item running
#   (waiting) while the second batch lands, so both items exist.
# - Every document of both batches ends up in the index, whatever the
#   order of the snippets' keys: the index is read in key order and put
#   in document order by sluice (the unit test of rindex_sort_rows covers
#   interleaved keys).
use strict;
use warnings;

use Test::More;

use SluiceTest;
use RagFixture;

my $v7 = qr/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
my $woff = work_log_offset();

my $ds = new_dataset('ingested once');
my $lease = "rag_ingest:$ds";
is(mysql("INSERT INTO work_leases (name, process_id, item_id, expires_at) VALUES "
	 . "('$lease', 'elsewhere.example:4242', 0, UTC_TIMESTAMP(3) + INTERVAL 3 SECOND)"), '',
   'another host holds the dataset\'s lease for 3 s');

# 150 documents: more than two INSERTs' worth (64 + 64 + 16 + 4 + 2).
my @first = map { { text => "First batch note $_ about a harbour crane number c$_.",
		    metadata => { n => $_ } } } 1 .. 150;
my $res = add_documents($ds, \@first);
is($res->{status}, 202, 'the first batch: 202');
my @ids = @{ $res->{json}{document_ids} // [] };
is(scalar @ids, 150, 'an id for each document');
is(scalar(grep { /$v7/ } @ids), 150, 'every id is a version 7 UUID');
is_deeply([ sort @ids ], \@ids, 'in the order the documents were posted');
is(mysql("SELECT COUNT(*) FROM rag_documents WHERE dataset_id = '$ds'"), 150, 'all stored');
my %meta_of = map { $_->[0] => $_->[1] }
	mysql("SELECT id, JSON_VALUE(metadata, '\$.n') FROM rag_documents WHERE dataset_id = '$ds'");
is(scalar(grep { ($meta_of{ $ids[$_] } // '') eq $_ + 1 } 0 .. $#ids), 150,
   'each id names the document posted in its place');

ok(wait_until(15, sub { mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'rag_ingest' "
	. "AND ref_id = '$ds' AND status = 'running'") == 1 }), 'the first item is running (waiting)');

my @second = map { { text => "Second batch note $_ about a river barge number b$_.",
		     metadata => { n => "b$_" } } } 1 .. 20;
$res = add_documents($ds, \@second);
is($res->{status}, 202, 'the second batch while it runs: 202');
my @later = @{ $res->{json}{document_ids} // [] };
is(scalar(grep { /$v7/ } @later), 20, 'version 7 ids again');
ok(@later && $later[0] gt $ids[-1], 'after the first batch\'s');
is(mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'rag_ingest' AND ref_id = '$ds'"), 2,
   'a second item is queued');

my $got = wait_dataset($ds, 60);
is($got->{status}, 'success', 'the dataset succeeds') or diag explain $got;
is($got->{document_count}, 170, 'with both batches');
ok(wait_until(30, sub { mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'rag_ingest' "
	. "AND ref_id = '$ds' AND status = 'done'") == 2 }), 'both items are done');

my $log = work_log_since($woff);
my @built = $log =~ /msg="dataset ingested"[^\n]* dataset=\Q$ds\E /g;
my @skipped = $log =~ /msg="dataset already ingested"[^\n]* dataset=\Q$ds\E/g;
is(scalar @built, 1, 'the index was built by one item') or diag $log;
is(scalar @skipped, 1, 'the other found the dataset settled');

# Both batches answer from the index.
for my $case ([ 'harbour crane number c150', 150 ], [ 'river barge number b20', 'b20' ]) {
	my ($q, $n) = @$case;
	my $a = answer($ds, { question => $q, top_n => 1 });
	is($a->{relevant_documents}[0]{metadata}{n}, $n, "'$q' finds document $n") or diag explain $a;
}

is(rag(DELETE => "/dataset/$ds")->{status}, 204, 'clean up');
done_testing();
