#!/usr/bin/perl
# Questions: every POST error of spec/retrieval-api.md with its body, each
# parameter's effect and bounds, the five metrics best first, metadata
# filters, GET with ?wait, and 404s.

use strict;
use warnings;

use JSON::PP ();
use Test::More;
use Time::HiRes qw(time);

use SluiceTest;
use RagFixture;

my $T = JSON::PP::true();
my $F = JSON::PP::false();

my @topics = (
	[ 'volcano', 'geo',   [qw(fire earth)], 'Volcanoes erupt lava and ash; magma rises from the mantle.' ],
	[ 'glacier', 'geo',   [qw(ice water)],  'Glaciers are rivers of ice that carve valleys in mountains.' ],
	[ 'desert',  'geo',   [qw(sand)],       'Deserts receive little rain; dunes of sand move with the wind.' ],
	[ 'ocean',   'geo',   [qw(water salt)], 'Oceans hold salt water; tides follow the moon.' ],
	[ 'violin',  'music', [qw(strings)],    'A violin has four strings and is played with a bow.' ],
	[ 'drum',    'music', [qw(rhythm)],     'Drums keep the rhythm; a drummer strikes the skin with sticks.' ],
	[ 'piano',   'music', [qw(keys strings)], 'A piano has eighty-eight keys; hammers strike its strings.' ],
	[ 'bread',   'food',  [qw(wheat)],      'Bread is baked from wheat flour, water, salt and yeast.' ],
	[ 'cheese',  'food',  [qw(milk)],       'Cheese is made from milk curdled with rennet and aged.' ],
	[ 'tea',     'food',  [qw(leaves water)], 'Tea is brewed from the leaves of the tea plant in hot water.' ],
	[ 'rocket',  'space', [qw(fire)],       'Rockets burn fuel to lift satellites into orbit around the earth.' ],
	[ 'comet',   'space', [qw(ice)],        'Comets are balls of ice and dust with tails that point from the sun.' ],
);
my $id = ready_dataset([ map { { text => $_->[3],
	metadata => { source => "$_->[0].txt", topic => $_->[1], tags => $_->[2] } } } @topics ],
	name => 'questions');

# --- POST: a good question ---------------------------------------------------

my $res = ask($id, { question => 'How do glaciers shape mountains?' });
json_response_is($res, 200, undef, 'POST question');
is_deeply([ sort keys %{ $res->{json} } ], [qw(dataset_id question_id)], 'exactly dataset_id and question_id');
is($res->{json}{dataset_id}, $id, 'dataset_id echoed');
like($res->{json}{question_id} // '', qr/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
     'question_id is a version 7 UUID');
my $qid = $res->{json}{question_id};
# Version 7: the first 48 bits are the time in ms, so ids sort in the order
# questions came and rag_questions grows at the end of its key.
# (read as two halves: hex() of more than 32 bits warns as non-portable)
my $ms = hex(substr($qid, 0, 4)) * 2**32 + hex(substr($qid, 4, 4) . substr($qid, 9, 4));
cmp_ok(abs($ms - time * 1000), '<', 600_000, 'its first 48 bits are the time it was asked, in ms');
select(undef, undef, undef, 0.01);
my $later = ask($id, { question => 'Where do rivers carve canyons?' });
cmp_ok($later->{json}{question_id} // '', 'gt', $qid, "a later question's id sorts after it");

my $got = answer_of($id, $qid, 10);
json_response_is($got, 200, undef, 'GET question ?wait=10');
my $q = $got->{json};
is($q->{status}, 'success', 'status success');
is($q->{question_text}, 'How do glaciers shape mountains?', 'question_text');
is($q->{question_id}, $qid, 'question_id');
is_deeply($q->{parameters}, { k => 20, fetch_k => 10, top_n => 3, distance_metric => 'cos',
	maximal_marginal_relevance => $T, hybrid => $T, lambda_mult => 0.7,
	score_threshold => undef, metadata_filter => undef }, 'the resolved defaults, by wire name');
is(scalar @{ $q->{relevant_documents} }, 3, 'top_n default 3 snippets');
is($q->{relevant_documents}[0]{metadata}{source}, 'glacier.txt', 'the best snippet first');
is_deeply([ sort keys %{ $q->{relevant_documents}[0] } ], [qw(metadata page_content score snippet_id)],
	  'snippet fields');
like($q->{relevant_documents}[0]{page_content}, qr/^Glaciers are rivers of ice/, 'page_content');
is($q->{relevant_documents}[0]{metadata}{topic}, 'geo', 'document metadata kept');
is($q->{relevant_documents}[0]{metadata}{chunk}, 0, 'chunk position in metadata');
iso_time_ok($q->{created_at}, 'created_at', 60);
iso_time_ok($q->{finished_at}, 'finished_at', 60);
ok(defined $q->{elapsed_ms} && $q->{elapsed_ms} >= 0, 'elapsed_ms');
is($q->{error}, undef, 'no error');

# --- POST errors -----------------------------------------------------------------

my @bad = (
	[ { }, 'question is required' ],
	[ { question => '' }, 'question must be 1 to 1000 characters long' ],
	[ { question => "  \n\t" }, 'question must not be blank' ],
	[ { question => undef }, 'question is required' ],
	[ { question => 42 }, 'question must be a string' ],
	[ { question => 'x' x 1001 }, 'question must be 1 to 1000 characters long' ],
	[ { question => "\x{e9}" x 1001 }, 'question must be 1 to 1000 characters long' ],
	[ { question => 'q', k => 0 }, 'k must be an integer from 1 to 1000' ],
	[ { question => 'q', k => 1001 }, 'k must be an integer from 1 to 1000' ],
	[ { question => 'q', k => 2.5 }, 'k must be an integer' ],
	[ { question => 'q', k => '5' }, 'k must be an integer' ],
	[ { question => 'q', fetch_k => 0 }, 'fetch_k must be an integer from 1 to 1000' ],
	[ { question => 'q', fetch_k => 1001 }, 'fetch_k must be an integer from 1 to 1000' ],
	[ { question => 'q', top_n => 0 }, 'top_n must be an integer from 1 to 100' ],
	[ { question => 'q', top_n => 101 }, 'top_n must be an integer from 1 to 100' ],
	[ { question => 'q', lambda_mult => 1.5 }, 'lambda_mult must be a number from 0 to 1' ],
	[ { question => 'q', lambda_mult => -0.1 }, 'lambda_mult must be a number from 0 to 1' ],
	[ { question => 'q', lambda_mult => 'half' }, 'lambda_mult must be a number' ],
	[ { question => 'q', score_threshold => 'high' }, 'score_threshold must be a number' ],
	[ { question => 'q', score_threshold => 2e30 }, 'score_threshold must be a number from -1e+30 to 1e+30' ],
	[ { question => 'q', score_threshold => -2e30 }, 'score_threshold must be a number from -1e+30 to 1e+30' ],
	[ { question => 'q', distance_metric => 'cosine' }, 'distance_metric must be one of L2, L1, max, cos, dot' ],
	[ { question => 'q', distance_metric => 'l2' }, 'distance_metric must be one of L2, L1, max, cos, dot' ],
	[ { question => 'q', distance_metric => 2 }, 'distance_metric must be one of L2, L1, max, cos, dot' ],
	[ { question => 'q', maximal_marginal_relevance => 1 }, 'maximal_marginal_relevance must be a boolean' ],
	[ { question => 'q', use_maximal_marginal_relevance => 'no' }, 'use_maximal_marginal_relevance must be a boolean' ],
	[ { question => 'q', hybrid => 'yes' }, 'hybrid must be a boolean' ],
	[ { question => 'q', maximal_marginal_relevance => $T, use_maximal_marginal_relevance => $F },
	  'maximal_marginal_relevance and use_maximal_marginal_relevance disagree' ],
	[ { question => 'q', metadata_filter => 'source' }, 'metadata_filter must be an object' ],
	[ { question => 'q', metadata_filter => { topic => { '$regex' => 'g.*' } } },
	  "metadata_filter key 'topic': unknown operator (use \$in or \$contains)" ],
	[ { question => 'q', metadata_filter => { topic => { '$in' => 'geo' } } },
	  "metadata_filter key 'topic': \$in must be an array" ],
	[ { question => 'q', temperature => 0.2 }, 'temperature is not a known field' ],
	[ { question => 'q', distance => 'cos' }, 'distance is not a known field' ],
);
for my $c (@bad) {
	my $name = json_encode($c->[0]);
	$name = substr($name, 0, 70) . '...' if length $name > 70;
	json_response_is(ask($id, $c->[0]), 400, { detail => $c->[1] }, "400 for $name");
}
json_response_is(ask($id, undef, body => '{"question": "q",', content_type => 'application/json'),
		 400, undef, 'malformed JSON: 400');
like(ask($id, undef, body => '{"question": "q",', content_type => 'application/json')->{json}{detail},
     qr/^Malformed JSON/, 'its detail says so');
json_response_is(ask($id, undef, body => '[1]', content_type => 'application/json'),
		 400, { detail => 'The body must be a JSON object' }, 'an array body');
json_response_is(ask($id, undef, body => '', content_type => 'application/json'),
		 400, { detail => 'Request body is empty' }, 'an empty body');
json_response_is(ask('00000000-0000-4000-8000-000000000000', { question => 'q' }), 404,
		 { detail => 'Dataset not found' }, 'unknown dataset: 404');
json_response_is(ask('nope', { question => 'q' }), 404, { detail => 'Dataset not found' },
		 'malformed dataset id: 404');
is(http(POST => "/dataset/$id/question", { json => { question => 'q' } })->{status}, 401,
   'no credentials: 401');
is(ask($id, { question => 'q' }, basic => 'demo:wrong')->{status}, 401, 'wrong password: 401');

# bounds: the largest values are accepted
for my $c ([ k => 1 ], [ k => 1000 ], [ fetch_k => 1 ], [ fetch_k => 1000 ], [ top_n => 1 ],
	   [ top_n => 100 ], [ lambda_mult => 0 ], [ lambda_mult => 1 ], [ score_threshold => undef ],
	   [ score_threshold => 1e30 ], [ score_threshold => -1e30 ]) {
	is(ask($id, { question => 'q', $c->[0] => $c->[1] })->{status}, 200,
	   "$c->[0] = " . ($c->[1] // 'null') . ' accepted');
}
is(ask($id, { question => 'x' x 1000 })->{status}, 200, 'a question of 1000 characters');
is(ask($id, { question => "\x{e9}" x 1000 })->{status}, 200, '1000 two-byte characters');
is(ask($id, { question => 'q', use_maximal_marginal_relevance => $F })->{status}, 200,
   'use_maximal_marginal_relevance alias');

# --- each parameter's effect ------------------------------------------------------

my $plain = { maximal_marginal_relevance => $F, hybrid => $F };
for my $n (1, 5, 12) {
	my $a = answer($id, { question => 'water', top_n => $n, %$plain });
	is(scalar @{ $a->{relevant_documents} }, $n, "top_n $n gives $n snippets");
}
my $a = answer($id, { question => 'water', top_n => 100, %$plain });
is(scalar @{ $a->{relevant_documents} }, 12, 'top_n 100 gives every snippet (12)');
$a = answer($id, { question => 'water', top_n => 10, k => 2, %$plain });
is(scalar @{ $a->{relevant_documents} }, 2, 'k 2 caps the pool at 2');
$a = answer($id, { question => 'water', top_n => 10, k => 20, fetch_k => 3,
		   maximal_marginal_relevance => $T, hybrid => $F });
is(scalar @{ $a->{relevant_documents} }, 3, 'fetch_k 3 gives MMR 3 candidates');
is($a->{parameters}{fetch_k}, 3, 'fetch_k stored');
$a = answer($id, { question => 'water', top_n => 10, k => 1, fetch_k => 1000,
		   maximal_marginal_relevance => $T });
is(scalar @{ $a->{relevant_documents} }, 1, 'k 1 with fetch_k 1000: one');

# the five metrics: best first, each score in its own direction
my %larger = (cos => 1, dot => 1, L2 => 0, L1 => 0, max => 0);
for my $m (qw(L2 L1 max cos dot)) {
	$a = answer($id, { question => 'ice glaciers valleys', distance_metric => $m,
			   top_n => 6, %$plain });
	my @s = map { $_->{score} } @{ $a->{relevant_documents} };
	is(scalar @s, 6, "$m: six snippets");
	is($a->{relevant_documents}[0]{metadata}{source}, 'glacier.txt', "$m: the glacier first");
	my $ok = 1;
	for my $i (1 .. $#s) {
		$ok = 0 if $larger{$m} ? $s[$i] > $s[$i - 1] : $s[$i] < $s[$i - 1];
	}
	ok($ok, "$m: scores " . ($larger{$m} ? 'fall' : 'rise') . ' (best first)')
		or diag "@s";
	if ($larger{$m}) {
		cmp_ok($s[0], '>', 0, "$m: a similarity, positive for the best");
	} else {
		cmp_ok($s[0], '>=', 0, "$m: a distance, never negative");
	}
	is($a->{parameters}{distance_metric}, $m, "$m stored");
}

# score_threshold cuts in the metric's direction
my $all = answer($id, { question => 'ice glaciers valleys', top_n => 12, %$plain });
my $cut = $all->{relevant_documents}[2]{score};
$a = answer($id, { question => 'ice glaciers valleys', top_n => 12, score_threshold => $cut, %$plain });
ok(@{ $a->{relevant_documents} } >= 3 && !grep({ $_->{score} < $cut - 1e-6 } @{ $a->{relevant_documents} }),
   'cos: score_threshold keeps similarities at or above it');
$all = answer($id, { question => 'ice glaciers valleys', top_n => 12, distance_metric => 'L2', %$plain });
$cut = $all->{relevant_documents}[2]{score};
$a = answer($id, { question => 'ice glaciers valleys', top_n => 12, distance_metric => 'L2',
		   score_threshold => $cut, %$plain });
ok(@{ $a->{relevant_documents} } >= 3 && !grep({ $_->{score} > $cut + 1e-6 } @{ $a->{relevant_documents} }),
   'L2: score_threshold keeps distances at or below it');

# hybrid: a rare exact word ranks its snippet first even when the vector
# ranking alone spreads the score
$a = answer($id, { question => 'rennet', top_n => 1, hybrid => $T });
is($a->{relevant_documents}[0]{metadata}{source}, 'cheese.txt', 'hybrid finds the exact word');

# MMR: lambda_mult 1 is pure relevance, the same order as without MMR
my $rel = answer($id, { question => 'water', top_n => 4, %$plain });
$a = answer($id, { question => 'water', top_n => 4, hybrid => $F, maximal_marginal_relevance => $T,
		   lambda_mult => 1 });
is_deeply([ map { $_->{snippet_id} } @{ $a->{relevant_documents} } ],
	  [ map { $_->{snippet_id} } @{ $rel->{relevant_documents} } ], 'lambda_mult 1 = relevance order');
$a = answer($id, { question => 'water', top_n => 4, hybrid => $F, maximal_marginal_relevance => $T,
		   lambda_mult => 0 });
is($a->{relevant_documents}[0]{snippet_id}, $rel->{relevant_documents}[0]{snippet_id},
   'lambda_mult 0: the first pick is still the best');

# metadata filters, applied before ranking
$a = answer($id, { question => 'water', top_n => 12, metadata_filter => { topic => 'music' } });
is_deeply([ sort map { $_->{metadata}{source} } @{ $a->{relevant_documents} } ],
	  [qw(drum.txt piano.txt violin.txt)], 'equality filter: only music');
$a = answer($id, { question => 'water', top_n => 12,
		   metadata_filter => { topic => { '$in' => [qw(food space)] } } });
is_deeply([ sort map { $_->{metadata}{topic} } @{ $a->{relevant_documents} } ],
	  [ ('food') x 3, ('space') x 2 ], '$in: food and space');
$a = answer($id, { question => 'water', top_n => 12, metadata_filter => { tags => { '$contains' => 'ice' } } });
is_deeply([ sort map { $_->{metadata}{source} } @{ $a->{relevant_documents} } ],
	  [qw(comet.txt glacier.txt)], '$contains on an array value');
$a = answer($id, { question => 'water', top_n => 12,
		   metadata_filter => { source => { '$contains' => 'ea' } } });
is_deeply([ sort map { $_->{metadata}{source} } @{ $a->{relevant_documents} } ],
	  [qw(bread.txt ocean.txt tea.txt)], '$contains on a string value');
$a = answer($id, { question => 'water', top_n => 12,
		   metadata_filter => { topic => 'geo', tags => { '$contains' => 'water' } } });
is_deeply([ sort map { $_->{metadata}{source} } @{ $a->{relevant_documents} } ],
	  [qw(glacier.txt ocean.txt)], 'two keys: AND');
$a = answer($id, { question => 'water', metadata_filter => { topic => 'poetry' } });
is($a->{status}, 'success', 'a filter that excludes every document: success');
is_deeply($a->{relevant_documents}, [], 'and an empty list, not an error');

# --- GET errors, ?wait ---------------------------------------------------------------

my $unknown = '00000000-0000-4000-8000-000000000000';
json_response_is(rag(GET => "/dataset/$id/question/$unknown"), 404, { detail => 'Question not found' },
		 'unknown question: 404');
json_response_is(rag(GET => "/dataset/$id/question/zzz"), 404, { detail => 'Question not found' },
		 'malformed question id: 404');
my $other = ready_dataset([ { text => 'another dataset' } ], name => 'other');
json_response_is(rag(GET => "/dataset/$other/question/$qid"), 404, { detail => 'Question not found' },
		 "a question of another dataset: 404");
json_response_is(rag(GET => "/dataset/$unknown/question/$qid"), 404, { detail => 'Dataset not found' },
		 'unknown dataset: 404');
for my $c ([ 'wait=-1', 'wait must be an integer from 0 to 30' ],
	   [ 'wait=31', 'wait must be an integer from 0 to 30' ],
	   [ 'wait=x', 'wait must be an integer' ],
	   [ 'wait=1.5', 'wait must be an integer' ],
	   [ 'wait=', 'wait must be an integer' ],
	   [ 'wait=1&wait=2', 'wait is given more than once' ],
	   [ 'wiat=5', 'wiat is not a known query parameter' ],
	   [ 'wait=1&timeout=5', 'timeout is not a known query parameter' ]) {
	json_response_is(rag(GET => "/dataset/$id/question/$qid?$c->[0]"), 400,
			 { detail => $c->[1] }, "?$c->[0]: 400");
}
is(rag(GET => "/dataset/$id/question/$qid?wait=30")->{status}, 200, 'wait=30 (the maximum) is fine');
is(rag(GET => "/dataset/$id/question/$qid?wait=0")->{status}, 200, 'wait=0 is fine');
# A document's title (metadata.title, else its source's file name without
# its extension) counts twice in its first snippet's BM25 (BM25F): a
# question that names only the title finds the document before one that
# holds the word once in its text.  The snippets keep their own text.
my $titled = ready_dataset([
	{ text => 'Notes on moving ice and the valleys it leaves behind.',
	  metadata => { title => 'Glacier field guide', source => 'other-name.txt' } },
	{ text => 'A glacier comes up once here, among many words on weather and climate.' },
	{ text => 'Tables of high and low water by the hour, for each harbour.',
	  metadata => { source => 'reference/tidal-charts.md' } },
	{ text => 'A word on tidal pools, once, between rocks and crabs and weed.',
	  metadata => { source => 'shore.md', title => [ 'not', 'a string' ] } },
], name => 'titles');
$a = answer($titled, { question => 'glacier field guide', top_n => 2, maximal_marginal_relevance => $F });
is($a->{relevant_documents}[0]{metadata}{title}, 'Glacier field guide', 'metadata.title: found first');
is($a->{relevant_documents}[0]{page_content}, 'Notes on moving ice and the valleys it leaves behind.',
   '... its snippet without the title');
is($a->{relevant_documents}[1]{page_content} // '', 'A glacier comes up once here, among many words on weather and climate.',
   '... then the text that has the word');
$a = answer($titled, { question => 'tidal charts', top_n => 2, maximal_marginal_relevance => $F });
is($a->{relevant_documents}[0]{metadata}{source}, 'reference/tidal-charts.md',
   "the source's file name: found first");
is($a->{relevant_documents}[1]{metadata}{source} // '', 'shore.md', '... then the text that has the word');
# A second batch, as users post them: the index is written again from the
# rows the ingestion kept and those it reads back, titles and all.
is(add_documents($titled, [ { text => 'Crampons and an ice axe for the approach.',
			      metadata => { source => 'kit/winter-checklist.txt' } } ])->{status},
   202, 'a second batch');
is(wait_dataset($titled, 60)->{status}, 'success', '... ingested');
$a = answer($titled, { question => 'tidal charts', top_n => 1, maximal_marginal_relevance => $F });
is($a->{relevant_documents}[0]{metadata}{source}, 'reference/tidal-charts.md',
   "the first batch's titles after the second batch");
$a = answer($titled, { question => 'winter checklist', top_n => 1, maximal_marginal_relevance => $F });
is($a->{relevant_documents}[0]{metadata}{source}, 'kit/winter-checklist.txt',
   "the second batch's title");
is(rag(DELETE => "/dataset/$titled")->{status}, 204, 'clean up');

my $second = second_user();
json_response_is(rag(GET => "/dataset/$id/question/$qid", undef, basic => $second), 404,
		 { detail => 'Dataset not found' }, "another user's question: 404");

# an answered question comes back at once even with a long wait
my $t0 = time;
is(answer_of($id, $qid, 30)->{json}{status}, 'success', 'answered question with wait=30');
# At once means without the 30 s wait; the margin is for a loaded sanitizer build.
cmp_ok(time - $t0, '<', 10, 'returns at once, not after the wait');

# POST then GET ?wait: the result is there well within the wait
$res = ask($id, { question => 'bread wheat' });
$t0 = time;
$got = answer_of($id, $res->{json}{question_id}, 10);
is($got->{json}{status}, 'success', 'POST, then GET ?wait=10: success');
cmp_ok(time - $t0, '<', 5, 'without waiting the whole time');
is(rag(DELETE => "/dataset/$other")->{status}, 204, 'clean up');
is(rag(DELETE => "/dataset/$id")->{status}, 204, 'clean up');

done_testing();
