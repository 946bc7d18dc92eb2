#!/usr/bin/perl
# GET /openapi.json: public, the document docs/openapi.yaml says, as JSON;
# the document and docs/api.md's route table name the same routes; and the
# check every test's answers go through (t/lib/SluiceOpenAPI.pm) refuses
# answers that do not match the document.

use strict;
use warnings;

use FindBin;
use Test2::API qw(intercept);
use Test::More;

use SluiceOpenAPI;
use SluiceTest;

my $doc = SluiceOpenAPI::load_doc();

# --- the route ---------------------------------------------------------------

my $res = http(GET => '/openapi.json');
is($res->{status}, 200, 'GET /openapi.json without credentials: 200') or diag describe($res);
like(header($res, 'content-type') // '', qr{^application/json\b}, 'as JSON');
like(header($res, 'x-request-id') // '', qr/^[0-9a-f]{32}$/, 'with a request id');
is(header($res, 'strict-transport-security'), 'max-age=63072000', 'HSTS');
is(header($res, 'x-content-type-options'), 'nosniff', 'nosniff');
is(header($res, 'cache-control'), 'no-store', 'no-store');
is_deeply($res->{json}, $doc, 'the same data as docs/openapi.yaml');
is($res->{json}{openapi}, '3.1.0', 'an OpenAPI 3.1 document');

$res = http(GET => '/openapi.json', { auth => 'Bearer not.a.token' });
is($res->{status}, 200, 'credentials, even bad ones, are not looked at');

$res = http(GET => '/openapi.json?format=yaml');
json_response_is($res, 400, { detail => 'format is not a known query parameter' },
	'a query parameter is refused like on every route');

$res = http(POST => '/openapi.json', { json => {} });
json_response_is($res, 405, { detail => 'Method Not Allowed' }, 'POST: 405');
is(header($res, 'allow'), 'GET', 'Allow: GET');

$res = http(HEAD => '/openapi.json');
is($res->{status}, 200, 'HEAD: 200');
is($res->{content}, '', 'HEAD: no body');

# --- the document and docs/api.md name the same routes -------------------------

open my $fh, '<:raw', "$FindBin::Bin/../../docs/api.md" or die "docs/api.md: $!";
my $api = do { local $/; <$fh> };
close $fh;

my ($table) = $api =~ /^## Routes in this version\n(.*?)\n(?=#)/ms
	or BAIL_OUT('docs/api.md has no "Routes in this version" section');
my ($probes) = $api =~ /^## Test probes\n(.*?)\n(?=#)/ms
	or BAIL_OUT('docs/api.md has no "Test probes" section');
my @md;
for my $text ($table, $probes) {
	push @md, "$1 $2" while $text =~ /^\| `([A-Z]+) (\/[^\s`?]*)[^`]*` \|/mg;
}
my @oa;
for my $p (keys %{ $doc->{paths} }) {
	push @oa, uc($_) . " $p"
		for grep { /^(get|put|post|delete|patch)$/ } keys %{ $doc->{paths}{$p} };
}
# Area by area, so that a missing section names itself.
my %area = (service => qr{^\S+ /(?:health|openapi\.json|_test/)}, platform => qr{^\S+ /platform/},
	    'storage explorer' => qr{^\S+ /storage-explorer/}, retrieval => qr{^\S+ /dataset\b});
for my $name (sort keys %area) {
	my @a = sort grep { $_ =~ $area{$name} } @oa;
	my @b = sort grep { $_ =~ $area{$name} } @md;
	is_deeply(\@a, \@b, "$name: docs/openapi.yaml's operations are docs/api.md's routes")
		or diag "only in docs/api.md: @{[ grep { my $r = $_; !grep { $_ eq $r } @a } @b ]}\n"
		      . "only in docs/openapi.yaml: @{[ grep { my $r = $_; !grep { $_ eq $r } @b } @a ]}";
}
my @other = grep { my $r = $_; !grep { $r =~ $_ } values %area } @oa, @md;
is_deeply(\@other, [], 'every route is of an area');
cmp_ok(scalar(@md), '>', 50, 'the route table was read');

# --- the check refuses what the document does not say ---------------------------

sub refused {
	my ($name, $res, $method, $path) = @_;
	$res->{headers} //= { 'content-type' => 'application/json',
			      'x-request-id' => 'r1' };
	$res->{content} //= json_encode($res->{json});
	my $ok;
	my $events = intercept { $ok = SluiceOpenAPI::check($res, $method, $path) };
	my @fail = grep { $_->isa('Test2::Event::Ok') && !$_->pass } @$events;
	ok(!$ok && @fail == 1, "the check refuses $name") or diag explain $events;
}

refused('a field the document does not have',
	{ status => 200, json => { status => 'healthy', timestamp => '2026-01-01T00:00:00.000Z',
				   extra => 1 } }, GET => '/health');
refused('a field of the wrong type',
	{ status => 404, json => { detail => { status => 1 } } },
	GET => '/platform/pipeline/0123');
refused('a status the operation does not declare',
	{ status => 418, json => { detail => 'teapot' } }, GET => '/health');
refused('an unknown path answered in another shape',
	{ status => 404, json => { error => 'not_found' } }, GET => '/no/such/route');
refused('an answer without X-Request-Id',
	{ status => 404, json => { detail => 'Not Found' },
	  headers => { 'content-type' => 'application/json' } }, GET => '/no/such/route');
refused('a 405 without Allow',
	{ status => 405, json => { detail => 'Method Not Allowed' } }, PUT => '/health');
refused('a content type the answer does not declare',
	{ status => 200, content => '<html></html>', headers => {
		'content-type' => 'text/html', 'x-request-id' => 'r1' } }, GET => '/health');

my $events = intercept {
	SluiceOpenAPI::check({ status => 200, headers => { 'content-type' => 'application/json',
		'x-request-id' => 'r1' }, json => { status => 'healthy',
		timestamp => '2026-01-01T00:00:00.000Z' }, content => '{}' }, GET => '/health/');
};
is(scalar(@$events), 0, 'a matching answer passes without a test of its own');

done_testing;
