#!/usr/bin/perl
# Parquet datasets linked to tables: the rows land in the warehouse exactly
# as DuckDB reads them from the same file (t/fixtures/storage/binary/
# NAME.expected.json), cell by cell, for a DuckDB file (dictionary pages,
# three row groups, nulls, decimals, timestamps) and a file of the Rust
# writer (data pages v2, DELTA encodings, ZSTD, a LIST column as JSON
# text); a file whose pages are damaged fails its link with the column
# named, and the table keeps no row of it; another customer's Parquet
# dataset is not found.

use strict;
use warnings;

use JSON::PP;
use Test::More;

use SluiceTest;
use StorageTest;
use TablesFixture;

my $t = tag();
my ($cid, $tok) = customer_with_token("pq-a-$t");
my (undef, $tok_b) = customer_with_token("pq-b-$t");

# Two JSON values the same, numbers by value.
sub json_same {
	my ($a, $b) = @_;
	return !defined $b if !defined $a;
	return 0 if !defined $b;
	if (ref $a eq 'ARRAY') {
		return 0 unless ref $b eq 'ARRAY' && @$a == @$b;
		json_same($a->[$_], $b->[$_]) || return 0 for 0 .. $#$a;
		return 1;
	}
	if (ref $a eq 'HASH') {
		return 0 unless ref $b eq 'HASH' && keys %$a == keys %$b;
		exists $b->{$_} && json_same($a->{$_}, $b->{$_}) || return 0 for keys %$a;
		return 1;
	}
	return 0 if ref $b;
	my $num = qr/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;
	return $a == $b if "$a" =~ $num && "$b" =~ $num;
	return "$a" eq "$b";
}

# A warehouse cell (mysql -B text, NULL for null) against DuckDB's value
# of a column of inferred type $type.
sub cell_ok {
	my ($got, $want, $type) = @_;
	return $got eq 'NULL' if !defined $want;
	return 0 if $got eq 'NULL';
	if (ref $want eq 'HASH') {
		my ($kind, $v) = %$want;
		return json_same(decode_json($got), $v) if $kind eq 'json';
		return $got == $v if $kind eq 'double';
		return unpack('f', pack('f', $got)) == unpack('f', pack('f', $v));   # float
	}
	if ($type eq 'BOOLEAN') {
		return $got eq ($want eq 'true' ? '1' : '0');
	}
	if ($type eq 'TIMESTAMP') {                # DATETIME(6): six digits of fraction
		my ($s, $f) = $want =~ /^(.{19})(?:\.(\d+))?$/ or return 0;
		return $got eq $s . '.' . substr(($f // '') . '000000', 0, 6);
	}
	utf8::encode(my $bytes = $want);          # mysql -B answers bytes
	return $got eq $bytes;
}

# Upload the fixture, link it into a table made from its schema, and
# compare the warehouse rows (ordered by id) with NAME.expected.json.
sub load_and_compare {
	my ($file, $expected, $table_name) = @_;
	my $res = upload($tok, "pq/$t", [ $file, fixture_bytes($file) ]);
	is($res->{status}, 201, "$file: uploaded") or diag describe($res);
	my $ds_id = dataset_of($res, $file);
	my $ds = wait_dataset($tok, $ds_id);
	is($ds->{status}, 'ready', "$file: schema inferred") or diag explain $ds;
	my $table = create_table($tok, $table_name, columns_of($ds->{schema}));
	$res = link_dataset($tok, $table->{table_id}, $ds_id);
	is($res->{status}, 201, "$file: linked (no longer 422)") or diag describe($res);
	my $done = wait_link($tok, $table->{table_id}, $res->{json}{link_id}, 60);
	is($done->{sync_status}, 'done', "$file: loaded") or diag explain $done;

	my $want = decode_json(fixture_bytes("$expected.expected.json"));
	my @names = @{ $want->{columns} };
	my %type = map { $_->{name} => $_->{inferred_type} } @{ $ds->{schema}{columns} };
	is_deeply([ map { $_->{name} } @{ $ds->{schema}{columns} } ], \@names,
		  "$file: the columns DuckDB reads, in its order");
	is($done->{row_count}, scalar @{ $want->{rows} }, "$file: row_count is every row");
	my @rows = wh_query('SELECT ' . join(', ', map { "`$_`" } @names)
		. " FROM `$table->{warehouse_schema}`.`$table->{warehouse_table}` ORDER BY id");
	is(scalar @rows, scalar @{ $want->{rows} }, "$file: every row in the table");
	my ($bad, $shown) = (0, 0);
	for my $i (0 .. $#rows) {
		for my $k (0 .. $#names) {
			my $w = $want->{rows}[$i][$k];
			next if cell_ok($rows[$i][$k], $w, $type{ $names[$k] });
			$bad++;
			diag("$file row $i column $names[$k]: warehouse '$rows[$i][$k]', DuckDB "
			     . (defined $w ? encode_json([ $w ]) : 'null')) if $shown++ < 5;
		}
	}
	is($bad, 0, "$file: every cell as DuckDB reads it");
	return $table;
}

my $duck = load_and_compare('duck-dict.parquet', 'duck-dict', 'pq_duck');
my $arrow = load_and_compare('arrow-v2-delta.parquet', 'arrow-rows', 'pq_arrow');
my @tags = wh_query("SELECT tags FROM `$arrow->{warehouse_schema}`.`pq_arrow` "
	. 'WHERE id IN (-500, -497, -494, -491) ORDER BY id');
is_deeply([ map { $_->[0] } @tags ], [ 'NULL', '[]', '[2,-2]', '[3,null]' ],
	  'a LIST column is JSON text: a null list, an empty one, null elements');

# Pages damaged past the footer: the schema is read, the load fails naming
# the column, and the table has no row of it.
my $bad = fixture_bytes('duck-dict.parquet');
substr($bad, 3000, 200) = "\xff" x 200;
my $res = upload($tok, "pq/$t", [ 'damaged.parquet', $bad ]);
my $bad_id = dataset_of($res, 'damaged.parquet');
is(wait_dataset($tok, $bad_id)->{status}, 'ready', 'damaged pages: the footer still infers');
my $before = wh_count($duck);
$res = link_dataset($tok, $duck->{table_id}, $bad_id);
is($res->{status}, 201, 'damaged pages: linked');
my $failed = wait_link($tok, $duck->{table_id}, $res->{json}{link_id}, 60);
is($failed->{sync_status}, 'failed', 'damaged pages: the load fails') or diag explain $failed;
is($failed->{status}, 'inactive', 'damaged pages: the link is inactive');
like($failed->{error}, qr/^Parquet column id: a ZSTD page: /, 'the reason names the column');
is(wh_count($duck), $before, 'no row of the damaged file in the table');

# Another customer's Parquet dataset: 404, as an unknown id.
my $b_table = create_table($tok_b, 'pq_b', [ { name => 'id', type => 'BIGINT' } ]);
json_response_is(link_dataset($tok_b, $b_table->{table_id}, $bad_id), 404,
		 { error => 'dataset_not_found', message => 'Dataset not found' },
		 "A's Parquet dataset for B: 404");

done_testing();
