#!/usr/bin/perl
# Identities compare byte for byte.  A token whose customer_id is another
# customer's id in upper case, with a space, with an accent (NFC or NFD) or
# a full-width letter is refused (401) on every kind of owner check, and no
# customer is made for it; Basic user names DEMO, "demo ", démö and their
# NFD forms are other users than demo (401), and a user whose name has an
# accent is found only by the same bytes.

use strict;
use warnings;

use Test::More;

use JobsFixture qw(customer_token);
use SluiceTest;

my $t = "$$" . time;
my ($ta, $ca) = customer_token("id-a-$t");
my $all = [qw(PLATFORM.READ PLATFORM.WRITE STORAGE_EXPLORER.READ STORAGE_EXPLORER.WRITE)];
my $tok = token(customer => "id-a-$t", permissions => $all);

# A's own things, to aim the look-alikes at.
my $p = http(POST => '/platform/pipeline', { token => $tok, json => { name => 'id', cron => undef,
	jobs => [ { input => { connector => 'file_storage', plugin => 'local', prefix => 'x/' },
		    output => { plugin => 'mariadb', raw => { table_schema => 'raw', table_name => 't' } } } ] } })->{json};
my $pid = $p->{pipeline_id};
my $tb = http(POST => '/storage-explorer/tables', { token => $tok, json => { table_name => 'idt',
	columns => [ { name => 'id', type => 'INTEGER' } ] } })->{json};
my $conn = http(POST => '/platform/connections', { token => $tok, json => { name => "c$t",
	plugin => 'mariadb', host => '127.0.0.1', port => 3306, database => 'd', user => 'u',
	password => 'p' } })->{json};
ok($pid && $tb->{table_id} && $conn->{connection_id}, "customer A's pipeline, table and connection")
	or BAIL_OUT('set-up failed');

# The id's first letter (a..f) as a precomposed accented letter (NFC), as
# the letter and a combining mark (NFD), and as its full-width form.
my %accent = (a => [ "\x{e1}", "a\x{301}" ], b => [ "\x{1e03}", "b\x{307}" ],
	      c => [ "\x{107}", "c\x{301}" ], d => [ "\x{10f}", "d\x{30c}" ],
	      e => [ "\x{e9}", "e\x{301}" ], f => [ "\x{1e1f}", "f\x{307}" ]);
my ($letter) = $ca =~ /([a-f])/;
my ($e_at, $e_nfd, $fw) = ($ca) x 3;
if (defined $letter) {
	$e_at =~ s/$letter/$accent{$letter}[0]/;
	$e_nfd =~ s/$letter/$accent{$letter}[1]/;
	$fw =~ s/$letter/chr(0xff41 + ord($letter) - ord('a'))/e;
}
my %lookalike = (
	'upper case' => uc $ca,
	'trailing space' => "$ca ",
	'leading space' => " $ca",
	'trailing tab' => "$ca\t",
	'accent (NFC)' => $e_at,
	'accent (NFD)' => $e_nfd,
	'full-width letter' => $fw,
	'trailing NUL' => "$ca\0",
);
ok(defined $letter, 'the id has a letter to disguise');

my @checks = (
	[ GET => '/platform/pipelines' ],
	[ GET => "/platform/pipeline/$pid" ],
	[ DELETE => "/platform/pipeline/$pid" ],
	[ POST => '/platform/pipeline/execute', { pipeline_id => $pid, customer_id => $ca } ],
	[ POST => '/platform/pipeline/pause', { pipeline_id => $pid, customer_id => $ca } ],
	[ GET => "/platform/pipeline/$pid/pipeline_run" ],
	[ GET => '/platform/connections' ],
	[ DELETE => "/platform/connections/$conn->{connection_id}" ],
	[ POST => "/platform/jobs/${pid}_0/reset-state" ],
	[ PUT => "/platform/jobs/${pid}_0/memory", { amount => 100 } ],
	[ GET => "/platform/connections/$conn->{connection_id}" ],
	[ GET => '/storage-explorer/tables' ],
	[ GET => "/storage-explorer/tables/$tb->{table_id}" ],
	[ GET => "/storage-explorer/tables/$tb->{table_id}/datasets" ],
	[ GET => '/storage-explorer/datasets' ],
	[ GET => '/storage-explorer/storage/uploads/history' ],
	[ GET => '/storage-explorer/storage/download?file_path=x/y.csv' ],
);
my $customers = scalar mysql('SELECT COUNT(*) FROM customers');
for my $kind (sort keys %lookalike) {
	my $jwt = craft_jwt(undef, { sub => 'x@example.com', customer_id => $lookalike{$kind},
		customer_name => "id-a-$t", permissions => $all, exp => time + 600 });
	for my $c (@checks) {
		my ($m, $path, $body) = @$c;
		my $res = http($m, $path, { token => $jwt, headers => { customer_name => "id-a-$t" },
			($body ? (json => $body) : ()) });
		is($res->{status}, 401, "$kind: $m $path: 401") or diag describe($res);
	}
	my $res = http(GET => '/platform/pipelines', { token => $jwt });
	like($res->{json}{detail} // '', qr/^Invalid token: (customer_id must be|invalid claims)/, "$kind: the detail says why");
}
is(scalar mysql('SELECT COUNT(*) FROM customers'), $customers, 'no customer made for a look-alike');
is(http(GET => "/platform/pipeline/$pid", { token => $tok })->{status}, 200, "A's pipeline is still there");
is(http(GET => "/platform/connections/$conn->{connection_id}", { token => $tok })->{status}, 200,
   "and its connection");

# A canonical id that is not A's sees nothing of A's (404 as unknown).
my $other = craft_jwt(undef, { sub => 'x@example.com', customer_id => "x$t",
	customer_name => "x$t", permissions => $all, exp => time + 600 });
is(http(GET => "/platform/pipeline/$pid", { token => $other })->{status}, 404, 'another customer: 404');
is(http(GET => "/storage-explorer/tables/$tb->{table_id}", { token => $other })->{status}, 404,
   "another customer: A's table 404");

# sluice token refuses to mint one.
for my $kind ('upper case', 'trailing space', 'accent (NFC)') {
	my $id = $lookalike{$kind};
	utf8::encode($id);
	my $r = run_cmd([ env('SLUICE_BIN'), 'token', '-c', env('SLUICE_CONF'), '--customer-id', $id,
			  '--customer-name', 'x' ]);
	is($r->{exit}, 2, "sluice token --customer-id ($kind): refused");
}

# --- Basic user names ----------------------------------------------------------------
my ($demo, $demo_pw) = split /:/, env('SLUICE_DEMO_BASIC'), 2;
# An address of this run's own: its failures count against it only.
my $from = sprintf '127.%d.%d.83', 1 + $$ % 250, 1 + int(time / 7) % 250;
for my $name ('DEMO', 'Demo', "$demo ", " $demo", "d\xc3\xa9m\xc3\xb6", "de\xcc\x81mo\xcc\x88", "$demo\t") {
	my $res = http(GET => '/_test/basic', { basic => "$name:$demo_pw", from => $from });
	is($res->{status}, 401, "Basic user '$name' with demo's password: 401") or diag describe($res);
}
is(http(GET => '/_test/basic', { basic => "$demo:$demo_pw" })->{status}, 200, 'demo itself: 200');

# A user whose name has an accent is that name's bytes only.
my $nfc = "zo\xc3\xab$t";                       # zoë (NFC)
my $r = run_cmd([ env('SLUICE_BIN'), 'user', 'add', $nfc, '-c', env('SLUICE_CONF') ], stdin => "pw-$t\n");
is($r->{exit}, 0, 'user with an accented name added') or diag $r->{err};
is(http(GET => '/_test/basic', { basic => "$nfc:pw-$t" })->{status}, 200, 'its name in NFC: 200');
for my $name ("zoe\xcc\x88$t", "zoe$t", "ZO\xc3\x8b$t") {
	is(http(GET => '/_test/basic', { basic => "$name:pw-$t", from => $from })->{status}, 401,
	   "look-alike '$name': 401");
}
$r = run_cmd([ env('SLUICE_BIN'), 'user', 'add', "$demo ", '-c', env('SLUICE_CONF') ], stdin => "x\n");
is($r->{exit}, 2, 'sluice user add refuses a name with a space');
mysql("DELETE FROM api_users WHERE name = '$nfc'");

done_testing();
