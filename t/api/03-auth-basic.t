#!/usr/bin/perl
# HTTP Basic authentication on GET /_test/basic, and the `sluice user`
# commands that manage the credentials.

use strict;
use warnings;

use MIME::Base64 qw(encode_base64);
use Test::More;

use SluiceTest;

my ($demo_user, $demo_pw) = split /:/, env('SLUICE_DEMO_BASIC'), 2;
my $name = "apitest_${$}_" . time;
my $created = 0;

# The users this file creates are removed again, whatever happens.
END {
	local ($?, $@);
	eval { mysql("DELETE FROM api_users WHERE name = '$name'") } if $created;
}

sub basic { http(GET => '/_test/basic', { auth => $_[0] }) }
sub creds { 'Basic ' . encode_base64($_[0], '') }

sub unauthorized_ok {
	my ($res, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	json_response_is($res, 401, undef, $name);
	ok(ref $res->{json} eq 'HASH' && length($res->{json}{detail} // ''),
	   "$name: detail says why");
	is(header($res, 'www-authenticate'), 'Basic realm="sluice"',
	   "$name: WWW-Authenticate: Basic realm=\"sluice\"");
}

sub user_cmd {
	my ($verb, $user, $password, @opts) = @_;
	return run_cmd([ env('SLUICE_BIN'), 'user', $verb, $user,
			 '-c', env('SLUICE_CONF'), @opts ],
		       stdin => "$password\n");
}

# --- the demo user ---------------------------------------------------------

my $res = basic(creds(env('SLUICE_DEMO_BASIC')));
json_response_is($res, 200, undef, 'demo credentials');
is_deeply([ sort keys %{ $res->{json} || {} } ], [qw(user user_id)],
	  'body holds user and user_id');
is($res->{json}{user}, $demo_user, 'user is the demo user');
like($res->{json}{user_id} // '', qr/^[1-9]\d*$/, 'user_id is a positive integer');
my $demo_id = $res->{json}{user_id} // 0;

# The scheme name is case-insensitive (RFC 7617).
is(basic('basic ' . encode_base64(env('SLUICE_DEMO_BASIC'), ''))->{status}, 200,
   'lower-case scheme name');

# --- 401 -------------------------------------------------------------------

unauthorized_ok(basic(undef), 'no Authorization header');
unauthorized_ok(basic(creds("$demo_user:$demo_pw-wrong")), 'wrong password');
unauthorized_ok(basic(creds("$demo_user:")), 'empty password');
unauthorized_ok(basic(creds("no-such-user-$$:$demo_pw")), 'unknown user');
unauthorized_ok(basic('Basic'), 'scheme without credentials');
unauthorized_ok(basic('Basic !!!not-base64!!!'), 'credentials not base64');
unauthorized_ok(basic(creds('no-colon-here')), 'credentials without a colon');
unauthorized_ok(basic(creds(":$demo_pw")), 'empty user name');
unauthorized_ok(basic('Bearer ' . env('SLUICE_DEMO_TOKEN')), 'a bearer token');
unauthorized_ok(basic(env('SLUICE_DEMO_BASIC')), 'user:password not encoded');

# Workers cache a successful check, keyed by user and password: right after
# the demo user passed (on either worker), a wrong password must still fail.
for my $i (1 .. 4) {
	is(basic(creds(env('SLUICE_DEMO_BASIC')))->{status}, 200, "demo credentials again ($i)");
	is(basic(creds("$demo_user:x$demo_pw"))->{status}, 401, "then a wrong password ($i)");
}

# --- a new user --------------------------------------------------------------

# A colon and a space in the password: only the first colon of the Basic
# credentials separates user and password.
my $pw = 'first:pass word';
my $r = user_cmd('add', $name, $pw);
is($r->{exit}, 0, "sluice user add $name") or diag $r->{err};
$created = 1;

$res = basic(creds("$name:$pw"));
json_response_is($res, 200, undef, 'new user authenticates');
is($res->{json}{user}, $name, 'user is the new user');
like($res->{json}{user_id} // '', qr/^[1-9]\d*$/, 'new user_id is a positive integer');
isnt($res->{json}{user_id}, $demo_id, 'new user has its own id');
my $new_id = $res->{json}{user_id};

my ($row) = mysql("SELECT id FROM api_users WHERE name = '$name'");
is($row && $row->[0], $new_id, 'user_id is the id of the stored user');

unauthorized_ok(basic(creds("$name:first")), 'new user, password cut at its colon');
unauthorized_ok(basic(creds("$name:$pw ")), 'new user, password with a trailing space');

$r = user_cmd('add', $name, 'other');
is($r->{exit}, 1, 'user add of an existing user exits 1');
$r = user_cmd('add', $name, 'other', '--if-missing');
is($r->{exit}, 0, 'user add --if-missing of an existing user exits 0') or diag $r->{err};
is(basic(creds("$name:$pw"))->{status}, 200, '--if-missing kept the password');

# --- passwd -------------------------------------------------------------------

my $pw2 = 'second-password-' . time;
$r = user_cmd('passwd', $name, $pw2);
is($r->{exit}, 0, "sluice user passwd $name") or diag $r->{err};

# The new password has never been checked, so no worker has it cached: it
# works at once.  The old one is not asserted here: a worker that verified
# it keeps accepting it for up to basic_cache_ttl (60 s by default), the
# price of not paying a full PBKDF2 per request.  Waiting that out would
# make this file a minute slower for little gain.
$res = basic(creds("$name:$pw2"));
json_response_is($res, 200, { user => $name, user_id => $new_id },
		 'new password works at once');
unauthorized_ok(basic(creds("$name:never-used-$$")), 'a never-used wrong password');

$r = user_cmd('passwd', "no-such-user-$$", 'x');
is($r->{exit}, 1, 'user passwd of an unknown user exits 1');

$r = user_cmd('add', 'has:colon', 'x');
is($r->{exit}, 2, 'a user name with a colon is a usage error');

done_testing();
