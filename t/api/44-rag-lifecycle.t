#!/usr/bin/perl
# What a retrieval user does after creating: list their datasets (paged),
# list a dataset's documents, delete a document -- its snippets leave the
# dense index and the BM25 statistics exactly as if it had never been
# posted, also while sluice work is down, while another batch is being
# ingested and while the index is being rebuilt -- and every route refuses
# a query parameter it does not take.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use JSON::PP ();
use Test::More;

use RagFixture;
use RunnerFixture qw(with_work_conf work_pid);
use SluiceTest;

my @METRICS = qw(L2 L1 max cos dot);
my $F = JSON::PP::false;
my $T = JSON::PP::true;

# A user of their own, so that listings hold only what this file made.
my $me = second_user();
my $other = second_user();

sub doc_ids_of {
	my ($answer) = @_;
	return [ map { $_->{metadata}{document_id} } @{ $answer->{relevant_documents} || [] } ];
}

sub documents_of {
	my ($id, $query, %o) = @_;
	return rag(GET => "/dataset/$id/documents" . ($query // ''), undef, %o);
}

# Every snippet (top_n covers them all) as page_content => score.
sub scores {
	my ($id, $metric, $hybrid) = @_;
	my $ans = answer($id, { question => 'rivers carry water past glaciers', top_n => 100,
			      distance_metric => $metric, hybrid => $hybrid,
			      maximal_marginal_relevance => $F }, basic => $me);
	return { map { $_->{page_content} => $_->{score} } @{ $ans->{relevant_documents} } };
}

# --- GET /dataset ------------------------------------------------------------------

my $res = rag(GET => '/dataset', undef, basic => $me);
json_response_is($res, 200, { datasets => [],
	pagination => { current_page => 1, total_pages => 0, total_items => 0,
			items_per_page => 20, has_next => $F, has_previous => $F } },
		 'a user without datasets: an empty page');

my @made = map { new_dataset("list-$_", basic => $me) } 1 .. 3;
my $theirs = new_dataset('not yours', basic => $other);

$res = rag(GET => '/dataset?limit=2', undef, basic => $me);
json_response_is($res, 200, undef, 'GET /dataset?limit=2');
is_deeply([ map { $_->{dataset_id} } @{ $res->{json}{datasets} } ], [ @made[2, 1] ],
	  'newest first, two of them');
is_deeply($res->{json}{pagination}, { current_page => 1, total_pages => 2, total_items => 3,
	  items_per_page => 2, has_next => $T, has_previous => $F }, 'page 1 of 2');
for my $d (@{ $res->{json}{datasets} }) {
	is_deeply($d, rag(GET => "/dataset/$d->{dataset_id}", undef, basic => $me)->{json},
		  "$d->{name} listed exactly as GET /dataset/{id} shows it");
}
$res = rag(GET => '/dataset?limit=2&page=2', undef, basic => $me);
is_deeply([ map { $_->{dataset_id} } @{ $res->{json}{datasets} } ], [ $made[0] ], 'page 2: the oldest');
is_deeply($res->{json}{pagination}, { current_page => 2, total_pages => 2, total_items => 3,
	  items_per_page => 2, has_next => $F, has_previous => $T }, 'page 2 of 2');
$res = rag(GET => '/dataset?page=3&limit=2', undef, basic => $me);
is_deeply($res->{json}{datasets}, [], 'past the end: empty');
is($res->{json}{pagination}{total_items}, 3, 'with the total still right');

$res = rag(GET => '/dataset?limit=100', undef, basic => $other);
is_deeply([ map { $_->{dataset_id} } @{ $res->{json}{datasets} } ], [ $theirs ],
	  "another user sees only their own");
$res = rag(GET => '/dataset?limit=100');
ok(!(grep { my $d = $_->{dataset_id}; grep { $_ eq $d } @made, $theirs }
     @{ $res->{json}{datasets} }), 'the demo user sees none of theirs');

for my $c ([ 'page=0', 'page must be an integer from 1 to 1000000000' ],
	   [ 'page=1000000001', 'page must be an integer from 1 to 1000000000' ],
	   [ 'limit=0', 'limit must be an integer from 1 to 100' ],
	   [ 'limit=101', 'limit must be an integer from 1 to 100' ],
	   [ 'limit=x', 'limit must be an integer' ],
	   [ 'page=1&page=2', 'page is given more than once' ],
	   [ 'Page=1', 'Page is not a known query parameter' ]) {
	json_response_is(rag(GET => "/dataset?$c->[0]", undef, basic => $me), 400,
			 { detail => $c->[1] }, "GET /dataset?$c->[0]");
}
is(rag(GET => '/dataset?limit=100', undef, basic => 'nobody:wrong')->{status}, 401,
   'wrong credentials: 401');
rag(DELETE => "/dataset/$_", undef, basic => $me) for @made;

# --- GET /dataset/{id}/documents ------------------------------------------------------

my @A = (
	{ text => "Rivers carry water from the mountains to the sea.\n\n"
		  . 'The Rhine passes Basel and Cologne on its way north.',
	  metadata => { source => 'a1.txt', lang => 'en' } },
	{ text => 'Glaciers grind valleys into a U shape over thousands of years.' },
);
my $B = { text => 'Volcanoes pour lava and magma; rivers of lava carry rock '
		. 'and rivers of water carry ash from the crater.',
	  metadata => { source => 'b.txt' } };

my $x = new_dataset('A and B', basic => $me);
$res = add_documents($x, [ @A, $B ], basic => $me);
is($res->{status}, 202, 'A1, A2 and B posted') or diag describe($res);
my ($doc_a1, $doc_a2, $doc_b) = @{ $res->{json}{document_ids} };
my $xds = wait_dataset($x, 60, basic => $me);
is($xds->{status}, 'success', 'ingested');

$res = documents_of($x, undef, basic => $me);
json_response_is($res, 200, undef, 'GET documents');
my $docs = $res->{json}{documents};
is($res->{json}{dataset_id}, $x, 'dataset_id');
# One request's documents are stored together: oldest first, then by id.
my @order = sort { $a->{created_at} cmp $b->{created_at} || $a->{document_id} cmp $b->{document_id} } @$docs;
is_deeply([ map { $_->{document_id} } @$docs ], [ map { $_->{document_id} } @order ],
	  'oldest first, then by id');
is_deeply([ sort map { $_->{document_id} } @$docs ], [ sort $doc_a1, $doc_a2, $doc_b ], 'the three documents');
my %doc = map { $_->{document_id} => $_ } @$docs;
is_deeply([ sort keys %{ $doc{$doc_a1} } ],
	  [ sort qw(document_id metadata source status error snippet_count created_at) ],
	  'the fields of a document');
is_deeply($doc{$doc_a1}{metadata}, { source => 'a1.txt', lang => 'en' }, 'metadata as posted');
is($doc{$doc_a1}{source}, 'a1.txt', 'source');
is_deeply($doc{$doc_a2}{metadata}, {}, 'no metadata: {}');
is($doc{$doc_a2}{source}, '', 'no source: ""');
is_deeply([ map { $_->{status} } @$docs ], [ qw(success success success) ], 'all success');
is_deeply([ map { $_->{error} } @$docs ], [ undef, undef, undef ], 'no errors');
iso_time_ok($docs->[2]{created_at}, 'created_at', 120);
for my $d (@$docs) {
	is($d->{snippet_count}, mysql("SELECT COUNT(*) FROM rag_snippets "
	   . "WHERE document_id = '$d->{document_id}'"), "snippet_count of $d->{source}");
}
my $sum = 0;
$sum += $_->{snippet_count} for @$docs;
is($sum, $xds->{snippet_count}, "the documents' snippets add up to the dataset's");

$res = documents_of($x, '?limit=2&page=2', basic => $me);
is_deeply([ map { $_->{document_id} } @{ $res->{json}{documents} } ], [ $docs->[2]{document_id} ],
	  'page 2 of limit 2: the third');
is_deeply($res->{json}{pagination}, { current_page => 2, total_pages => 2, total_items => 3,
	  items_per_page => 2, has_next => $F, has_previous => $T }, 'its pagination');
json_response_is(documents_of($x, '?limit=101', basic => $me), 400,
		 { detail => 'limit must be an integer from 1 to 100' }, 'limit 101');
json_response_is(documents_of($x, undef, basic => $other), 404,
		 { detail => 'Dataset not found' }, "another user's dataset: 404");
json_response_is(documents_of('not-a-uuid', undef, basic => $me), 404,
		 { detail => 'Dataset not found' }, 'a malformed id: 404');

# --- unknown query parameters, on every retrieval route ----------------------------------

my $q = ask($x, { question => 'lava' }, basic => $me);
is($q->{status}, 200, 'a question to look up') or diag describe($q);
my $qid = $q->{json}{question_id};
my $before = mysql("SELECT COUNT(*) FROM rag_datasets");
for my $c ([ POST => '/dataset', { name => 'never made' } ],
	   [ GET => '/dataset' ],
	   [ GET => "/dataset/$x" ],
	   [ DELETE => "/dataset/$x" ],
	   [ POST => "/dataset/$x/documents", { documents => [ { text => 'never stored' } ] } ],
	   [ GET => "/dataset/$x/documents" ],
	   [ DELETE => "/dataset/$x/documents/$doc_a1" ],
	   [ POST => "/dataset/$x/question", { question => 'lava' } ],
	   [ GET => "/dataset/$x/question/$qid" ]) {
	my ($m, $path, $body) = @$c;
	json_response_is(rag($m => "$path?bogus=1", $body, basic => $me), 400,
			 { detail => 'bogus is not a known query parameter' }, "$m $path?bogus=1");
}
is(mysql("SELECT COUNT(*) FROM rag_datasets"), $before, 'no dataset made or deleted');
is(mysql("SELECT COUNT(*) FROM rag_documents WHERE dataset_id = '$x'"), 3,
   'no document stored or deleted');
is(mysql("SELECT COUNT(*) FROM rag_questions WHERE dataset_id = '$x'"), 1, 'no question asked');
is(rag(GET => "/dataset/$x", undef, basic => $me)->{json}{status}, 'success', 'still success');

# --- DELETE a document --------------------------------------------------------------------

for my $m (@METRICS) {
	my $ans = answer($x, { question => 'volcano lava magma crater', top_n => 1,
			     distance_metric => $m }, basic => $me);
	is_deeply(doc_ids_of($ans), [ $doc_b ], "$m: B holds the best snippet before");
}

# the document of another dataset, and other users, are refused first
my $y = new_dataset('A only', basic => $me);
$res = add_documents($y, [ @A ], basic => $me);
my ($ya1) = @{ $res->{json}{document_ids} };
is(wait_dataset($y, 60, basic => $me)->{status}, 'success', 'A alone ingested');
json_response_is(rag(DELETE => "/dataset/$x/documents/$ya1", undef, basic => $me), 404,
		 { detail => 'Document not found' }, 'a document of another dataset: 404');
is(mysql("SELECT COUNT(*) FROM rag_documents WHERE id = '$ya1'"), 1, 'and it stays');
json_response_is(rag(DELETE => "/dataset/$x/documents/$doc_b", undef, basic => $other), 404,
		 { detail => 'Dataset not found' }, "another user deleting my document: 404");
json_response_is(rag(DELETE => "/dataset/$theirs/documents/$doc_b", undef, basic => $me), 404,
		 { detail => 'Dataset not found' }, "my document under another user's dataset: 404");
json_response_is(rag(DELETE => "/dataset/$x/documents/not-a-uuid", undef, basic => $me), 404,
		 { detail => 'Document not found' }, 'a malformed document id: 404');
json_response_is(rag(DELETE => "/dataset/$x/documents/" . uc($doc_b), undef, basic => $other),
		 404, undef, 'upper case id of another user: 404');
is(mysql("SELECT COUNT(*) FROM rag_documents WHERE id = '$doc_b'"), 1, 'B is still there');

$res = rag(DELETE => "/dataset/$x/documents/" . uc($doc_b), undef, basic => $me);
json_response_is($res, 202, { dataset_id => $x, document_id => $doc_b, status => 'processing' },
		 'DELETE B (id in upper case): 202');
is(mysql("SELECT COUNT(*) FROM rag_documents WHERE id = '$doc_b'"), 0, 'its row is gone at once');
is(mysql("SELECT COUNT(*) FROM rag_snippets WHERE document_id = '$doc_b'"), 0,
   'and its snippets with their embeddings');
json_response_is(rag(DELETE => "/dataset/$x/documents/$doc_b", undef, basic => $me), 404,
		 { detail => 'Document not found' }, 'deleting it again: 404');
is_deeply([ map { $_->{document_id} } @{ documents_of($x, undef, basic => $me)->{json}{documents} } ],
	  [ grep { $_ ne $doc_b } map { $_->{document_id} } @$docs ], 'the listing no longer shows it');

$xds = wait_dataset($x, 60, basic => $me);
is($xds->{status}, 'success', 'the index is rebuilt: success');
is($xds->{document_count}, 2, 'two documents');
is($xds->{snippet_count}, mysql("SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = '$x'"),
   'snippet_count matches the rows left');
for my $m (@METRICS) {
	for my $hybrid ($T, $F) {
		my $ans = answer($x, { question => 'volcano lava magma crater', top_n => 100,
				     distance_metric => $m, hybrid => $hybrid }, basic => $me);
		ok(!(grep { $_ eq $doc_b } @{ doc_ids_of($ans) }),
		   "$m hybrid=$hybrid: no snippet of B any more");
	}
	my $f = answer($x, { question => 'lava', distance_metric => $m,
			     metadata_filter => { source => 'b.txt' } }, basic => $me);
	is_deeply($f->{relevant_documents}, [], "$m: filtered to B's source, nothing is left");
}

# BM25 (and every score) as if B had never been posted: X (A + B - B) and
# Y (A only) score every snippet alike.
for my $m (@METRICS) {
	for my $hybrid ($T, $F) {
		my ($sx, $sy) = (scores($x, $m, $hybrid), scores($y, $m, $hybrid));
		cmp_ok(scalar keys %$sy, '>=', 2, "$m hybrid=$hybrid: A's snippets scored");
		is_deeply($sx, $sy, "$m hybrid=$hybrid: equal scores with B deleted and never posted");
	}
}

# the last documents: an empty dataset that answers with nothing
for my $d ($doc_a1, $doc_a2) {
	is(rag(DELETE => "/dataset/$x/documents/$d", undef, basic => $me)->{status}, 202,
	   'delete an A document');
}
$xds = wait_dataset($x, 60, basic => $me);
is($xds->{status}, 'success', 'no documents left: success');
is($xds->{document_count}, 0, 'document_count 0');
is($xds->{snippet_count}, 0, 'snippet_count 0');
is_deeply(answer($x, { question => 'rivers' }, basic => $me)->{relevant_documents}, [],
	  'a question finds nothing');

# --- sluice work down while a document is deleted -------------------------------------------

my $r = dev('work-stop');
is($r->{exit}, 0, 'sluice work stopped') or diag $r->{err};
$res = rag(DELETE => "/dataset/$y/documents/$ya1", undef, basic => $me);
is($res->{status}, 202, 'delete while nothing ingests');
json_response_is(ask($y, { question => 'rivers' }, basic => $me), 422, undef,
		 'questions wait for the rebuild: 422');
$r = dev('work-start');
is($r->{exit}, 0, 'sluice work started') or diag $r->{err};
is(wait_dataset($y, 60, basic => $me)->{status}, 'success', 'rebuilt once work runs');
for my $m (@METRICS) {
	my $ans = answer($y, { question => 'Rhine Basel Cologne rivers', top_n => 100,
			     distance_metric => $m }, basic => $me);
	ok(!(grep { $_ eq $ya1 } @{ doc_ids_of($ans) }), "$m: the deleted document is not found");
}

# --- deleting while a second batch is being ingested --------------------------------------

# Each document waits a moment before it is embedded, so the second batch
# is surely still ingesting when the deletions land.
with_work_conf(rag_test_ingest_delay_ms => 600);

sub topic_doc {
	my ($n) = @_;
	return { text => "Report $n on topic$n: the harbour of town$n ships grain and timber.",
		 metadata => { source => "report$n.txt", n => $n } };
}
my $z = new_dataset('two batches', basic => $me);
$res = add_documents($z, [ map { topic_doc($_) } 1 .. 3 ], basic => $me);
my @first = @{ $res->{json}{document_ids} };
is(wait_dataset($z, 60, basic => $me)->{status}, 'success', 'first batch ingested');
$res = add_documents($z, [ map { topic_doc($_) } 4 .. 11 ], basic => $me);
my @second = @{ $res->{json}{document_ids} };
ok(wait_until(30, sub { mysql("SELECT COUNT(*) FROM rag_documents WHERE dataset_id = '$z' "
	. "AND status = 'success'") >= 4 }), 'the second batch is being ingested');
# While it is processing, GET counts the snippets stored so far (from an
# index), not the count stored when the first batch settled (3).
{
	my $rows = sub { mysql("SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = '$z'") };
	my $before = $rows->();
	my $mid = rag(GET => "/dataset/$z", undef, basic => $me)->{json};
	my $after = $rows->();
	is($mid->{status}, 'processing', 'GET while the second batch is ingested: processing');
	ok($mid->{snippet_count} >= $before && $mid->{snippet_count} <= $after && $before > 3,
	   "its snippet_count is the rows stored so far ($before <= $mid->{snippet_count} <= $after)");
}
my $processing = mysql("SELECT id FROM rag_documents WHERE dataset_id = '$z' AND status = "
		       . "'processing' ORDER BY created_at, id LIMIT 1");
ok($processing, 'one of it still processing');
# Ingestion takes a batch in (created_at, id) order, and ids are random, so
# the one ingested last is asked of the database, not of the answer's order.
my $last = mysql("SELECT id FROM rag_documents WHERE dataset_id = '$z' AND status = "
		 . "'processing' ORDER BY created_at DESC, id DESC LIMIT 1");
ok((grep { $_ eq $last } @second) && $last ne $processing,
   'the last of it is still to come');
# the one still to come, the one most likely under way, one of the first batch
my @gone = ($last, $processing, $first[1]);
for my $d (@gone) {
	is(rag(DELETE => "/dataset/$z/documents/$d", undef, basic => $me)->{status}, 202,
	   "delete $d during the ingestion");
}
my $zds = wait_dataset($z, 60, basic => $me);
is($zds->{status}, 'success', 'the dataset settles: success');
is($zds->{document_count}, 8, 'eleven documents less three');
is($zds->{progress}{documents_done}, 8, 'all of them ingested');
my %gone = map { $_ => 1 } @gone;
my @left = grep { !$gone{$_} } @first, @second;
is_deeply([ sort map { $_->{document_id} } @{ documents_of($z, '?limit=100', basic => $me)->{json}{documents} } ],
	  [ sort @left ], 'the listing holds exactly the others');
is(mysql("SELECT COUNT(*) FROM rag_snippets WHERE document_id IN ('" . join("','", @gone) . "')"),
   0, 'no snippet of a deleted document was stored');
is($zds->{snippet_count}, mysql("SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = '$z'"),
   'snippet_count matches the rows');
ok(wait_until(30, sub { mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'rag_ingest' "
	. "AND ref_id = '$z' AND status <> 'done'") == 0 }), 'every ingestion item is done');
my @left_n = map { $_->{metadata}{n} } grep { !$gone{$_->{document_id}} }
	@{ documents_of($z, '?limit=100', basic => $me)->{json}{documents} };
for my $m (@METRICS) {
	my $ans = answer($z, { question => 'harbour grain timber', top_n => 100,
			     distance_metric => $m }, basic => $me);
	my %seen = map { $_ => 1 } @{ doc_ids_of($ans) };
	ok(!(grep { $seen{$_} } @gone), "$m: no snippet of a deleted document");
	is(scalar keys %seen, 8, "$m: every remaining document is found");
}
# the index is the one a dataset of the remaining documents alone has
my $ref = new_dataset('the remaining ones', basic => $me);
is(add_documents($ref, [ map { topic_doc($_) } @left_n ], basic => $me)->{status}, 202,
   'the same documents, posted once');
is(wait_dataset($ref, 60, basic => $me)->{status}, 'success', 'ingested');
for my $m (@METRICS) {
	my %q = (question => 'report on the harbour of town5', top_n => 100,
		 distance_metric => $m, maximal_marginal_relevance => $F);
	my %sz = map { $_->{page_content} => $_->{score} }
		@{ answer($z, \%q, basic => $me)->{relevant_documents} };
	my %sr = map { $_->{page_content} => $_->{score} }
		@{ answer($ref, \%q, basic => $me)->{relevant_documents} };
	is_deeply(\%sz, \%sr, "$m: scores equal to the dataset never given the deleted ones");
}

# --- deleting while the index is being rebuilt ---------------------------------------------

# sluice work pauses before it reads the snippets for an index file and
# again before it marks the dataset success; one ingestion at a time.  B
# is deleted in the second pause of an ingestion whose index still holds
# B: that index must never be taken for the current one, not even for the
# pause before the next rebuild reads the snippets.
with_work_conf(rag_test_ingest_delay_ms => 0, rag_test_index_delay_ms => 1500,
	       work_rag_ingest_slots => 1);

sub file_bytes {
	my ($path) = @_;
	open my $fh, '<:raw', $path or return '';
	local $/;
	return scalar <$fh>;
}
sub inode { (stat($_[0]))[1] // 0 }

my $w = new_dataset('rebuilt', basic => $me);
$res = add_documents($w, [ @A, $B ], basic => $me);
my $wb = $res->{json}{document_ids}[2];
is(wait_dataset($w, 60, basic => $me)->{status}, 'success', 'A and B ingested');
my $file = index_file($w);
like(file_bytes($file), qr/Volcanoes/, "B's text is in the index file");
my $ino = inode($file);
my $D = { text => 'Deltas form where a river meets the sea and drops its silt.',
	  metadata => { source => 'd.txt' } };
is(add_documents($w, [ $D ], basic => $me)->{status}, 202, 'D posted: a new ingestion');
ok(wait_until(30, sub { inode($file) != $ino }, 0.02), 'its index file (still with B) is written');
$res = rag(DELETE => "/dataset/$w/documents/$wb", undef, basic => $me);
is($res->{status}, 202, 'B deleted before that ingestion marks the dataset success');
my $wds = wait_dataset($w, 60, basic => $me);
is($wds->{status}, 'success', 'success again');
unlike(file_bytes($file), qr/Volcanoes/, "from then on B's text is not in the index file");
for my $m (@METRICS) {
	my $ans = answer($w, { question => 'volcano lava magma crater', top_n => 100,
			       distance_metric => $m }, basic => $me);
	ok(!(grep { $_ eq $wb } @{ doc_ids_of($ans) }), "$m: no snippet of B");
}
is($wds->{document_count}, 3, 'A1, A2 and D');
is($wds->{snippet_count}, mysql("SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = '$w'"),
   'snippet_count matches the rows');
ok(wait_until(30, sub { mysql("SELECT COUNT(*) FROM work_queue WHERE kind = 'rag_ingest' "
	. "AND ref_id = '$w' AND status <> 'done'") == 0 }), 'every ingestion item is done');
is(rag(GET => "/dataset/$w", undef, basic => $me)->{json}{status}, 'success', 'still success');
unlike(file_bytes($file), qr/Volcanoes/, 'nor after the last one');

# --- sluice work killed (-9) while it rebuilds the index after a deletion -------------------

my ($wa1) = map { $_->{document_id} } grep { ($_->{metadata}{source} // '') eq 'a1.txt' }
	@{ documents_of($w, undef, basic => $me)->{json}{documents} };
ok($wa1, "A1's id");
like(file_bytes($file), qr/Rhine/, "A1's text is in the index file");
is(rag(DELETE => "/dataset/$w/documents/$wa1", undef, basic => $me)->{status}, 202, 'delete A1');
ok(wait_until(30, sub { mysql("SELECT status FROM work_queue WHERE kind = 'rag_ingest' AND "
	. "ref_id = '$w' ORDER BY id DESC LIMIT 1") eq 'running' }), 'its rebuild is running');
my $work = work_pid();
ok($work && kill('KILL', $work), 'kill -9 sluice work');
ok(wait_until(10, sub { !proc_alive($work) }), 'it is gone');
is(rag(GET => "/dataset/$w", undef, basic => $me)->{json}{status}, 'processing',
   'the dataset is left processing');
$r = dev('work-start');
is($r->{exit}, 0, 'a new sluice work') or diag $r->{err};
$wds = wait_dataset($w, 60, basic => $me);
is($wds->{status}, 'success', 'it finishes the rebuild');
is($wds->{document_count}, 2, 'A2 and D are left');
unlike(file_bytes($file), qr/Rhine/, "A1's text is not in the index file");
for my $m (@METRICS) {
	my $ans = answer($w, { question => 'Rhine Basel Cologne', top_n => 100,
			       distance_metric => $m }, basic => $me);
	ok(!(grep { $_ eq $wa1 } @{ doc_ids_of($ans) }), "$m: no snippet of A1");
}

rag(DELETE => "/dataset/$_", undef, basic => $me) for $x, $y, $z, $ref, $w;
rag(DELETE => "/dataset/$theirs", undef, basic => $other);

done_testing();
