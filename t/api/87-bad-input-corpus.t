#!/usr/bin/perl
# A corpus of hostile requests across every route, as a table of requests
# and the status each must get: missing, forged and look-alike credentials
# (wrong secret, alg none, HS512, expired, no exp, customer ids that differ
# in case, spacing or accents), tokens without the permission, a second
# customer's tokens and Basic user aimed at the first customer's ids, path
# and schema escapes, other customers' paths, oversize bodies, wrong types,
# malformed JSON and media types.  Required: no 5xx at all, and no refusal
# accepted (every answer exactly the status of its row).  Basic failures
# come from loopback addresses of this run's own, a few each, so that
# neither they nor the suite meet the Basic throttle.

use strict;
use warnings;

use File::Temp qw(tempdir);
use HTTP::Tiny;
use IO::Socket::SSL qw(SSL_VERIFY_NONE);
use MIME::Base64 qw(encode_base64);
use Test::More;
use POSIX ();
use Time::HiRes qw(time);

use JobsFixture qw(customer_token);
use SluiceTest;

my $t = "$$" . int(time);
my $net = sprintf '127.%d.%d', 1 + $$ % 250, 1 + int(time / 7) % 250;
my $limit = (conf_read() =~ /^[ \t]*body_max_bytes[ \t]*=[ \t]*(\d+)/m)[0] // 1048576;
my $service_db = (conf_read() =~ /^[ \t]*db_name[ \t]*=[ \t]*(\S+)/m)[0] // 'sluice';
my @ALL = qw(PLATFORM.READ PLATFORM.WRITE STORAGE_EXPLORER.READ STORAGE_EXPLORER.WRITE);

# --- two customers, A's things to aim at ------------------------------------------
my (undef, $ca) = customer_token("corpus-a-$t");
my (undef, $cb) = customer_token("corpus-b-$t");
my $A = token(customer => "corpus-a-$t", permissions => \@ALL);
my $B = token(customer => "corpus-b-$t", permissions => \@ALL);
my %only = (
	platform_ro => token(customer => "corpus-a-$t", permissions => ['PLATFORM.READ']),
	storage_ro  => token(customer => "corpus-a-$t", permissions => ['STORAGE_EXPLORER.READ']),
	none        => token(customer => "corpus-a-$t", permissions => []),
);

my $dir = tempdir(CLEANUP => 1);
open my $fh, '>', "$dir/cheap.conf" or die;
print {$fh} conf_with(conf_read(), pbkdf2_iterations => 1000);
close $fh;
my @users;
sub basic_user {
	my ($name, $cust) = @_;
	my $r = run_cmd([ env('SLUICE_BIN'), 'user', 'add', $name, '--customer', $cust,
			  '-c', "$dir/cheap.conf" ], stdin => "pw-$name\n");
	die "user add: $r->{err}" if $r->{exit};
	push @users, $name;
	return "$name:pw-$name";
}
END { local ($?, $@); eval { mysql("DELETE FROM api_users WHERE name = '$_'") for @users } }
my $ua = basic_user("ua$t", "corpus-a-$t");
my $ub = basic_user("ub$t", "corpus-b-$t");

sub ok_or_die {
	my ($res, $want, $what) = @_;
	die "set-up: $what: " . describe($res) unless $res->{status} == $want;
	return $res->{json};
}
my $p = ok_or_die(http(POST => '/platform/pipeline', { token => $A, json => { name => 'corpus',
	cron => '0 3 * * *', jobs => [ { input => { connector => 'file_storage', plugin => 'local',
	prefix => 'c87/' }, output => { plugin => 'mariadb', raw => { table_schema => 'raw',
	table_name => 'c87' } } } ] } }), 201, 'pipeline');
my $P = $p->{pipeline_id};
my $J = "${P}_0";
my $run = ok_or_die(http(POST => '/platform/pipeline/execute', { token => $A,
	json => { pipeline_id => $P, customer_id => $ca } }), 200, 'execute');
my $R = $run->{data}{run_id};
ok(wait_until(60, sub { my $r = http(GET => "/platform/pipeline/$P/pipeline_run", { token => $A });
	($r->{json}{data}{runs}[0]{status} // '') =~ /^(SUCCESS|FAILED)$/ }), "A's run finished");
my $C = ok_or_die(http(POST => '/platform/connections', { token => $A, json => { name => "c$t",
	plugin => 'mariadb', host => '127.0.0.1', port => 3306, database => 'd', user => 'u',
	password => 'p' } }), 201, 'connection')->{connection_id};
my $mp = "--c87\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n"
    . "Content-Type: text/csv\r\n\r\nid,name\n1,x\n\r\n--c87--\r\n";
my $up = ok_or_die(http(POST => '/storage-explorer/storage/upload?folder_path=c87', { token => $A,
	body => $mp, content_type => 'multipart/form-data; boundary=c87' }), 201, 'upload');
my $D = $up->{files}[0]{dataset_id};
my $F = $up->{files}[0]{file_path};
ok_or_die(http(POST => '/storage-explorer/storage/upload?folder_path=c87', { token => $B,
	body => $mp, content_type => 'multipart/form-data; boundary=c87' }), 201, "B's upload");
my $T = ok_or_die(http(POST => '/storage-explorer/tables', { token => $A, json => {
	table_name => "t$t", columns => [ { name => 'id', type => 'INTEGER' } ] } }), 201, 'table')->{table_id};
my $RD = ok_or_die(http(POST => '/dataset', { basic => $ua, json => { name => 'corpus' } }), 201,
	'rag dataset')->{dataset_id};
ok_or_die(http(POST => "/dataset/$RD/documents", { basic => $ua, json => { documents => [
	{ text => 'Glaciers carve valleys over thousands of years.', metadata => { source => 'g.txt' } } ] } }),
	202, 'documents');
ok(wait_until(60, sub { (http(GET => "/dataset/$RD", { basic => $ua })->{json}{status} // '') eq 'success' }),
   "A's rag dataset is ready");
my $Q = ok_or_die(http(POST => "/dataset/$RD/question", { basic => $ua,
	json => { question => 'What carves valleys?' } }), 200, 'question')->{question_id};

# --- credentials ---------------------------------------------------------------------
my $secret = jwt_secret();
my %claims = (sub => 'x@example.com', customer_id => $ca, customer_name => "corpus-a-$t",
	      permissions => \@ALL, exp => time + 600);
my ($first) = $ca =~ /([a-f])/;
my %accent = (a => [ "\x{e1}", "a\x{301}" ], b => [ "\x{1e03}", "b\x{307}" ],
	      c => [ "\x{107}", "c\x{301}" ], d => [ "\x{10f}", "d\x{30c}" ],
	      e => [ "\x{e9}", "e\x{301}" ], f => [ "\x{1e1f}", "f\x{307}" ]);
(my $nfc = $ca) =~ s/$first/$accent{$first}[0]/;
(my $nfd = $ca) =~ s/$first/$accent{$first}[1]/;
(my $wide = $ca) =~ s/$first/chr(0xff41 + ord($first) - ord('a'))/e;
my %bad_jwt = (
	'no Authorization'   => undef,
	'empty Bearer'       => 'Bearer ',
	'garbage'            => 'Bearer not.a.jwt',
	'alg none'           => 'Bearer ' . craft_jwt({ alg => 'none', typ => 'JWT' }, \%claims, undef, signature => ''),
	'HS512'              => 'Bearer ' . craft_jwt({ alg => 'HS512', typ => 'JWT' }, \%claims, undef, hmac => 'sha512'),
	'wrong secret'       => 'Bearer ' . craft_jwt(undef, \%claims, 'x' x 40),
	'expired'            => 'Bearer ' . craft_jwt(undef, { %claims, exp => time - 3600 }),
	'no exp'             => 'Bearer ' . craft_jwt(undef, { map { $_ => $claims{$_} } grep { $_ ne 'exp' } keys %claims }),
	'no customer_id'     => 'Bearer ' . craft_jwt(undef, { map { $_ => $claims{$_} } grep { $_ ne 'customer_id' } keys %claims }),
	'customer_id upper'  => 'Bearer ' . craft_jwt(undef, { %claims, customer_id => uc $ca }),
	'customer_id space'  => 'Bearer ' . craft_jwt(undef, { %claims, customer_id => "$ca " }),
	'customer_id NFC'    => 'Bearer ' . craft_jwt(undef, { %claims, customer_id => $nfc }),
	'customer_id NFD'    => 'Bearer ' . craft_jwt(undef, { %claims, customer_id => $nfd }),
	'customer_id wide'   => 'Bearer ' . craft_jwt(undef, { %claims, customer_id => $wide }),
	'not yet valid'      => 'Bearer ' . craft_jwt(undef, { %claims, nbf => time + 3600 }),
	'customer_id ZWSP'   => 'Bearer ' . craft_jwt(undef, { %claims, customer_id => "\x{200b}$ca" }),
	'tampered payload'   => do { my @x = split /\./, craft_jwt(undef, \%claims);
		$x[1] = b64url(json_encode({ %claims, customer_id => $cb })); 'Bearer ' . join '.', @x },
	'Basic instead'      => 'Basic ' . encode_base64($ua, ''),
);

# --- the routes ----------------------------------------------------------------------
# [method, path, permission needed, body, {B's refusal on A's ids}, query]
my $pause = { customer_id => $ca, pipeline_id => $P };
my $pipeline_body = { name => 'x', cron => undef, jobs => [ { input => { connector => 'file_storage',
	plugin => 'local', prefix => 'x/' }, output => { plugin => 'mariadb', raw => {
	table_schema => 'raw', table_name => 'x' } } } ] };
my $conn_body = { name => "n$t", plugin => 'mariadb', host => 'h', port => 1, database => 'd',
		  user => 'u', password => 'p' };
my @jwt_routes = (
	[ GET    => '/platform/pipelines', 'PLATFORM.READ' ],
	[ POST   => '/platform/pipeline', 'PLATFORM.WRITE', $pipeline_body ],
	[ POST   => '/platform/pipeline/pause', 'PLATFORM.WRITE', $pause, 403 ],
	[ POST   => '/platform/pipeline/resume', 'PLATFORM.WRITE', $pause, 403 ],
	[ POST   => '/platform/pipeline/execute', 'PLATFORM.WRITE', $pause, 403 ],
	[ GET    => "/platform/pipeline/$P", 'PLATFORM.READ', undef, 404 ],
	[ DELETE => "/platform/pipeline/$P", 'PLATFORM.WRITE', undef, 404 ],
	[ PUT    => "/platform/pipeline/$P/memory", 'PLATFORM.WRITE', { amount => 100 }, 404 ],
	[ GET    => "/platform/pipeline/$P/pipeline_run", 'PLATFORM.READ', undef, 404 ],
	[ GET    => "/platform/pipeline/pipeline_run/$R/logs", 'PLATFORM.READ', undef, 404 ],
	[ POST   => "/platform/pipeline_run/$R/cancel", 'PLATFORM.WRITE', undef, 404 ],
	[ PUT    => "/platform/jobs/$J/memory", 'PLATFORM.WRITE', { amount => 100 }, 404 ],
	[ POST   => "/platform/jobs/$J/reset-state", 'PLATFORM.WRITE', undef, 404 ],
	[ POST   => "/platform/jobs/jdbc/$J/sync-mode", 'PLATFORM.WRITE', { target_load_type => 'full_load' }, 404 ],
	[ PATCH  => "/platform/jobs/$J/input", 'PLATFORM.WRITE', { column_include_list => ['id'] }, 404 ],
	[ POST   => '/platform/connections', 'PLATFORM.WRITE', $conn_body ],
	[ GET    => '/platform/connections', 'PLATFORM.READ' ],
	[ GET    => "/platform/connections/$C", 'PLATFORM.READ', undef, 404 ],
	[ DELETE => "/platform/connections/$C", 'PLATFORM.WRITE', undef, 404 ],
	[ GET    => '/storage-explorer/storage/uploads/history', 'STORAGE_EXPLORER.READ' ],
	[ GET    => "/storage-explorer/storage/download?file_path=$F", 'STORAGE_EXPLORER.READ' ],
	[ GET    => '/storage-explorer/datasets', 'STORAGE_EXPLORER.READ' ],
	[ GET    => "/storage-explorer/datasets/$D", 'STORAGE_EXPLORER.READ', undef, 404 ],
	[ PUT    => "/storage-explorer/datasets/$D/refresh-schema", 'STORAGE_EXPLORER.WRITE', {}, 404 ],
	[ POST   => '/storage-explorer/tables/validate-name', 'STORAGE_EXPLORER.WRITE', { table_name => 'x' } ],
	[ POST   => '/storage-explorer/tables', 'STORAGE_EXPLORER.WRITE',
	  { table_name => "n$t", columns => [ { name => 'id', type => 'INTEGER' } ] } ],
	[ GET    => '/storage-explorer/tables', 'STORAGE_EXPLORER.READ' ],
	[ GET    => "/storage-explorer/tables/$T", 'STORAGE_EXPLORER.READ', undef, 404 ],
	[ GET    => "/storage-explorer/tables/$T/datasets", 'STORAGE_EXPLORER.READ', undef, 404 ],
	[ POST   => "/storage-explorer/tables/$T/datasets/$D", 'STORAGE_EXPLORER.WRITE', undef, 404 ],
	[ POST   => '/storage-explorer/storage/upload?folder_path=c87', 'STORAGE_EXPLORER.WRITE', 'multipart' ],
);
my @basic_routes = (
	[ POST   => '/dataset', { name => 'x' } ],
	[ GET    => "/dataset/$RD", undef, 404 ],
	[ DELETE => "/dataset/$RD", undef, 404 ],
	[ POST   => "/dataset/$RD/documents", { documents => [ { text => 'x', metadata => {} } ] }, 404 ],
	[ POST   => "/dataset/$RD/question", { question => 'x' }, 404 ],
	[ GET    => "/dataset/$RD/question/$Q", undef, 404 ],
);

# --- the table -------------------------------------------------------------------------
my @rows;     # [name, method, path, opts, expected status]
sub row { push @rows, [ @_ ] }
sub body_opts {
	my ($body) = @_;
	return () unless defined $body;
	return (body => $mp, content_type => 'multipart/form-data; boundary=c87') if $body eq 'multipart';
	return (json => $body);
}

for my $r (@jwt_routes) {
	my ($m, $path, $perm, $body, $cross) = @$r;
	my %h = (customer_name => "corpus-a-$t");
	for my $k (sort keys %bad_jwt) {
		row("$k: $m $path", $m, $path, { auth => $bad_jwt{$k}, headers => \%h, body_opts($body) }, 401);
	}
	# A valid token without the permission: 403.
	my $lacking = $perm =~ /^PLATFORM/ ? ($perm eq 'PLATFORM.READ' ? 'storage_ro' : 'platform_ro')
	    : ($perm eq 'STORAGE_EXPLORER.READ' ? 'platform_ro' : 'storage_ro');
	row("without $perm: $m $path", $m, $path, { token => $only{$lacking}, headers => \%h,
		body_opts($body) }, 403);
	row("no permissions: $m $path", $m, $path, { token => $only{none}, headers => \%h,
		body_opts($body) }, 403);
	# B's token at A's things.
	row("B at A's: $m $path", $m, $path, { token => $B, headers => { customer_name => "corpus-b-$t" },
		body_opts($body) }, $cross) if $cross;
}
# B's token, A's ids in other forms: upper case, hyphens, trailing junk.
for my $id ([ pipeline => uc $P ], [ pipeline => $P =~ tr/_/-/r ]) {
	row("B at A's $id->[0] ($id->[1])", GET => "/platform/pipeline/$id->[1]", { token => $B }, 404);
}
row("B at A's run (upper case)", GET => '/platform/pipeline/pipeline_run/' . uc($R) . '/logs', { token => $B }, 404);
row("B at A's table (upper case)", GET => '/storage-explorer/tables/' . uc $T, { token => $B }, 404);
row("B at A's dataset (upper case)", GET => '/storage-explorer/datasets/' . uc $D, { token => $B }, 404);
row("B at A's connection (upper case)", GET => '/platform/connections/' . uc $C, { token => $B }, 404);
row("B into A's area with ..", GET => "/storage-explorer/storage/download?file_path=../$ca/$F",
    { token => $B }, 400);
row("B into A's area, encoded", GET => "/storage-explorer/storage/download?file_path=..%2F$ca%2F$F",
    { token => $B }, 400);
row("B executes A's pipeline with B's customer_id", POST => '/platform/pipeline/execute',
    { token => $B, json => { pipeline_id => $P, customer_id => $cb } }, 404);
row("B pauses A's pipeline with B's customer_id", POST => '/platform/pipeline/pause',
    { token => $B, json => { pipeline_id => $P, customer_id => $cb } }, 404);
row("B links A's dataset to B's table", POST => "/storage-explorer/tables/$T/datasets/$D",
    { token => $B }, 404);
row('DELETE with A\'s customer_name on B\'s token', DELETE => "/platform/pipeline/$P",
    { token => $B, headers => { customer_name => "corpus-a-$t" } }, 403);

# Malformed and escaping ids in paths.
my @bad_ids = ("..%2F..%2Fetc%2Fpasswd", "x'%20OR%20'1'%3D'1", 'x' x 300, '%C3%A9', '0' x 36,
	       "$P%00", "$P.json", '%2e%2e');
for my $id (@bad_ids) {
	# nginx itself refuses a NUL in the path, and a path that climbs
	# above the root; the app answers every other one as an unknown id.
	my $nul = $id =~ /%00/ ? 400 : 404;
	row("pipeline id $id", GET => "/platform/pipeline/$id", { token => $A }, $nul);
	row("run id $id", GET => "/platform/pipeline/pipeline_run/$id/logs", { token => $A }, $nul);
	row("job id $id", POST => "/platform/jobs/$id/reset-state", { token => $A }, $nul);
	row("connection id $id", GET => "/platform/connections/$id", { token => $A }, $nul);
	row("dataset id $id", GET => "/storage-explorer/datasets/$id", { token => $A }, $nul);
	row("table id $id", GET => "/storage-explorer/tables/$id", { token => $A }, $nul);
	row("rag dataset id $id", GET => "/dataset/$id", { basic => $ua },
	    $id =~ /^\.\.%2F/ ? 400 : $nul);
}

# Bodies: wrong types, malformed, oversize, wrong media type, deep nesting.
my $deep = ('[' x 40) . (']' x 40);
for my $r (grep { ref $_->[3] eq 'HASH' } @jwt_routes) {
	my ($m, $path) = @$r;
	row("array body: $m $path", $m, $path, { token => $A, json => [] }, 400);
	row("string body: $m $path", $m, $path, { token => $A, json => 'x' }, 400);
	row("number body: $m $path", $m, $path, { token => $A, json => 1 }, 400);
	row("null body: $m $path", $m, $path, { token => $A, body => 'null', content_type => 'application/json' }, 400);
	row("malformed JSON: $m $path", $m, $path, { token => $A, body => '{"a":', content_type => 'application/json' }, 400);
	row("invalid UTF-8: $m $path", $m, $path, { token => $A, body => "{\"a\":\"\xff\"}", content_type => 'application/json' }, 400);
	row("deep nesting: $m $path", $m, $path, { token => $A, body => $deep, content_type => 'application/json' }, 400);
	row("text/plain: $m $path", $m, $path, { token => $A, body => '{}', content_type => 'text/plain' }, 415);
	row("oversize: $m $path", $m, $path, { token => $A, body => '"' . ('a' x $limit) . '"',
		content_type => 'application/json' }, 413);
	row("oversize, no token: $m $path", $m, $path, { body => '"' . ('a' x $limit) . '"',
		content_type => 'application/json' }, 413);
}
for my $r (grep { ref $_->[1] eq 'HASH' } @basic_routes) {
	my ($m, $path, $body, $cross) = @$r;
	row("array body: $m $path", $m, $path, { basic => $ua, json => [] }, 400);
	row("malformed JSON: $m $path", $m, $path, { basic => $ua, body => '{"a":', content_type => 'application/json' }, 400);
	row("text/plain: $m $path", $m, $path, { basic => $ua, body => '{}', content_type => 'text/plain' }, 415);
	row("oversize: $m $path", $m, $path, { basic => $ua, body => '"' . ('a' x $limit) . '"',
		content_type => 'application/json' }, 413);
}

# Fields: wrong types and escapes.
sub pipeline_with {
	my (%raw) = @_;
	return { name => 'x', cron => undef, jobs => [ { input => { connector => 'file_storage',
		plugin => 'local', prefix => 'x/' }, output => { plugin => 'mariadb', raw => {
		table_schema => 'raw', table_name => 'x', %raw } } } ] };
}
for my $s ($service_db, uc $service_db, qw(mysql MYSQL information_schema performance_schema sys),
	   'a`b', 'x y', '../x', 'raw.x', "raw\x{e9}", 'x;drop', '', '9raw', 'r' x 65, "raw\0") {
	row("table_schema '$s'", POST => '/platform/pipeline', { token => $A,
		json => pipeline_with(table_schema => $s) }, 400);
}
for my $s ('a`b', '../x', 'x y', 'api_users;', '', 't' x 65, "t\0") {
	row("table_name '$s'", POST => '/platform/pipeline', { token => $A,
		json => pipeline_with(table_name => $s) }, 400);
}
for my $v (undef, 1, [], {}, JSON::PP::true) {
	my $d = defined $v ? json_encode($v) : 'null';
	row("table_schema $d", POST => '/platform/pipeline', { token => $A,
		json => pipeline_with(table_schema => $v) }, 400);
	row("amount $d", PUT => "/platform/pipeline/$P/memory", { token => $A, json => { amount => $v } }, 400)
		unless defined $v && !ref $v && $v eq '1';
	row("customer_id $d", POST => '/platform/pipeline/execute', { token => $A,
		json => { pipeline_id => $P, customer_id => $v } }, 400);
	row("question $d", POST => "/dataset/$RD/question", { basic => $ua, json => { question => $v } }, 400);
	row("table_name $d (storage)", POST => '/storage-explorer/tables', { token => $A,
		json => { table_name => $v, columns => [ { name => 'id', type => 'INTEGER' } ] } }, 400);
}
for my $a (-1, 0, 12001, 1e12, '100', 1.5) {
	row("amount $a", PUT => "/platform/pipeline/$P/memory", { token => $A, json => { amount => $a } }, 400);
}
for my $s ('mysql', $service_db, 'a`b', '../x', 'x y', 's' x 65) {
	row("storage schema_name '$s'", POST => '/storage-explorer/tables', { token => $A, json => {
		table_name => 'x', schema_name => $s, columns => [ { name => 'id', type => 'INTEGER' } ] } }, 400);
}
for my $c ('', ' x', 'x ', "x\0", "x\n", 'c' x 65) {
	row("column name '$c'", POST => '/storage-explorer/tables', { token => $A, json => {
		table_name => 'x', columns => [ { name => $c, type => 'INTEGER' } ] } }, 400);
}
for my $ty ('INTEGER); DROP TABLE x; --', 'BLOB', 'VARCHAR(-1)', 'DECIMAL(99,2)', '') {
	row("column type '$ty'", POST => '/storage-explorer/tables', { token => $A, json => {
		table_name => 'x', columns => [ { name => 'id', type => $ty } ] } }, 400);
}
for my $path ('../x', '/etc/passwd', '..%2Fx', '%2e%2e%2fx', 'c87/../../x', 'c87\\a.csv',
	      '.hidden', 'c87/%00a.csv', 'c87//a.csv', "../$cb/$F", "/$ca/$F") {
	row("file_path '$path'", GET => "/storage-explorer/storage/download?file_path=$path",
	    { token => $A }, 400);
}
row('file_path a space (a name like any, of no file)', GET => '/storage-explorer/storage/download?file_path=%20',
    { token => $A }, 404);
row('file_path missing', GET => '/storage-explorer/storage/download', { token => $A }, 400);
row('file_path absent file', GET => '/storage-explorer/storage/download?file_path=c87/none.csv',
    { token => $A }, 404);
for my $fp ('../x', '/abs', '..%2Fx', 'a/../../b', '.x', 'a\\b') {
	row("folder_path '$fp'", POST => "/storage-explorer/storage/upload?folder_path=$fp", { token => $A,
		body => $mp, content_type => 'multipart/form-data; boundary=c87' }, 400);
}
for my $o ({ skip_rows => -1 }, { skip_rows => 'x' }, { header_row => -2 }, { delimiter => 'ab' },
	   { encoding => 'no-such' }, { sheet_name => 7 }, { unknown => 1 }) {
	row('refresh-schema ' . json_encode($o), PUT => "/storage-explorer/datasets/$D/refresh-schema",
	    { token => $A, json => $o }, 400);
}
for my $b ({ target_load_type => 'nope' }, { target_load_type => 1 }, {}) {
	row('sync-mode ' . json_encode($b), POST => "/platform/jobs/jdbc/$J/sync-mode",
	    { token => $A, json => $b }, 400);
}
for my $q ({ question => 'x' x 1001 }, { question => '' }, { question => 'x', k => -1 },
	   { question => 'x', distance_metric => 'L3' }, { question => 'x', top_n => 'many' },
	   { question => 'x', unknown => 1 }, { question => 'x', metadata_filter => [] }) {
	row('question ' . substr(json_encode($q), 0, 60), POST => "/dataset/$RD/question",
	    { basic => $ua, json => $q }, 400);
}
row('cron garbage', POST => '/platform/pipeline', { token => $A, json => { %$pipeline_body,
	cron => '* * * * * * *' } }, 400);
row('cron_timezone escape', POST => '/platform/pipeline', { token => $A, json => { %$pipeline_body,
	cron => '0 3 * * *', cron_timezone => '../../etc/passwd' } }, 400);
row('prefix escape', POST => '/platform/pipeline', { token => $A, json => { name => 'x', jobs => [ {
	input => { connector => 'file_storage', plugin => 'local', prefix => "../$cb/" },
	output => { plugin => 'mariadb', raw => { table_schema => 'raw', table_name => 'x' } } } ] } }, 400);
row('singer plugin escape', POST => '/platform/pipeline', { token => $A, json => { name => 'x', jobs => [ {
	input => { connector => 'singer', plugin => '../../bin/sh', table_name => 'x' },
	output => { plugin => 'mariadb', raw => { table_schema => 'raw', table_name => 'x' } } } ] } }, 400);
row("B's connection in A's pipeline", POST => '/platform/pipeline', { token => $B, json => { name => 'x',
	jobs => [ { input => { connector => 'jdbc', plugin => 'mariadb', table_name => 't', connection_id => $C },
	output => { plugin => 'mariadb', raw => { table_schema => 'raw', table_name => 'x' } } } ] } }, 400);

# --- Basic credentials ------------------------------------------------------------------
my ($uname, $upw) = split /:/, $ua, 2;
my %bad_basic = (
	'no Authorization'  => undef,
	'garbage'           => 'Basic !!!',
	'no colon'          => 'Basic ' . encode_base64($uname, ''),
	'a bearer token'    => "Bearer $A",
	'wrong password'    => 'Basic ' . encode_base64("$uname:wrong", ''),
	'name upper case'   => 'Basic ' . encode_base64(uc($uname) . ":$upw", ''),
	'name + space'      => 'Basic ' . encode_base64("$uname :$upw", ''),
	'name with accent'  => 'Basic ' . encode_base64("\xc3\xba" . substr($uname, 1) . ":$upw", ''),
	'name NFD'          => 'Basic ' . encode_base64("u\xcc\x81" . substr($uname, 1) . ":$upw", ''),
	'empty name'        => 'Basic ' . encode_base64(":$upw", ''),
	'name + tab'        => 'Basic ' . encode_base64("$uname\t:$upw", ''),
	'name full-width'   => 'Basic ' . encode_base64("\xef\xbd\x95" . substr($uname, 1) . ":$upw", ''),
);
my $addr = 0;
for my $r (@basic_routes) {
	my ($m, $path, $body, $cross) = @$r;
	for my $k (sort keys %bad_basic) {
		# A few requests per address: the throttle is not what is tested here.
		row("Basic $k: $m $path", $m, $path, { auth => $bad_basic{$k}, from => "$net." . (1 + $addr++ % 60),
			body_opts($body) }, 401);
	}
	row("B's user at A's: $m $path", $m, $path, { basic => $ub, body_opts($body) }, $cross) if $cross;
}
row("B's user asks A's question", GET => "/dataset/$RD/question/$Q", { basic => $ub }, 404);
row("A's question under another dataset", GET => "/dataset/00000000-0000-4000-8000-000000000087/question/$Q",
    { basic => $ua }, 404);

# --- run it ---------------------------------------------------------------------------
my %ua;
sub client {
	my ($from) = @_;
	return $ua{ $from // '' } //= HTTP::Tiny->new(verify_SSL => 0, timeout => 30, keep_alive => 1,
		SSL_options => { SSL_verify_mode => SSL_VERIFY_NONE }, max_redirect => 0,
		(defined $from ? (local_address => $from) : ()));
}
my $base = env('SLUICE_URL');
sub send_row {
	my ($row, $fresh) = @_;
	my ($name, $m, $path, $o, $want) = @$row;
	my %h = %{ $o->{headers} || {} };
	$h{Authorization} = "Bearer $o->{token}" if defined $o->{token};
	$h{Authorization} = 'Basic ' . encode_base64($o->{basic}, '') if defined $o->{basic};
	$h{Authorization} = $o->{auth} if defined $o->{auth};
	my $content = $o->{body};
	if (exists $o->{json}) {
		$content = json_encode($o->{json});
		$h{'Content-Type'} = 'application/json';
	}
	$h{'Content-Type'} = $o->{content_type} if defined $o->{content_type};
	delete $ua{ $o->{from} // '' } if $fresh;
	return client($o->{from})->request($m, "$base$path", { headers => \%h,
		(defined $content ? (content => $content) : ()) });
}
sub busy {
	my ($res) = @_;
	return $res->{status} == 429
	    && ($res->{content} // '') =~ /password checks at once/;
}
# Three clients at once, each a third of the rows; a transport failure
# (599: a kept-alive connection the server had closed) is sent again once,
# on a new connection: it is no answer either way.
my $t0 = time;
my $out = "$dir/answers";
my @kids;
for my $k (0 .. 2) {
	my $pid = fork // die "fork: $!";
	if (!$pid) {
		open my $o, '>', "$out.$k" or POSIX::_exit(1);
		for (my $i = $k; $i < @rows; $i += 3) {
			my $res = send_row($rows[$i]);
			$res = send_row($rows[$i], 1) if $res->{status} == 599;
			# Every password-check share of the pool busy is an
			# overload answer, not a verdict: a client honours its
			# Retry-After and asks again.
			for (my $try = 0; $try < 20 && busy($res); $try++) {
				sleep($res->{headers}{'retry-after'} || 1);
				$res = send_row($rows[$i]);
			}
			my $c = substr($res->{content} // '', 0, 160);
			$c =~ s/[\r\n\t]/ /g;
			print {$o} "$i\t$res->{status}\t$c\n";
		}
		close $o;
		POSIX::_exit(0);
	}
	push @kids, $pid;
}
waitpid($_, 0) for @kids;
my (@wrong, @fives, %seen);
for my $k (0 .. 2) {
	open my $in, '<', "$out.$k" or die "$out.$k: $!";
	while (<$in>) {
		chomp;
		my ($i, $status, $c) = split /\t/, $_, 3;
		my ($name, undef, undef, undef, $want) = @{ $rows[$i] };
		$seen{$i} = 1;
		push @fives, "$name: $status" if $status >= 500;
		push @wrong, "$name: got $status, want $want: $c" if $status != $want;
	}
}
is(scalar keys %seen, scalar @rows, 'every request answered');
my $secs = time - $t0;
cmp_ok(scalar @rows, '>=', 1000, 'at least 1000 hostile requests');
is(scalar @fives, 0, 'no 5xx') or diag join "\n", @fives;
is(scalar(grep { /got 2\d\d/ } @wrong), 0, 'no refusal accepted') or diag join "\n", grep { /got 2\d\d/ } @wrong;
is(scalar @wrong, 0, 'every answer the status of its row') or diag join "\n", @wrong;
note sprintf '%d requests in %.1f s', scalar @rows, $secs;

# Nothing of A's changed hands.
my $got = http(GET => "/platform/pipeline/$P", { token => $A });
is($got->{status}, 200, "A's pipeline is still there");
is(http(GET => "/platform/connections/$C", { token => $A })->{status}, 200, "A's connection too");
is(http(GET => "/dataset/$RD", { basic => $ua })->{status}, 200, "A's rag dataset too");
my $dl = http(GET => "/storage-explorer/storage/download?file_path=$F", { token => $B });
is($dl->{status}, 200, "B's file of the same path is B's own");

http(DELETE => "/platform/pipeline/$P", { token => $A, headers => { customer_name => "corpus-a-$t" } });
for my $c ($ca, $cb) {
	system('rm', '-rf', env('SLUICE_VAR') . "/storage/customers/$c/c87");
}
done_testing();
