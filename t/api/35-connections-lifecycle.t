#!/usr/bin/perl
# What a user does with a connection after making it: PATCH it (a password
# rotated on the real source MariaDB: the run fails with the old one and
# succeeds, unchanged pipeline, once the connection has the new one; the
# password re-sealed, never answered or logged), try it with POST .../test
# against the real source MariaDB and PostgreSQL (server version; a wrong
# password, an unknown database, a closed port, a host that never answers
# and a plugin without a driver each named), page through the listing, and
# unknown query parameters refused on every connections route.  Another
# customer's connection answers 404 everywhere, as an unknown one.

use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use Test::More;

use SluiceTest;
use JdbcFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $demo_id = env('SLUICE_DEMO_CUSTOMER_ID');
my $tag = uniq_tag();
my $reader = token(customer => 'demo', permissions => 'PLATFORM.READ');

my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', 'conn-other',
		  '--if-missing', '-c', env('SLUICE_CONF') ]);
is($r->{exit}, 0, 'second customer exists') or diag $r->{err};
my $other = token(customer => 'conn-other', sub => 'o@example.com',
		  permissions => 'PLATFORM.READ,PLATFORM.WRITE');

my $nf = { detail => 'Connection not found' };
my $log_at = serve_log_offset();
my @secrets;    # every password this file sends: none may come back

sub patch {
	my ($id, $body, $tok) = @_;
	return http(PATCH => "/platform/connections/$id",
		    { token => $tok // $token, json => $body });
}

sub check {
	my ($id, $tok) = @_;
	return http(POST => "/platform/connections/$id/test",
		    { token => $tok // $token, timeout => 60 });
}

sub get_conn {
	my ($id) = @_;
	return http(GET => "/platform/connections/$id", { token => $token })->{json};
}

sub sealed_row {
	my ($id) = @_;
	my ($row) = mysql("SELECT HEX(password_enc), LENGTH(password_enc) FROM connections "
		. "WHERE id = '$id'");
	return $row;
}

# ==== rotating a password on the real source ===============================================

my $user = "rot_$tag";
my ($pw1, $pw2) = ("first-$tag-\x{21}pw", "second-$tag-pw");
push @secrets, $pw1, $pw2;
my $src = "rot_$tag";
src_sql("CREATE USER '$user'\@'127.0.0.1' IDENTIFIED BY '$pw1'; "
	. "GRANT SELECT ON source.* TO '$user'\@'127.0.0.1'; "
	. "CREATE TABLE $src (id INT PRIMARY KEY, v VARCHAR(20)); "
	. "INSERT INTO $src SELECT seq, CONCAT('v', seq) FROM seq_1_to_30");
my $res = http(POST => '/platform/connections', { token => $token, json => {
	name => "rotate-$tag", plugin => 'mariadb', host => '127.0.0.1',
	port => 0 + env('SLUICE_SOURCE_PORT'), database => 'source', user => $user,
	password => $pw1, options => { note => 'kept' } } });
is($res->{status}, 201, 'a connection for a user of the source') or diag describe($res);
my $cid = $res->{json}{connection_id};
my $created = $res->{json};
my $p = make_pipeline($token, connection_id => $cid, table => $src,
	dest_schema => "t35_$tag", dest_table => 'rot', load_type => 'full_load');
my $run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'a run with the first password: SUCCESS');
is($run->{rows_loaded}, 30, '... 30 rows');

my $version = src_sql('SELECT VERSION()');
$res = check($cid);
json_response_is($res, 200, { connection_id => $cid, status => 'CONNECTED',
	plugin => 'mariadb', server_version => $version },
	'test: 200 with the source MariaDB\'s version');

# The source's administrator rotates the password.
src_sql("ALTER USER '$user'\@'127.0.0.1' IDENTIFIED BY '$pw2'");
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'FAILED', 'after the rotation the run with the old password fails');
ok((grep { $_->{level} eq 'ERROR' && $_->{message} =~ /Access denied for user '\Q$user\E'/ }
	run_logs($token, $run->{run_id})), '... with the server\'s refusal in its log');

$res = check($cid);
is($res->{status}, 422, 'test with the old password: 422') or diag describe($res);
is($res->{json}{detail}{error}, 'auth_refused', '... error auth_refused');
like($res->{json}{detail}{message},
     qr/^cannot connect to MariaDB at 127\.0\.0\.1:\d+: Access denied for user '\Q$user\E'/,
     '... message with the server\'s words');

my $before = sealed_row($cid);
$res = patch($cid, { password => $pw2 });
is($res->{status}, 200, 'PATCH the new password: 200') or diag describe($res);
my %want = %$created;
delete $want{updated_at};
my %got = %{ $res->{json} || {} };
my $updated_at = delete $got{updated_at};
is_deeply(\%got, \%want, '... the connection as before, no password field');
iso_time_ok($updated_at, '... updated_at');
ok($updated_at ge $created->{updated_at}, '... updated_at not before the create');
my $after = sealed_row($cid);
isnt($after->[0], $before->[0], 'the stored password changed');
is($after->[1], length($pw2) + 28, '... sealed: nonce, tag and the new password\'s bytes');
unlike($after->[0], qr/\Q@{[ unpack('H*', $pw2) ]}\E/i, '... not in clear');
is_deeply(get_conn($cid), $res->{json}, 'GET answers the same object');

$res = check($cid);
is($res->{status}, 200, 'test with the new password: 200') or diag describe($res);
is($res->{json}{server_version}, $version, '... server_version');
$run = run_and_wait($token, $p->{pipeline_id});
is($run->{status}, 'SUCCESS', 'the next run, same pipeline, uses the new password: SUCCESS');
is($run->{rows_loaded}, 30, '... 30 rows');

# ==== PATCH: every field, bounds as at create, refusals ======================================

$res = http(POST => '/platform/connections', { token => $token, json => {
	name => "edit-$tag", plugin => 'postgres', host => 'db.internal', port => 5432,
	database => 'shop', user => 'etl', password => "edit-pw-$tag" } });
is($res->{status}, 201, 'set-up: a second connection') or diag describe($res);
push @secrets, "edit-pw-$tag";
my $eid = $res->{json}{connection_id};
my $seal_e = sealed_row($eid)->[0];

$res = patch($eid, { host => '127.0.0.1', port => 0 + env('SLUICE_PG_PORT'),
		     database => 'source', user => 'source',
		     options => { sslmode => 'prefer' } });
is($res->{status}, 200, 'PATCH host, port, database, user and options') or diag describe($res);
is_deeply([ @{ $res->{json} }{qw(host port database user plugin name)} ],
	  [ '127.0.0.1', 0 + env('SLUICE_PG_PORT'), 'source', 'source', 'postgres', "edit-$tag" ],
	  '... each changed, the others kept');
is_deeply($res->{json}{options}, { sslmode => 'prefer' }, '... options replaced');
is(sealed_row($eid)->[0], $seal_e, '... the password, not sent, is untouched');
is(patch($eid, { name => undef, user => 'source' })->{status}, 200, 'name null');
is(get_conn($eid)->{name}, "edit-$tag", '... keeps the name');
is(patch($eid, { options => undef })->{status}, 200, 'options null');
is_deeply(get_conn($eid)->{options}, {}, '... clears them');

$res = check($eid);
is($res->{status}, 422, 'PostgreSQL with a wrong password: 422') or diag describe($res);
is($res->{json}{detail}{error}, 'auth_refused', '... auth_refused');
like($res->{json}{detail}{message}, qr/^cannot connect to PostgreSQL at 127\.0\.0\.1:\d+: .*password authentication failed/,
     '... libpq\'s words');
push @secrets, env('SLUICE_PG_PASSWORD');
is(patch($eid, { password => env('SLUICE_PG_PASSWORD') })->{status}, 200, 'PATCH its password');
$res = check($eid);
json_response_is($res, 200, { connection_id => $eid, status => 'CONNECTED', plugin => 'postgres',
	server_version => scalar pg_sql('SHOW server_version') },
	'test: 200 with the source PostgreSQL\'s version');

$res = patch($eid, { database => "nodb_$tag" });
$res = check($eid);
is($res->{json}{detail}{error}, 'database_unknown', 'an unknown database: database_unknown')
	or diag describe($res);
is($res->{status}, 422, '... 422');

json_response_is(patch($eid, { plugin => 'mariadb' }), 409,
	{ detail => 'A connection\'s database kind cannot change (its jobs are built for its '
		. 'dialect): create a new connection instead' }, 'postgres -> mariadb: 409');
is(get_conn($eid)->{plugin}, 'postgres', '... still postgres');
is(patch($eid, { plugin => 'postgres', name => "edit2-$tag" })->{status}, 200,
   'the same plugin again is fine');
is(get_conn($eid)->{name}, "edit2-$tag", '... and the name changed');
$res = patch($cid, { plugin => 'mysql' });
is($res->{status}, 200, 'mariadb -> mysql (one driver): 200') or diag describe($res);
is($res->{json}{plugin}, 'mysql', '... plugin mysql');
is(patch($cid, { plugin => 'mariadb' })->{status}, 200, '... and back');
json_response_is(patch($cid, { name => "edit2-$tag" }), 409,
	{ detail => 'A connection with this name already exists' }, 'a name in use: 409');

my @bad = (
	[ { port => 65536 }, 'port must be an integer from 1 to 65535' ],
	[ { port => 0 }, 'port must be an integer from 1 to 65535' ],
	[ { host => 'h' x 256 }, qr/^host / ],
	[ { password => 'p' x 1025 }, qr/^password / ],
	[ { plugin => 'db2' }, qr/^plugin / ],
	[ { name => '' }, qr/^name / ],
	[ { colour => 'red' }, 'colour is not a known field' ],
	[ {}, 'The body names no field to change' ],
);
for my $b (@bad) {
	my ($body, $want) = @$b;
	$res = patch($cid, $body);
	is($res->{status}, 400, 'PATCH ' . json_encode($body) . ': 400');
	if (ref $want) { like($res->{json}{detail} // '', $want, '... names the field') }
	else { is($res->{json}{detail}, $want, "... $want") }
}
is(patch($cid, { password => 'p' x 1024 })->{status}, 200, 'a 1024-byte password, as at create');
is(sealed_row($cid)->[1], 1052, '... stored whole');
push @secrets, 'p' x 1024;
is(patch($cid, { password => $pw2 })->{status}, 200, 'and back to the real one');
is(check($cid)->{status}, 200, '... which still connects');

# ==== test: failures of the network ========================================================

# A port nothing listens on.
my $probe = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 1)
	or die "listen: $!";
my $closed = $probe->sockport;
close $probe;
is(patch($cid, { port => $closed })->{status}, 200, 'set-up: the connection on a closed port');
$res = check($cid);
is($res->{status}, 422, 'a closed port: 422') or diag describe($res);
is($res->{json}{detail}{error}, 'host_unreachable', '... host_unreachable');
like($res->{json}{detail}{message}, qr/^cannot connect to MariaDB at 127\.0\.0\.1:$closed: /,
     '... naming host and port');

# A host that accepts the TCP connection and never says a word.
my $silent = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 8)
	or die "listen: $!";
is(patch($cid, { port => $silent->sockport })->{status}, 200,
   'set-up: the connection on a port that never answers');
# Both workers hold several kept FastCGI connections (16 clients at once).
my @warm = parallel_requests(clients => 16, requests => 2, path => '/_test/sleep?ms=100');
is(scalar(grep { $_->{status} == 200 } @warm), 32, 'set-up: 32 requests on 16 connections');
# While one test waits on it, the test stack's two workers have no second
# test share (a quarter of the pool, at least one): another test answers
# 429 at once instead of taking the other worker too.
my $bg = start_requests(clients => 1, requests => 1, method => 'POST',
	path => "/platform/connections/$cid/test", opts => { token => $token, timeout => 60 });
ok(IO::Select->new($silent)->can_read(30), 'the test reached the silent server');
my $held = $silent->accept;
json_response_is(check($eid), 429,
	{ detail => 'Too many connection tests at once; try again shortly' },
	'a second test meanwhile: 429');
is(http(GET => "/platform/connections/$cid", { token => $token })->{status}, 200,
   '... and the other worker still answers the rest');
# nginx sends requests on any kept connection, those the waiting worker
# holds too: it handed them to the other worker before it began to wait, so
# none is held behind the test.  Were one held, it would be answered only
# after the test's timeout, once the test itself was.
my @meanwhile = parallel_requests(clients => 8, requests => 5, path => '/_test/pid');
is(scalar(grep { $_->{status} == 200 } @meanwhile), 40,
   '40 requests on 8 connections meanwhile: all 200');
my %pids = map { $_->{content} => 1 } @meanwhile;
is(scalar keys %pids, 1, '... all answered by the worker that is not waiting')
	or diag join ', ', sort keys %pids;
is($bg->answered, 0, '... while the test still waits');
($res) = $bg->finish;
is($res->{status}, 422, 'a silent server: 422 within the timeout') or diag describe($res);
is($res->{json}{detail}{error}, 'timeout', '... timeout');
close $held;
is(patch($eid, { port => $silent->sockport, database => 'source' })->{status}, 200,
   'set-up: PostgreSQL on the silent port');
$res = check($eid);
is($res->{json}{detail}{error}, 'timeout', 'PostgreSQL, a silent server: timeout')
	or diag describe($res);
close $silent;
is(patch($cid, { port => 0 + env('SLUICE_SOURCE_PORT') })->{status}, 200, 'the real port again');

$res = http(POST => '/platform/connections', { token => $token, json => {
	name => "ora-$tag", plugin => 'oracle', host => '127.0.0.1', port => 1521,
	database => 'x', user => 'x', password => 'x' } });
$res = check($res->{json}{connection_id});
json_response_is($res, 422, { detail => { error => 'driver_unavailable',
	message => 'driver not available: oracle, so the connection cannot be tested' } },
	'a plugin without a driver: 422 driver_unavailable');

# ==== isolation, permissions, ids ==============================================================

my $snap = get_conn($cid);
my $seal = sealed_row($cid)->[0];
json_response_is(patch($cid, { password => 'stolen', host => 'evil.example' }, $other), 404,
		 $nf, 'PATCH another customer\'s connection: 404');
is_deeply(get_conn($cid), $snap, '... nothing changed');
is(sealed_row($cid)->[0], $seal, '... not the password either');
json_response_is(check($cid, $other), 404, $nf,
		 'test another customer\'s connection: 404, as unknown');
my $unknown = '0f8fad5b-d9cb-469f-a165-70867728950e';
json_response_is(patch($unknown, { name => 'x' }), 404, $nf, 'PATCH unknown: 404');
json_response_is(check($unknown), 404, $nf, 'test unknown: 404');
json_response_is(check('not-a-uuid'), 404, $nf, 'test malformed: 404');
(my $us = uc $cid) =~ tr/-/_/;
is(check($us)->{status}, 200, 'test accepts upper case and underscores');
is(patch($cid, { name => 'x' }, $reader)->{status}, 403, 'PATCH needs PLATFORM.WRITE');
is(check($cid, $reader)->{status}, 403, 'test needs PLATFORM.WRITE');
is(http(POST => "/platform/connections/$cid/test")->{status}, 401, 'test without a token: 401');

# ==== unknown query parameters, on every connections route ===================================

my @routes = (
	[ GET => '/platform/connections' ],
	[ POST => '/platform/connections', { name => "q-$tag", plugin => 'mariadb', host => 'h',
		port => 1, database => 'd', user => 'u', password => 'p' } ],
	[ GET => "/platform/connections/$cid" ],
	[ PATCH => "/platform/connections/$cid", { name => "rotate-$tag" } ],
	[ POST => "/platform/connections/$cid/test" ],
	[ DELETE => "/platform/connections/$cid" ],
);
for my $rt (@routes) {
	my ($m, $path, $body) = @$rt;
	json_response_is(http($m => "$path?colour=red", { token => $token,
		defined $body ? (json => $body) : () }), 400,
		{ detail => 'colour is not a known query parameter' }, "$m $path?colour=red: 400");
}
is(get_conn($cid)->{connection_id}, $cid, 'the refused DELETE deleted nothing');

# ==== listing pages ============================================================================

my $pager = "conn-pages-$tag";
$r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', $pager, '-c', env('SLUICE_CONF') ]);
is($r->{exit}, 0, 'a customer of its own for the pages') or diag $r->{err};
my $pt = token(customer => $pager, permissions => 'PLATFORM.READ,PLATFORM.WRITE');
for my $i (1 .. 5) {
	is(http(POST => '/platform/connections', { token => $pt, json => {
		name => "page-$i", plugin => 'mariadb', host => 'h', port => 1,
		database => 'd', user => 'u', password => 'p' } })->{status}, 201, "page-$i made");
}
$res = http(GET => '/platform/connections', { token => $pt });
is(ref $res->{json}, 'ARRAY', 'no paging parameter: the bare array, as before');
my @all = map { $_->{connection_id} } @{ $res->{json} };
is(scalar @all, 5, '... all five');
is_deeply([ map { $_->{name} } @{ $res->{json} } ], [ map { "page-$_" } 1 .. 5 ], '... by name');

my @seen;
for my $pg (1 .. 3) {
	$res = http(GET => "/platform/connections?page=$pg&limit=2", { token => $pt });
	is($res->{status}, 200, "page $pg of limit 2") or diag describe($res);
	is_deeply($res->{json}{pagination}, { current_page => $pg, total_pages => 3, total_items => 5,
		items_per_page => 2, has_next => ($pg < 3 ? JSON::PP::true : JSON::PP::false),
		has_previous => ($pg > 1 ? JSON::PP::true : JSON::PP::false) },
		"... its Pagination object");
	push @seen, map { $_->{connection_id} } @{ $res->{json}{connections} };
}
is_deeply(\@seen, \@all, 'the pages together: every connection once, in order');
$res = http(GET => '/platform/connections?page=4&limit=2', { token => $pt });
is_deeply($res->{json}{connections}, [], 'past the last page: none');
ok(!$res->{json}{pagination}{has_next}, '... has_next false');
$res = http(GET => '/platform/connections?limit=3', { token => $pt });
is(scalar @{ $res->{json}{connections} }, 3, 'limit alone: page 1');
$res = http(GET => '/platform/connections?page=1', { token => $pt });
is($res->{json}{pagination}{items_per_page}, 20, 'page alone: limit 20');
is(scalar @{ $res->{json}{connections} }, 5, '... all five');
for my $q ('limit=0', 'limit=101', 'page=0', 'page=x', 'page=1&page=2') {
	$res = http(GET => "/platform/connections?$q", { token => $pt });
	is($res->{status}, 400, "?$q: 400") or diag describe($res);
	like($res->{json}{detail} // '', qr/^(page|limit) /, '... names the parameter');
}
is(http(GET => '/platform/connections?limit=100', { token => $pt })->{status}, 200, 'limit=100');
$res = http(GET => '/platform/connections?limit=100', { token => $other });
ok(!(grep { $_->{customer_id} ne $res->{json}{connections}[0]{customer_id} }
	@{ $res->{json}{connections} }), 'another customer\'s page: only its own');
ok(!(grep { $_->{connection_id} eq $cid } @{ $res->{json}{connections} }), '... not ours');

# ==== never answered, never logged ===============================================================

my $logged = serve_log_since($log_at);
ok(length $logged, 'the serve log has lines for these requests');
for my $s (@secrets) {
	unlike($logged, qr/\Q$s\E/, 'no password in the serve log (' . length($s) . ' bytes)');
}

http(DELETE => "/platform/pipeline/$p->{pipeline_id}",
     { token => $token, headers => { customer_name => 'demo' } });
src_sql("DROP USER '$user'\@'127.0.0.1'; DROP TABLE $src");
wh_sql('DROP SCHEMA IF EXISTS `' . wh_schema($demo_id, "t35_$tag") . '`');
done_testing();
