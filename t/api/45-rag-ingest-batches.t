#!/usr/bin/perl
# Ingestion stores documents in groups, one transaction each, and a
# group's snippets in multi-row INSERTs of at most 64 rows (sent as 64, 32,
# ..., 1 rows).  Documents are claimed 256 at a time from a (created_at, id)
# cursor, and a text longer than 64 KiB is read alone and stored as a group
# of its own.  Here one request holds documents on every side of those
# bounds: 300 one-snippet documents (past one claim), one of about 65
# snippets (64 + 1 rows) and one past 64 KiB of about 130 (64 + 64 + 2);
# a second request lands while they are ingested.  Every document must end
# `success` with its snippets at positions 0..n-1 exactly once, the counts
# must agree with the rows, and the last snippet of each long document
# must be found by a question (its row and embedding were stored).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;

use RagFixture;
use SluiceTest;

sub filler {
	my ($tag, $words) = @_;
	return join ' ', map { "$tag$_ grain harbour timber ledger" } 1 .. $words / 5;
}

my @short = map { { text => "Short note $_ on the cargo of ship$_.", metadata => { n => $_ } } }
	1 .. 300;
# About 700 characters a snippet (chunk_size 800, overlap 100).
my $mid = filler('mid', 7000) . ' the final words are violet quasar lantern';
my $long = filler('far', 14000) . ' the final words are amber glacier compass';
cmp_ok(length $mid, '<', 65536, 'the middle document is read with its claim');
cmp_ok(length $long, '>', 65536, 'the long document is read alone');

my $ds = new_dataset('ingest batches');
my $res = add_documents($ds, [ @short[0 .. 149], { text => $mid, metadata => { n => 'mid' } },
			       @short[150 .. 299], { text => $long, metadata => { n => 'long' } } ]);
is($res->{status}, 202, 'one request of 302 documents: 202');
my %id_of = (mid => $res->{json}{document_ids}[150], long => $res->{json}{document_ids}[301]);
$res = add_documents($ds, [ map { { text => "Later note $_ about rivers.", metadata => { n => "later$_" } } }
			    1 .. 20 ]);
is($res->{status}, 202, 'a second request while the first is ingested: 202');

my $got = wait_dataset($ds, 120);
is($got->{status}, 'success', 'the dataset succeeds') or diag explain $got;
is($got->{document_count}, 322, 'every document of both requests');
is($got->{progress}{documents_done}, 322, 'all done');
is(mysql("SELECT COUNT(*) FROM rag_documents WHERE dataset_id = '$ds' AND status <> 'success'"), 0,
   'no document left behind');
is($got->{snippet_count}, mysql("SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = '$ds'"),
   'snippet_count matches the rows');

# Positions 0..n-1, each once, for every document.
is(mysql("SELECT COUNT(*) FROM (SELECT document_id FROM rag_snippets WHERE dataset_id = '$ds' "
	 . "GROUP BY document_id HAVING MIN(position) <> 0 OR MAX(position) + 1 <> COUNT(*) "
	 . "OR COUNT(DISTINCT position) <> COUNT(*)) bad"), 0, 'positions are 0..n-1, each once');
is(mysql("SELECT COUNT(DISTINCT document_id) FROM rag_snippets WHERE dataset_id = '$ds'"), 322,
   'every document has snippets');
is(mysql("SELECT COUNT(*) FROM rag_snippets s JOIN rag_documents d ON d.id = s.document_id "
	 . "WHERE s.dataset_id = '$ds' AND d.metadata NOT LIKE '%mid%' AND d.metadata NOT LIKE '%long%'"),
   320, 'one snippet for each short document');
my %count;
for my $k (qw(mid long)) {
	$count{$k} = mysql("SELECT COUNT(*) FROM rag_snippets WHERE document_id = '$id_of{$k}'");
}
cmp_ok($count{mid}, '>', 64, "the middle document has more than one INSERT's rows ($count{mid})");
cmp_ok($count{long}, '>', 128, "the long document has more than two INSERTs' rows ($count{long})");
is(mysql("SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = '$ds' AND "
	 . "(JSON_VALUE(metadata, '\$.chunk') <> position OR "
	 . "JSON_VALUE(metadata, '\$.document_id') <> document_id)"), 0,
   "each snippet's metadata names its document and position");

# The last snippet of each long document, stored in an INSERT's short tail.
for my $case ([ mid => 'violet quasar lantern' ], [ long => 'amber glacier compass' ]) {
	my ($k, $q) = @$case;
	my $a = answer($ds, { question => $q, top_n => 1, metadata_filter => { n => $k } });
	my $top = $a->{relevant_documents}[0] // {};
	is($top->{metadata}{chunk}, $count{$k} - 1, "$k: its last snippet answers '$q'")
		or diag explain $a;
}

is(rag(DELETE => "/dataset/$ds")->{status}, 204, 'clean up');

# A first snippet without a word (a rule line): the index keeps no words
# for it, and building the documents' index from the snippets' words must
# not take that for a failure (it once failed the dataset, "out of memory").
my $rule = new_dataset('a rule line first');
is(add_documents($rule, [ { text => '-----' }, { text => '* * *' },
			  { text => 'The harbour master logs every cargo.' } ])->{status}, 202,
   'a rule line, a dinkus and a sentence: 202');
my $ruled = wait_dataset($rule, 60);
is($ruled->{status}, 'success', 'a dataset whose first snippets have no word succeeds')
	or diag explain $ruled;
is($ruled->{snippet_count}, 3, 'each of the three documents is a snippet');
my $found = answer($rule, { question => 'harbour master cargo', top_n => 1 });
like($found->{relevant_documents}[0]{page_content} // '', qr/harbour master/,
     'and a question finds the sentence') or diag explain $found;
is(rag(DELETE => "/dataset/$rule")->{status}, 204, 'clean up the rule line dataset');

# A dataset deleted while a group of its documents is being stored: both
# take the same rows, in other orders, so one of them may be told of a
# deadlock; it is tried again, never answered 500, and nothing of the
# dataset stays.  Five times, at a few points of the ingestion.
for my $round (1 .. 5) {
	my $gone = new_dataset("deleted mid-ingestion $round");
	is(add_documents($gone, [ @short ])->{status}, 202, "round $round: 300 documents: 202");
	wait_until(30, sub {
		mysql("SELECT COUNT(*) FROM rag_documents WHERE dataset_id = '$gone' "
		      . "AND status = 'success'") >= 10 * $round;
	});
	is(rag(DELETE => "/dataset/$gone")->{status}, 204, "round $round: deleted mid-ingestion: 204");
	is(mysql("SELECT (SELECT COUNT(*) FROM rag_documents WHERE dataset_id = '$gone') + "
		 . "(SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = '$gone')"), 0,
	   "round $round: no document or snippet of it stays");
}
done_testing();
