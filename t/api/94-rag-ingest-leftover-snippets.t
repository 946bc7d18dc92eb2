#!/usr/bin/perl
# An ingestion inserts a group's snippets without deleting first: a
# processing document has none, since snippets are stored only in the
# transaction that marks their document success (src/retrieval/ingest.c).
# Snippets there anyway (something else wrote them) must not survive
# beside the new ones, nor fail the ingestion: the insert hits the unique
# (document_id, position), and the group runs again deleting them first.
# The set-up writes such a document and its leftover snippet by SQL.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;

use RagFixture;
use SluiceTest;

my $ds = ready_dataset([ { text => 'The harbour ledger lists timber and cargo.', metadata => {} } ],
		       name => "leftover-$$");
my $dim = mysql('SELECT dimensions FROM rag_datasets WHERE id = ' . sq($ds));
like($dim, qr/^\d+$/, 'the dataset has its dimensions');
my $off = work_log_offset();
ok(!grep({ /had snippets; replacing them/ } work_log_since(0)),
   'no ingestion so far went the replacing way');

# A processing document with a snippet at position 0, as no ingestion of
# sluice leaves one.
my $doc = mysql('SELECT UUID()');
my $stale = mysql('SELECT UUID()');
mysql('INSERT INTO rag_documents (id, dataset_id, text, status) VALUES ('
      . join(', ', map { sq($_) } $doc, $ds, 'Lighthouse keepers log the tides every night.',
	     'processing') . ')');
mysql('INSERT INTO rag_snippets (id, dataset_id, document_id, position, page_content, '
      . 'embedding, norm) VALUES (' . join(', ', map { sq($_) } $stale, $ds, $doc) . ', 0, '
      . sq('a leftover that must go') . ", UNHEX(REPEAT('00', $dim * 4)), 0)");
is(mysql('SELECT COUNT(*) FROM rag_snippets WHERE document_id = ' . sq($doc)), 1,
   'set-up: the leftover snippet is there');

# A second batch starts an ingestion, which claims both documents.
my $res = add_documents($ds, [ { text => 'Fishermen mend their nets at dawn.', metadata => {} } ]);
is($res->{status}, 202, 'a second batch is accepted');
my $body = wait_dataset($ds, 60);
is($body->{status}, 'success', 'the dataset is ingested') or diag explain $body;
is($body->{document_count}, 3, 'with all three documents');
is(mysql('SELECT status FROM rag_documents WHERE id = ' . sq($doc)), 'success',
   'the document that had a snippet is success');
is(mysql('SELECT COUNT(*) FROM rag_snippets WHERE id = ' . sq($stale)), 0,
   'its leftover snippet is gone');
is(mysql('SELECT page_content FROM rag_snippets WHERE document_id = ' . sq($doc)
	 . ' ORDER BY position'), 'Lighthouse keepers log the tides every night.',
   'its one snippet is its text');
is($body->{snippet_count}, mysql('SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = ' . sq($ds)),
   'the snippet count is the rows\'');
is(scalar(grep { /had snippets; replacing them/ && /dataset=\Q$ds\E/ } work_log_since($off)), 1,
   'the work log says the group was stored again, replacing them');

# The index file has the new text, not the leftover's.
my $a = answer($ds, { question => 'who logs the tides', top_n => 5 });
is($a->{status}, 'success', 'a question is answered');
my @texts = map { $_->{page_content} } @{ $a->{relevant_documents} || [] };
ok((grep { /Lighthouse keepers/ } @texts), 'the document is found by its text');
ok(!(grep { /leftover/ } @texts), 'the leftover is not in the index');

done_testing;
