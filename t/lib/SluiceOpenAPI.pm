package SluiceOpenAPI;

# Every answer the API tests receive, checked against docs/openapi.yaml
# (SluiceTest::_decorate calls check for each): the path and method must be
# an operation of the document that declares the status, and the body must
# match that answer's schema for its content type.  A path the document does
# not describe (the tests probe unknown routes) must answer one of the shared
# refusals (components/responses) in its shape, and so must a method the
# path does not take.  A mismatch is a failed test of its own, with the
# validator's errors as diagnostics.  The document is loaded once per test
# process.

use strict;
use warnings;

use Cwd ();
use File::Basename qw(dirname);
use JSON::PP ();
use JSON::Validator::Schema::OpenAPIv3;
use Test::More ();
use YAML::XS ();

my $DOC_FILE = Cwd::abs_path(dirname(__FILE__) . '/../../docs/openapi.yaml');

# The shared answer of each status a path the document does not describe
# (or a method its path does not take) may give.
my %SHARED = (
	400 => 'BadRequest', 401 => 'Unauthorized', 403 => 'Forbidden',
	404 => 'NotFound', 405 => 'MethodNotAllowed', 413 => 'PayloadTooLarge',
	414 => 'URITooLong', 415 => 'UnsupportedMediaType',
	429 => 'TooManyRequests', 500 => 'InternalError', 502 => 'BadGateway',
	503 => 'Unavailable', 504 => 'GatewayTimeout',
);

my ($DOC, $SCHEMA, @ROUTES);

sub doc_file { $DOC_FILE }

# The document as data (YAML booleans as JSON::PP's).
sub load_doc {
	local $YAML::XS::Boolean = 'JSON::PP';
	return YAML::XS::LoadFile($DOC_FILE);
}

# JSON::Validator 5.14 does not follow a $ref to components/responses in
# validate_response: put a copy of each in place.
sub _inline_responses {
	my ($doc) = @_;
	my $shared = $doc->{components}{responses} || {};
	for my $item (values %{ $doc->{paths} || {} }) {
		for my $op (values %$item) {
			next unless ref $op eq 'HASH' && ref $op->{responses} eq 'HASH';
			for my $r (values %{ $op->{responses} }) {
				my $ref = ref $r eq 'HASH' ? $r->{'$ref'} : undef;
				next unless defined $ref
				    && $ref =~ m{^#/components/responses/(.+)$};
				$r = $shared->{$1} or die "$DOC_FILE: no response $1\n";
			}
		}
	}
	return $doc;
}

sub _load {
	return if $SCHEMA;
	$DOC = _inline_responses(load_doc());
	$SCHEMA = JSON::Validator::Schema::OpenAPIv3->new($DOC);
	$SCHEMA->resolve;
	# Templates to regexes; the more literal segments, the better a match
	# (the router's "literal before parameterised").
	for my $t (keys %{ $DOC->{paths} }) {
		my @seg = split m{/}, $t, -1;
		my $re = join '/', map { /^\{.+\}$/ ? '[^/]+' : quotemeta } @seg;
		push @ROUTES, { template => $t, re => qr/^$re$/,
				literal => scalar(grep { !/^\{/ } @seg) };
	}
	@ROUTES = sort { $b->{literal} <=> $a->{literal}
			 || $a->{template} cmp $b->{template} } @ROUTES;
}

# The templates a concrete path matches, best first.
sub templates_of {
	my ($path) = @_;
	_load();
	$path =~ s/[?#].*//s;
	$path =~ s{(.)/$}{$1};    # one trailing slash is ignored
	return map { $_->{template} } grep { $path =~ $_->{re} } @ROUTES;
}

sub _fail {
	my ($what, @why) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 3;
	my $tb = Test::More->builder;
	$tb->ok(0, "answer matches docs/openapi.yaml: $what");
	$tb->diag($_) for @why;
	return 0;
}

sub _media { my ($ct) = @_; $ct //= ''; $ct =~ s/;.*//s; return lc($ct =~ s/\s+//gr) }

# The answer object's content types and the body's errors for one answer
# object $resp (the operation's or a shared one).
sub _check_answer {
	my ($what, $resp, $res, $head, $validate) = @_;
	my $ct = _media(SluiceTest::header($res, 'content-type'));
	my $content = $resp->{content} || {};
	if (!%$content) {
		return length($res->{content}) ? _fail($what, "a body where the document declares none")
					       : 1;
	}
	return 1 if $head;    # HEAD: GET's status and headers, no body
	return _fail($what, "Content-Type '$ct' is not one of: " . join(', ', sort keys %$content))
		unless exists $content->{$ct};
	return 1 unless $ct eq 'application/json';
	return _fail($what, "the body is not JSON: " . ($res->{json_error} // 'empty'))
		unless exists $res->{json} && !defined $res->{json_error};
	my @e = $validate->();
	return @e ? _fail($what, map { "$_" } @e) : 1;
}

# Headers the document promises on every answer sluice writes.
sub _check_headers {
	my ($what, $status, $res) = @_;
	return 1 if $res->{partial};    # a forked client kept only the body
	my $ct = _media(SluiceTest::header($res, 'content-type'));
	return 1 unless $ct eq 'application/json';
	my @why;
	push @why, 'no X-Request-Id header'
		unless defined SluiceTest::header($res, 'x-request-id');
	push @why, 'a 405 without an Allow header'
		if $status == 405 && !defined SluiceTest::header($res, 'allow');
	return @why ? _fail($what, @why) : 1;
}

# Check one answer; true when it matches.  $res as SluiceTest::http returns
# it (json decoded), $method and $path as sent.
sub check {
	my ($res, $method, $path) = @_;
	return 1 if !defined $method || !defined $path || $res->{status} !~ /^\d{3}$/
	    || $res->{status} == 599;    # no answer at all (HTTP::Tiny)
	_load();
	my $status = $res->{status};
	my $m = lc $method;
	my $head = $m eq 'head';
	$m = 'get' if $head;
	my $what = uc($method) . " $path $status";
	my @t = templates_of($path);
	my ($template) = grep { $DOC->{paths}{$_}{$m} } @t;

	if (!defined $template) {
		# Not an operation: the path is unknown, or does not take the method.
		my $name = $SHARED{$status};
		return _fail($what, "no operation in the document, and $status is not a shared refusal")
			unless defined $name && $DOC->{components}{responses}{$name};
		my $resp = $DOC->{components}{responses}{$name};
		my $schema = $resp->{content}{'application/json'}
			&& $SCHEMA->get([ 'components', 'responses', $name, 'content',
					  'application/json', 'schema' ]);
		_check_headers($what, $status, $res) or return 0;
		return _check_answer($what, $resp, $res, $head,
			sub { $schema ? $SCHEMA->validate($res->{json}, $schema) : () });
	}
	my $responses = $DOC->{paths}{$template}{$m}{responses};
	my $resp = $responses->{$status} // $responses->{default};
	return _fail("$what ($template)", "the operation does not declare status $status")
		unless $resp;
	_check_headers("$what ($template)", $status, $res) or return 0;
	return _check_answer("$what ($template)", $resp, $res, $head, sub {
		$SCHEMA->validate_response([ $m, $template, $status ], {
			body => sub { { exists => 1, value => $res->{json},
					content_type => 'application/json' } } });
	});
}

1;
