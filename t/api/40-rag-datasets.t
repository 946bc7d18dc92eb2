#!/usr/bin/perl
# Retrieval datasets: create, add documents (JSON and uploaded files),
# ingestion to success with counts, 422 while processing, DELETE, and the
# errors of each call.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use RagFixture;

# --- POST /dataset ------------------------------------------------------------

my $res = rag(POST => '/dataset', { name => 'lifecycle' });
json_response_is($res, 201, undef, 'create');
is_deeply([ sort keys %{ $res->{json} } ], [qw(dataset_id status)], 'create body keys');
like($res->{json}{dataset_id} // '', qr/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
     'dataset_id is a UUID');
is($res->{json}{status}, 'processing', 'a new dataset waits for documents');
my $id = $res->{json}{dataset_id};

my @bad_create = (
	[ { }, 'name is required' ],
	[ { name => '' }, 'name must be 1 to 255 characters long' ],
	[ { name => 'x' x 256 }, 'name must be 1 to 255 characters long' ],
	[ { name => "\x{e9}" x 256 }, 'name must be 1 to 255 characters long' ],
	[ { name => 5 }, 'name must be a string' ],
	[ { name => undef }, 'name is required' ],
	[ { name => 'a', extra => 1 }, 'extra is not a known field' ],
);
for my $c (@bad_create) {
	json_response_is(rag(POST => '/dataset', $c->[0]), 400, { detail => $c->[1] },
			 "create " . json_encode($c->[0]));
}
json_response_is(rag(POST => '/dataset', { name => "\x{e9}" x 255 }), 201, undef,
		 'name of 255 characters (not bytes)');
json_response_is(rag(POST => '/dataset', undef, body => '{"name":', content_type => 'application/json'),
		 400, undef, 'malformed JSON');
json_response_is(rag(POST => '/dataset', undef, body => '["name"]', content_type => 'application/json'),
		 400, { detail => 'The body must be a JSON object' }, 'an array body');
is(http(POST => '/dataset', { json => { name => 'x' } })->{status}, 401, 'no credentials: 401');
is(http(POST => '/dataset', { json => { name => 'x' }, basic => 'demo:wrong' })->{status}, 401,
   'wrong password: 401');

# --- documents -------------------------------------------------------------------

my @docs = (
	{ text => "Rivers carry water to the sea.\n\nThe Rhine flows through Basel.",
	  metadata => { source => 'rivers.txt', lang => 'en' } },
	{ text => 'Mountains are high. The Alps have glaciers.',
	  metadata => { source => 'mountains.txt', lang => 'en' } },
);
$res = add_documents($id, \@docs);
json_response_is($res, 202, undef, 'add documents');
is($res->{json}{status}, 'processing', 'documents: processing');
is(scalar @{ $res->{json}{document_ids} || [] }, 2, 'two document ids');

my $ds = wait_dataset($id, 30);
is($ds->{status}, 'success', 'ingested: success');
is($ds->{document_count}, 2, 'document_count 2');
cmp_ok($ds->{snippet_count}, '>=', 2, 'at least one snippet per document');
is($ds->{progress}{percent}, 100, 'progress 100%');
is($ds->{progress}{documents_done}, 2, 'documents_done 2');
is($ds->{error}, undef, 'no error');
is($ds->{name}, 'lifecycle', 'name');
is($ds->{embedder}, 'builtin', 'embedder builtin');
is($ds->{dimensions}, 384, 'dimensions 384');
iso_time_ok($ds->{created_at}, 'created_at', 120);
ok(-f index_file($id), 'the index file exists');
my $snips = mysql("SELECT COUNT(*) FROM rag_snippets WHERE dataset_id = '$id'");
is($snips, $ds->{snippet_count}, 'snippet rows match snippet_count');
my $blob = mysql("SELECT LENGTH(embedding) FROM rag_snippets WHERE dataset_id = '$id' LIMIT 1");
is($blob, 384 * 4, 'embeddings are 384 float32');

my @bad_docs = (
	[ { }, 'documents is required' ],
	[ { documents => { text => 'a' } }, 'documents must be an array' ],
	[ { documents => [] }, 'documents must have 1 to 1000 elements' ],
	[ { documents => [ ({ text => 'x' }) x 1001 ] }, 'documents must have 1 to 1000 elements' ],
	[ { documents => [ { text => '' } ] }, 'documents[0].text must not be blank' ],
	[ { documents => [ { text => "  \n" } ] }, 'documents[0].text must not be blank' ],
	[ { documents => [ { metadata => {} } ] }, 'documents[0].text is required' ],
	[ { documents => [ { text => 5 } ] }, 'documents[0].text must be a string' ],
	[ { documents => [ { text => 'a', metadata => [1] } ] }, 'documents[0].metadata must be an object' ],
	[ { documents => [ { text => 'a' }, { text => 'b', meta => {} } ] }, 'documents[1].meta is not a known field' ],
	[ { documents => [ { text => 'a' } ], more => 1 }, 'more is not a known field' ],
	[ { documents => [ 'text' ] }, 'documents[0] must be an object' ],
	# 16385 bytes of metadata JSON: {"big":"x...x"} is 10 bytes around the value
	[ { documents => [ { text => 'a', metadata => { big => 'x' x 16375 } } ] },
	  'documents[0].metadata is too large (at most 16384 bytes of JSON)' ],
	[ { documents => [ { text => 'a' }, { text => 'b', metadata => { source => 's' x 1025 } } ] },
	  'documents[1].metadata.source is longer than 1024 bytes' ],
);
for my $c (@bad_docs) {
	my $name = json_encode($c->[0]);
	$name = substr($name, 0, 60) . '...' if length $name > 60;
	json_response_is(rag(POST => "/dataset/$id/documents", $c->[0]), 400,
			 { detail => $c->[1] }, "documents $name");
}
json_response_is(rag(POST => "/dataset/$id/documents", undef, body => 'x', content_type => 'text/plain'),
		 415, undef, 'documents as text/plain: 415');
is(mysql("SELECT COUNT(*) FROM rag_documents WHERE dataset_id = '$id'"), 2,
   'refused requests stored nothing');
json_response_is(rag(GET => "/dataset/$id"), 200, undef, 'still there');
is(rag(GET => "/dataset/$id")->{json}{status}, 'success', 'and still success');

# Each bound itself is accepted: 1000 documents, 16384 bytes of metadata JSON,
# a 1024-byte metadata.source (a dataset of their own, deleted unread).
my $bounds = new_dataset('bounds');
json_response_is(add_documents($bounds, [
	{ text => 'a', metadata => { big => 'x' x 16374 } },
	{ text => 'b', metadata => { source => 's' x 1024 } },
	({ text => 'c' }) x 998 ]), 202, undef, 'documents at every bound: 202');
is(mysql("SELECT COUNT(*) FROM rag_documents WHERE dataset_id = '$bounds'"), 1000,
   'all 1000 stored');
is(mysql("SELECT MAX(LENGTH(metadata)) FROM rag_documents WHERE dataset_id = '$bounds'"), 16384,
   'metadata of 16384 bytes stored whole');
is(mysql("SELECT MAX(LENGTH(source)) FROM rag_documents WHERE dataset_id = '$bounds'"), 1024,
   'source of 1024 bytes stored whole');
is(rag(DELETE => "/dataset/$bounds")->{status}, 204, 'bounds dataset deleted');

# --- uploads: file name becomes metadata.source ---------------------------------------

sub upload {
	my ($id, @files) = @_;
	my $b = "----sluicetest$$";
	my $body = '';
	for my $f (@files) {
		my ($name, $content, $field) = @$f;
		$body .= "--$b\r\nContent-Disposition: form-data; name=\"" . ($field // 'file')
		    . "\"" . (defined $name ? "; filename=\"$name\"" : '')
		    . "\r\nContent-Type: application/octet-stream\r\n\r\n$content\r\n";
	}
	$body .= "--$b--\r\n";
	return rag(POST => "/dataset/$id/documents", undef, body => $body,
		   content_type => "multipart/form-data; boundary=$b");
}

my $up = new_dataset('uploads');
$res = upload($up,
	[ 'notes.txt', "Plain notes about tea.\nGreen tea is steamed." ],
	[ 'readme.md', "# Coffee\n\nEspresso is pressed." ],
	[ 'page.html', '<html><head><title>Cocoa</title><script>var x = "hidden";</script></head>'
	    . '<body><p>Cocoa &amp; chocolate come from beans.</p></body></html>' ],
	[ 'table.csv', "drink,origin\nmate,\"Paraguay, Argentina\"\nrooibos,South Africa\n" ],
	[ 'list.json', '[{"drink":"kvass","origin":{"country":"Russia"}},{"drink":"horchata"}]' ],
);
json_response_is($res, 202, undef, 'upload of five files');
is(scalar @{ $res->{json}{document_ids} || [] }, 5, 'five documents');
$ds = wait_dataset($up, 30);
is($ds->{status}, 'success', 'uploads ingested');
my %text = map { $_->[0] => $_->[1] }
	mysql("SELECT source, REPLACE(text, '\\n', ' ') FROM rag_documents WHERE dataset_id = '$up'");
is_deeply([ sort keys %text ], [qw(list.json notes.txt page.html readme.md table.csv)],
	  'file names are the sources');
like($text{'page.html'}, qr/Cocoa & chocolate come from beans\./, 'HTML: text and entities');
unlike($text{'page.html'}, qr/hidden|<p>/, 'HTML: no script, no tags');
like($text{'table.csv'}, qr/drink: mate origin: Paraguay, Argentina/, 'CSV: rows as column: value');
like($text{'list.json'}, qr/drink: kvass origin\.country: Russia/, 'JSON: path: value');

my $a = answer($up, { question => 'mate Paraguay Argentina', hybrid => JSON::PP::true(),
		      top_n => 1 });
is($a->{status}, 'success', 'question over uploads');
is($a->{relevant_documents}[0]{metadata}{source}, 'table.csv', 'metadata.source is the file name');
# The file name without its extension is the document's title, which BM25
# counts: "readme" is in no text.
$a = answer($up, { question => 'readme', top_n => 1 });
is($a->{relevant_documents}[0]{metadata}{source}, 'readme.md', 'found by its file name');
is($a->{relevant_documents}[0]{page_content}, "# Coffee\n\nEspresso is pressed.",
   '... and its snippet is the text alone');

json_response_is(upload($up, [ 'x.pdf', 'data' ]), 400,
		 { detail => "Unsupported file type 'x.pdf' (expected .txt, .md, .html, .csv or .json)" },
		 'a .pdf upload');
json_response_is(upload($up, [ 'empty.txt', '   ' ]), 400,
		 { detail => "File 'empty.txt' holds no text" }, 'an empty file');
json_response_is(upload($up, [ 'bad.json', '{"a":' ]), 400, undef, 'a broken JSON file');
like(upload($up, [ 'bad.json', '{"a":' ])->{json}{detail}, qr/^File 'bad.json' is not valid JSON: /,
     'the detail names the file');
json_response_is(upload($up, [ 'latin1.txt', "caf\xe9" ]), 400,
		 { detail => "File 'latin1.txt' is not UTF-8 text" }, 'not UTF-8');
json_response_is(upload($up, [ undef, 'value', 'comment' ]), 400,
		 { detail => "Unexpected form field 'comment': send files (parts with a filename)" },
		 'a plain form field');
json_response_is(upload($up, [ 'dir/sub/path.txt', 'path test' ]), 202, undef,
		 'a file name with a path');
is(mysql("SELECT COUNT(*) FROM rag_documents WHERE dataset_id = '$up' AND source = 'path.txt'"), 1,
   'only the last path component is kept');
json_response_is(rag(POST => "/dataset/$up/documents", undef, body => "--x\r\nbroken",
		     content_type => 'multipart/form-data; boundary=x'), 400, undef,
		 'a truncated multipart body');
wait_dataset($up, 30);

# --- 422 while processing: with sluice work stopped, nothing gets ingested -------------

my $r = dev('work-stop');
is($r->{exit}, 0, 'sluice work stopped') or diag $r->{err};
my $slow = new_dataset('held');
json_response_is(ask($slow, { question => 'anything' }), 422, undef, 'new empty dataset: 422');
add_documents($slow, [ { text => 'Held back until work runs again.' } ]);
my $held = rag(GET => "/dataset/$slow")->{json};
is($held->{status}, 'processing', 'processing while work is stopped');
is($held->{progress}{documents_processing}, 1, 'one document waiting');
json_response_is(ask($slow, { question => 'held back?' }), 422,
		 { detail => 'Dataset is still processing: questions can be asked once its status is success' },
		 'question while processing');
# a success dataset that gets more documents is processing again
add_documents($id, [ { text => 'Lakes are still water.', metadata => { source => 'lakes.txt' } } ]);
is(rag(GET => "/dataset/$id")->{json}{status}, 'processing', 'more documents: processing again');
json_response_is(ask($id, { question => 'lakes' }), 422, undef, 'and 422 meanwhile');
$r = dev('work-start');
is($r->{exit}, 0, 'sluice work started') or diag $r->{err};
is(wait_dataset($slow, 30)->{status}, 'success', 'ingested once work runs');
$ds = wait_dataset($id, 30);
is($ds->{status}, 'success', 're-ingested');
is($ds->{document_count}, 3, 'now three documents');
$a = answer($id, { question => 'still water lakes', top_n => 1 });
is($a->{relevant_documents}[0]{metadata}{source}, 'lakes.txt', 'the new document is searchable');

# --- GET / DELETE errors ------------------------------------------------------------------

my $unknown = '00000000-0000-4000-8000-000000000000';
json_response_is(rag(GET => "/dataset/$unknown"), 404, { detail => 'Dataset not found' }, 'GET unknown');
json_response_is(rag(GET => '/dataset/not-a-uuid'), 404, { detail => 'Dataset not found' }, 'GET malformed id');
json_response_is(rag(DELETE => "/dataset/$unknown"), 404, { detail => 'Dataset not found' }, 'DELETE unknown');
json_response_is(add_documents($unknown, [ { text => 'x' } ]), 404, { detail => 'Dataset not found' },
		 'documents to unknown');
is(http(GET => "/dataset/$id")->{status}, 401, 'GET without credentials: 401');

# --- isolation: another Basic user sees none of it ------------------------------------------

my $other = second_user();
for my $c ([ GET => "/dataset/$id" ], [ DELETE => "/dataset/$id" ],
	   [ POST => "/dataset/$id/documents", { documents => [ { text => 'x' } ] } ],
	   [ POST => "/dataset/$id/question", { question => 'x' } ]) {
	json_response_is(rag($c->[0], $c->[1], $c->[2], basic => $other), 404,
			 { detail => 'Dataset not found' }, "other user: $c->[0] $c->[1]");
}
my $mine = new_dataset('theirs', basic => $other);
json_response_is(rag(GET => "/dataset/$mine"), 404, { detail => 'Dataset not found' },
		 "and the demo user cannot see the other user's dataset");
is(rag(GET => "/dataset/$id")->{json}{document_count}, 3, 'nothing changed by the other user');

# --- DELETE removes rows and the index file ----------------------------------------------------

my $file = index_file($id);
ok(-f $file, 'index file before DELETE');
my $qcount = mysql("SELECT COUNT(*) FROM rag_questions WHERE dataset_id = '$id'");
cmp_ok($qcount, '>', 0, 'the dataset has questions');
$res = rag(DELETE => "/dataset/$id");
is($res->{status}, 204, 'DELETE: 204');
is($res->{content}, '', 'no body');
ok(!-e $file, 'index file removed');
for my $t (qw(rag_datasets rag_documents rag_snippets rag_questions)) {
	my $col = $t eq 'rag_datasets' ? 'id' : 'dataset_id';
	is(mysql("SELECT COUNT(*) FROM $t WHERE $col = '$id'"), 0, "no $t rows left");
}
json_response_is(rag(GET => "/dataset/$id"), 404, undef, 'gone');
json_response_is(rag(DELETE => "/dataset/$id"), 404, undef, 'second DELETE: 404');

for my $d ($up, $slow) {
	is(rag(DELETE => "/dataset/$d")->{status}, 204, 'clean up');
}

done_testing();
