#!/usr/bin/perl
# POST/GET/DELETE /platform/connections: every field of the answers, each
# bound at its maximum and one past it, duplicate names, customer isolation,
# the password sealed at rest (never answered, never logged), and a
# connection a job uses that cannot be deleted.

use strict;
use warnings;

use Test::More;

use SluiceTest;

my $token = env('SLUICE_DEMO_TOKEN');
my $demo_id = env('SLUICE_DEMO_CUSTOMER_ID');
my $PASSWORD = 'pw-' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 24) . '!';

# A second customer, to prove isolation.
my $r = run_cmd([ env('SLUICE_BIN'), 'customer', 'add', 'conn-other',
		  '--if-missing', '-c', env('SLUICE_CONF') ]);
is($r->{exit}, 0, 'second customer exists') or diag $r->{err};
my $other = token(customer => 'conn-other', sub => 'o@example.com',
		  permissions => 'PLATFORM.READ,PLATFORM.WRITE');
my $reader = token(customer => 'demo', permissions => 'PLATFORM.READ');

my $uuid_re = qr/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
my $n = 0;
my $tag = "$$-" . time;     # names unique per run, so the file can be re-run

sub conn_body {
	my (%o) = @_;
	return { name => 'conn-' . $$ . '-' . ++$n, plugin => 'postgres',
		 host => 'db.internal', port => 5432, database => 'shop',
		 user => 'etl', password => $PASSWORD, %o };
}

sub create {
	my ($body, $tok) = @_;
	return http(POST => '/platform/connections',
		    { token => $tok // $token, json => $body });
}

# --- create: the answer, field by field ---------------------------------------

my $log_at = serve_log_offset();
my $body = conn_body(name => "orders-db-$tag", options => { sslmode => 'require', connect_timeout => 5 });
my $res = create($body);
json_response_is($res, 201, undef, 'create a connection');
my $c = $res->{json};
like($c->{connection_id}, $uuid_re, 'connection_id is a lowercase UUID');
is($c->{customer_id}, $demo_id, 'customer_id is the token\'s customer');
is($c->{name}, "orders-db-$tag", 'name');
is($c->{plugin}, 'postgres', 'plugin');
is($c->{host}, 'db.internal', 'host');
is($c->{port}, 5432, 'port is a number');
ok(!ref $c->{port} && $res->{content} =~ /"port":5432\b/, 'port is a JSON number');
is($c->{database}, 'shop', 'database');
is($c->{user}, 'etl', 'user');
is_deeply($c->{options}, { sslmode => 'require', connect_timeout => 5 }, 'options');
iso_time_ok($c->{created_at}, 'created_at');
iso_time_ok($c->{updated_at}, 'updated_at');
is_deeply([ sort keys %$c ],
	  [ sort qw(connection_id customer_id name plugin host port database user
		    options created_at updated_at) ], 'exactly these fields');
unlike($res->{content}, qr/password|\Q$PASSWORD\E/, 'no password in the answer');
my $id = $c->{connection_id};

# What the database holds: sealed bytes, the right length, no plaintext.
my ($row) = mysql("SELECT LENGTH(password_enc), HEX(password_enc), customer_id,"
		  . " database_name, user_name FROM connections WHERE id = '$id'");
is($row->[0], length($PASSWORD) + 28, 'stored as nonce + tag + ciphertext');
my $plain_hex = uc unpack('H*', $PASSWORD);
unlike($row->[1], qr/\Q$plain_hex\E/, 'the stored bytes are not the password');
is_deeply([ @$row[2 .. 4] ], [ $demo_id, 'shop', 'etl' ], 'stored columns');

# The same password sealed twice differs (a fresh nonce per value).
$res = create(conn_body(name => "orders-db-2-$tag"));
is($res->{status}, 201, 'a second connection with the same password');
my $id2 = $res->{json}{connection_id};
my ($h1) = mysql("SELECT HEX(password_enc) FROM connections WHERE id = '$id'");
my ($h2) = mysql("SELECT HEX(password_enc) FROM connections WHERE id = '$id2'");
isnt($h1->[0], $h2->[0], 'two seals of one password differ');

# Without options: an empty object.
$res = create(conn_body(name => "no-options-$tag", plugin => 'sqlserver', port => 1433));
is($res->{status}, 201, 'options are optional');
is_deeply($res->{json}{options}, {}, 'absent options read as {}');
$res = create(conn_body(name => "null-options-$tag", options => undef));
is($res->{status}, 201, 'options may be null');
is_deeply($res->{json}{options}, {}, 'null options read as {}');

# Every plugin of the four database kinds.
for my $p (qw(postgres mysql mariadb oracle sqlserver)) {
	is(create(conn_body(name => "plugin-$p-$tag", plugin => $p))->{status}, 201,
	   "plugin $p accepted");
}

# An empty password is a password (trust authentication).
$res = create(conn_body(name => "empty-pw-$tag", password => ''));
is($res->{status}, 201, 'an empty password is accepted');
my ($erow) = mysql("SELECT LENGTH(password_enc) FROM connections WHERE id = '"
		   . $res->{json}{connection_id} . "'");
is($erow->[0], 28, 'an empty password seals to the overhead alone');

# --- duplicate names ---------------------------------------------------------------

json_response_is(create(conn_body(name => "orders-db-$tag")), 409,
		 { detail => 'A connection with this name already exists' },
		 'duplicate name for the same customer');
is(create(conn_body(name => "orders-db-$tag"), $other)->{status}, 201,
   'the same name for another customer is fine');

# --- bounds and validation: 400 naming the field ------------------------------------

my @bad = (
	[ 'name missing', { name => undef }, 'name is required' ],
	[ 'name empty', { name => '' }, 'name must be 1 to 255 characters long' ],
	[ 'name 256', { name => 'n' x 256 }, 'name must be 1 to 255 characters long' ],
	[ 'name not a string', { name => 5 }, 'name must be a string' ],
	[ 'plugin missing', { plugin => undef }, 'plugin is required' ],
	[ 'plugin unknown', { plugin => 'db2' },
	  'plugin must be one of postgres, mysql, mariadb, oracle, sqlserver' ],
	[ 'plugin case', { plugin => 'Postgres' },
	  'plugin must be one of postgres, mysql, mariadb, oracle, sqlserver' ],
	[ 'host missing', { host => undef }, 'host is required' ],
	[ 'host empty', { host => '' }, 'host must be 1 to 255 characters long' ],
	[ 'host 256', { host => 'h' x 256 }, 'host must be 1 to 255 characters long' ],
	[ 'port missing', { port => undef }, 'port is required' ],
	[ 'port 0', { port => 0 }, 'port must be an integer from 1 to 65535' ],
	[ 'port 65536', { port => 65536 }, 'port must be an integer from 1 to 65535' ],
	[ 'port string', { port => '5432' }, 'port must be an integer' ],
	[ 'port fraction', { port => 5432.5 }, 'port must be an integer' ],
	[ 'database missing', { database => undef }, 'database is required' ],
	[ 'database 256', { database => 'd' x 256 },
	  'database must be 1 to 255 characters long' ],
	[ 'user missing', { user => undef }, 'user is required' ],
	[ 'user 256', { user => 'u' x 256 }, 'user must be 1 to 255 characters long' ],
	[ 'password missing', { password => undef }, 'password is required' ],
	[ 'password 1025', { password => 'p' x 1025 },
	  'password must be 0 to 1024 bytes long' ],
	[ 'password not a string', { password => [ 'x' ] }, 'password must be a string' ],
	[ 'options not an object', { options => [ 1 ] }, 'options must be an object' ],
	[ 'unknown field', { passwd => 'x' }, 'passwd is not a known field' ],
);
for my $t (@bad) {
	my ($what, $change, $detail) = @$t;
	my $b = conn_body(%$change);
	delete $b->{$_} for grep { exists $change->{$_} && !defined $change->{$_} }
		keys %$change;
	json_response_is(create($b), 400, { detail => $detail }, "400: $what");
}
$res = create(conn_body(password => "a\0b"));
is($res->{status}, 400, '400: a password with NUL');
like($res->{json}{detail} // '', qr/\\u0000/, '... the body names the NUL');
json_response_is(http(POST => '/platform/connections',
		      { token => $token, json => [ 1 ] }), 400,
		 { detail => 'The body must be a JSON object' }, '400: an array body');

# At the maximum: accepted.
$res = create(conn_body(name => substr("max-$$-" . 'n' x 255, 0, 255), host => 'h' x 255,
			database => 'd' x 255, user => 'u' x 255,
			password => 'p' x 1024, port => 65535));
is($res->{status}, 201, 'every field at its maximum') or diag describe($res);
my ($max) = mysql("SELECT LENGTH(password_enc) FROM connections WHERE id = '"
		  . ($res->{json}{connection_id} // '') . "'");
is($max->[0], 1052, 'a 1024-byte password is stored whole');
is(create(conn_body(name => substr("$tag-" . "\x{e9}" x 255, 0, 255)))->{status}, 201,
   'name bounds count characters, not bytes');
is(create(conn_body(name => "port-one-$tag", port => 1))->{status}, 201, 'port 1');

# --- list and get ---------------------------------------------------------------------

$res = http(GET => '/platform/connections', { token => $reader });
json_response_is($res, 200, undef, 'list with PLATFORM.READ');
is(ref $res->{json}, 'ARRAY', 'the list is an array');
my @names = grep { /^[a-z0-9-]+$/ } map { $_->{name} } @{ $res->{json} };
is_deeply(\@names, [ sort @names ], 'ordered by name');
ok((grep { $_->{connection_id} eq $id } @{ $res->{json} }), 'the new connection is listed');
ok(!(grep { $_->{customer_id} ne $demo_id } @{ $res->{json} }), 'only the caller\'s');
unlike($res->{content}, qr/password|\Q$PASSWORD\E/, 'no password in the list');
my ($count) = mysql("SELECT COUNT(*) FROM connections WHERE customer_id = '$demo_id'");
is(scalar @{ $res->{json} }, $count->[0], 'all of them');

$res = http(GET => "/platform/connections/$id", { token => $reader });
json_response_is($res, 200, $c, 'get one: the same object as create');
(my $us = $id) =~ tr/-/_/;
json_response_is(http(GET => "/platform/connections/\U$us", { token => $reader }), 200,
		 $c, 'get accepts upper case and underscores');

my $nf = { detail => 'Connection not found' };
json_response_is(http(GET => '/platform/connections/0f8fad5b-d9cb-469f-a165-70867728950e',
		      { token => $token }), 404, $nf, 'get unknown');
json_response_is(http(GET => '/platform/connections/not-a-uuid', { token => $token }),
		 404, $nf, 'get malformed');
json_response_is(http(GET => "/platform/connections/$id", { token => $other }), 404,
		 $nf, 'get another customer\'s');
my $ol = http(GET => '/platform/connections', { token => $other });
ok(!(grep { $_->{connection_id} eq $id } @{ $ol->{json} || [] }),
   'another customer\'s list does not show it');

# --- permissions -------------------------------------------------------------------------

is(http(GET => '/platform/connections')->{status}, 401, 'no token: 401');
json_response_is(http(GET => '/platform/connections?name=x', { token => $token }), 400,
	{ detail => 'name is not a known query parameter' }, 'list: unknown query parameter');
is(create(conn_body(), $reader)->{status}, 403, 'create needs PLATFORM.WRITE');
is(http(DELETE => "/platform/connections/$id", { token => $reader })->{status}, 403,
   'delete needs PLATFORM.WRITE');

# --- delete ------------------------------------------------------------------------------

json_response_is(http(DELETE => "/platform/connections/$id", { token => $other }), 404,
		 $nf, 'delete another customer\'s: 404');
is(mysql("SELECT COUNT(*) FROM connections WHERE id = '$id'"), 1, '... and it is still there');

# In use: a job references it (set-up: a pipeline and a job seeded with SQL,
# the way POST /platform/pipeline stores them).
my $pid = sprintf('%08x_%04x_4%03x_a%03x_%012x', int(rand(2**32)), $$ & 0xffff,
		  int(rand(4096)), int(rand(4096)), int(rand(2**40)));
mysql("INSERT INTO pipelines (id, customer_id, name) VALUES ('$pid', '$demo_id', 'uses-conn')");
mysql("INSERT INTO jobs (id, pipeline_id, job_index, name, connector, input, output)"
      . " VALUES ('${pid}_0', '$pid', 0, 'j', 'jdbc',"
      . " '{\"connector\":\"jdbc\",\"plugin\":\"postgres\",\"table_name\":\"t\","
      . "\"connection_id\":\"$id\"}', '{\"plugin\":\"mariadb\"}')");
json_response_is(http(DELETE => "/platform/connections/$id", { token => $token }), 409,
		 { detail => 'The connection is used by a job: change or delete that '
			   . 'job\'s pipeline first' }, 'delete a connection in use: 409');
is(mysql("SELECT COUNT(*) FROM connections WHERE id = '$id'"), 1, '... it stays');

mysql("DELETE FROM pipelines WHERE id = '$pid'");

# The same through the API: a pipeline whose job names the connection.
$res = http(POST => '/platform/pipeline', { token => $token, json => {
	name => "uses-conn-$tag", description => '', cron => undef,
	jobs => [ { input => { connector => 'jdbc', plugin => 'postgres',
			       table_name => 'public.orders', connection_id => $id },
		    output => { plugin => 'mariadb',
				raw => { table_name => 'orders', table_schema => 'raw' } } } ] } });
is($res->{status}, 201, 'set-up: a pipeline using the connection') or diag describe($res);
my $api_pid = $res->{json}{pipeline_id};
json_response_is(http(DELETE => "/platform/connections/$id", { token => $token }), 409,
		 { detail => 'The connection is used by a job: change or delete that '
			   . 'job\'s pipeline first' }, 'in use by a pipeline made with the API: 409');
$res = http(DELETE => "/platform/pipeline/$api_pid",
	    { token => $token, headers => { customer_name => 'demo' } });
is($res->{status}, 200, 'deleting the pipeline keeps the connection') or diag describe($res);
is(mysql("SELECT COUNT(*) FROM connections WHERE id = '$id'"), 1, '... it is still there');
json_response_is(http(DELETE => "/platform/connections/$id", { token => $token }), 200,
		 { connection_id => $id, status => 'CONNECTION_DELETED' },
		 'delete once no job uses it');
is(mysql("SELECT COUNT(*) FROM connections WHERE id = '$id'"), 0, '... and it is gone');
json_response_is(http(DELETE => "/platform/connections/$id", { token => $token }), 404,
		 $nf, 'delete again: 404');
json_response_is(http(DELETE => '/platform/connections/xyz', { token => $token }), 404,
		 $nf, 'delete malformed: 404');

# --- never logged ---------------------------------------------------------------------------

my $logged = serve_log_since($log_at);
ok(length $logged, 'the serve log has lines for these requests');
unlike($logged, qr/\Q$PASSWORD\E/, 'the password is in no serve log line');
unlike($logged, qr/pppppppp/, 'nor the 1024-byte one');
for my $f (glob(env('SLUICE_VAR') . '/log/*.log')) {
	open my $fh, '<:raw', $f or next;
	local $/;
	my $text = <$fh> // '';
	unlike($text, qr/\Q$PASSWORD\E/, "the password is not in $f");
}

done_testing();
