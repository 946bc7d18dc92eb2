#!/usr/bin/perl
# JWT authentication (HS256 only) and permissions: GET /_test/whoami needs
# PLATFORM.READ, POST /_test/echo needs PLATFORM.WRITE.

use strict;
use warnings;

use Test::More;

use SluiceTest;

my $cid = env('SLUICE_DEMO_CUSTOMER_ID');
my $now = time;
my $HS256 = { alg => 'HS256', typ => 'JWT' };
my @RW = ('PLATFORM.READ', 'PLATFORM.WRITE');

# Claims of a valid demo token; an undef value drops the claim.
sub claims {
	my %c = (sub => 'jwt-test@example.com', customer_id => $cid,
		 customer_name => 'demo', permissions => [@RW],
		 iat => $now, exp => $now + 600, @_);
	delete $c{$_} for grep { !defined $c{$_} } keys %c;
	return \%c;
}

sub whoami { http(GET => '/_test/whoami', { auth => $_[0] }) }
sub echo   { http(POST => '/_test/echo', { auth => $_[0], json => { ping => 1 } }) }

sub whoami_is {
	my ($auth, $expect, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	json_response_is(whoami($auth), 200, $expect, $name);
}

sub unauthorized_ok {
	my ($res, $detail, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	json_response_is($res, 401, undef, $name);
	my $d = ref $res->{json} eq 'HASH' ? $res->{json}{detail} // '' : '';
	if (ref $detail) {
		like($d, $detail, "$name: detail");
	} else {
		is($d, $detail, "$name: detail");
	}
	is(header($res, 'www-authenticate'), 'Bearer', "$name: WWW-Authenticate: Bearer");
}

# --- our signer agrees with the server ----------------------------------
# Without this, every "bad token" below could be refused for the wrong
# reason and the tests would prove nothing.

my $good = craft_jwt($HS256, claims());
whoami_is($good, { sub => 'jwt-test@example.com', customer_id => $cid,
		   customer_name => 'demo', permissions => [@RW] },
	  'crafted HS256 token (raw)');
json_response_is(echo("Bearer $good"), 200, { echo => { ping => 1 } },
		 'crafted HS256 token on echo');

# Clock skew: exp and nbf within jwt_leeway (30 s) are still fine.
is(whoami(craft_jwt($HS256, claims(exp => $now - 5)))->{status}, 200,
   'exp 5 s ago is inside the leeway');
is(whoami(craft_jwt($HS256, claims(nbf => $now + 5)))->{status}, 200,
   'nbf 5 s ahead is inside the leeway');

# --- 401: no credentials -------------------------------------------------

for my $route ([ whoami => \&whoami ], [ echo => \&echo ]) {
	my ($name, $call) = @$route;
	unauthorized_ok($call->(undef), 'Not authenticated', "$name without Authorization");
}

# --- 401: bad tokens -----------------------------------------------------

my $other_secret = 'not-the-server-secret-but-long-enough-0123456789';
my ($h, $p, $s) = split /\./, $good;
my $tampered_payload = b64url(json_encode(claims(
	customer_id => '00000000-0000-4000-8000-000000000000')));
my $none = { alg => 'none', typ => 'JWT' };

my @bad = (
	[ 'abc'                          => 'abc' ],
	[ 'two parts'                    => 'a.b' ],
	[ 'three junk parts'             => 'a.b.c' ],
	[ 'Bearer and nothing'           => 'Bearer ' ],
	[ 'four parts'                   => "$good.x" ],
	[ 'expired an hour ago'          => craft_jwt($HS256, claims(iat => $now - 7200, exp => $now - 3600)) ],
	[ 'expired beyond the leeway'    => craft_jwt($HS256, claims(iat => $now - 600, exp => $now - 120)) ],
	[ 'alg none, empty signature'    => craft_jwt($none, claims(), undef, signature => '') ],
	[ 'alg none, with a signature'   => craft_jwt($none, claims()) ],
	[ 'alg None'                     => craft_jwt({ alg => 'None', typ => 'JWT' }, claims(), undef, signature => '') ],
	[ 'alg HS512 signed HS512'       => craft_jwt({ alg => 'HS512', typ => 'JWT' }, claims(), undef, hmac => 'sha512') ],
	[ 'alg HS512 signed HS256'       => craft_jwt({ alg => 'HS512', typ => 'JWT' }, claims()) ],
	[ 'no alg'                       => craft_jwt({ typ => 'JWT' }, claims()) ],
	[ 'signed with another secret'   => craft_jwt($HS256, claims(), $other_secret) ],
	[ 'tampered payload'             => "$h.$tampered_payload.$s" ],
	[ 'truncated signature'          => "$h.$p." . substr($s, 0, -2) ],
	[ 'no signature'                 => "$h.$p." ],
	[ 'exp missing'                  => craft_jwt($HS256, claims(exp => undef)) ],
	[ 'exp not a number'             => craft_jwt($HS256, claims(exp => 'tomorrow')) ],
	[ 'nbf in the future'            => craft_jwt($HS256, claims(nbf => $now + 600)) ],
	[ 'permissions not an array'     => craft_jwt($HS256, claims(permissions => 'PLATFORM.READ')) ],
	[ 'payload not JSON'             => craft_jwt($HS256, 'not json') ],
	[ 'header not JSON'              => craft_jwt('{"alg":"HS256"', claims()) ],
);

for my $case (@bad) {
	my ($name, $tok) = @$case;
	for my $prefix ('', 'Bearer ') {
		next if $prefix && $tok =~ /^Bearer/;
		my $label = ($prefix ? 'Bearer ' : 'raw ') . $name;
		unauthorized_ok(whoami("$prefix$tok"), qr/^Invalid token: \S/, "whoami, $label");
		unauthorized_ok(echo("$prefix$tok"), qr/^Invalid token: \S/, "echo, $label");
	}
}

# --- 403: valid token, permission lacking ---------------------------------

my %forbidden = (
	READ  => { detail => 'Missing permission PLATFORM.READ' },
	WRITE => { detail => 'Missing permission PLATFORM.WRITE' },
);

my $empty = token(permissions => '');
is_deeply(jwt_payload($empty)->{permissions}, [], '--permissions "" gives an empty array');
json_response_is(whoami($empty), 403, $forbidden{READ}, 'whoami without permissions');
json_response_is(echo($empty), 403, $forbidden{WRITE}, 'echo without permissions');

my $read = token(permissions => 'PLATFORM.READ');
is(whoami($read)->{status}, 200, 'whoami with PLATFORM.READ');
json_response_is(echo($read), 403, $forbidden{WRITE}, 'echo with PLATFORM.READ only');

my $write = token(permissions => 'PLATFORM.WRITE');
json_response_is(whoami($write), 403, $forbidden{READ}, 'whoami with PLATFORM.WRITE only');
json_response_is(echo($write), 200, { echo => { ping => 1 } }, 'echo with PLATFORM.WRITE');

my $storage = token(permissions => 'STORAGE_EXPLORER.READ,STORAGE_EXPLORER.WRITE');
json_response_is(whoami($storage), 403, $forbidden{READ}, 'whoami with storage permissions only');
json_response_is(echo($storage), 403, $forbidden{WRITE}, 'echo with storage permissions only');

json_response_is(whoami(craft_jwt($HS256, claims(permissions => []))), 403,
		 $forbidden{READ}, 'crafted token with an empty permission list');

# --- 200: minted tokens ----------------------------------------------------

my $alice = token(sub => 'alice@example.com', permissions => [@RW]);
my $expect = { sub => 'alice@example.com', customer_id => $cid,
	       customer_name => 'demo', permissions => [@RW] };
whoami_is($alice, $expect, 'minted token, raw');
whoami_is("Bearer $alice", $expect, 'minted token, Bearer prefix');
json_response_is(echo("Bearer $alice"), 200, { echo => { ping => 1 } },
		 'minted token on echo');

my $demo = env('SLUICE_DEMO_TOKEN');
my $dp = jwt_payload($demo);
is($dp->{customer_id}, $cid, 'demo token is for the demo customer');
is_deeply([ sort @{ $dp->{permissions} } ],
	  [qw(PLATFORM.READ PLATFORM.WRITE STORAGE_EXPLORER.READ STORAGE_EXPLORER.WRITE)],
	  'demo token permissions');
whoami_is("Bearer $demo", { sub => $dp->{sub}, customer_id => $cid,
			    customer_name => 'demo', permissions => $dp->{permissions} },
	  'demo token');

my $ttl = 120;
my $before = time;
my $short = token(ttl => $ttl, permissions => 'PLATFORM.READ');
my $sp = jwt_payload($short);
ok(defined $sp->{exp} && defined $sp->{iat}, 'minted token has iat and exp');
is($sp->{exp} - $sp->{iat}, $ttl, "exp = iat + $ttl");
cmp_ok(abs($sp->{exp} - ($before + $ttl)), '<=', 5, "exp is about now + $ttl");
is(whoami($short)->{status}, 200, "token with --ttl $ttl works");

# The scriptable form: both customer claims given, no database lookup.
my $direct = run_cmd([ env('SLUICE_BIN'), 'token', '--config', env('SLUICE_CONF'),
		       '--customer-id', $cid, '--customer-name', 'demo',
		       '--sub', 'ops@example.com', '--permissions', 'PLATFORM.READ',
		       '--ttl', 300 ]);
is($direct->{exit}, 0, 'token --customer-id --customer-name exits 0') or diag $direct->{err};
(my $dt = $direct->{out}) =~ s/\s+\z//;
whoami_is($dt, { sub => 'ops@example.com', customer_id => $cid,
		 customer_name => 'demo', permissions => ['PLATFORM.READ'] },
	  'token minted with --customer-id and --customer-name');
my $dtp = jwt_payload($dt);
is($dtp->{exp} - $dtp->{iat}, 300, 'its exp = iat + --ttl');

my $half = run_cmd([ env('SLUICE_BIN'), 'token', '-c', env('SLUICE_CONF'),
		     '--customer-id', $cid ]);
is($half->{exit}, 2, '--customer-id without --customer-name is a usage error');
is($half->{out}, '', 'and prints no token');

my $typo = run_cmd([ env('SLUICE_BIN'), 'token', '-c', env('SLUICE_CONF'),
		     '--customer', 'demo', '--permissions', 'PLATFORM.RAED' ]);
is($typo->{exit}, 2, 'an unknown permission name is a usage error');
like($typo->{err}, qr/unknown permission 'PLATFORM\.RAED'/, 'naming the permission');
is($typo->{out}, '', 'and prints no token');

my $unknown = run_cmd([ env('SLUICE_BIN'), 'token', '-c', env('SLUICE_CONF'),
			'--customer', "no-such-customer-$$" ]);
is($unknown->{exit}, 1, 'token for an unknown customer exits 1');
is($unknown->{out}, '', 'and prints no token');

done_testing();
