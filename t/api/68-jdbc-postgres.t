#!/usr/bin/perl
# jdbc from the source PostgreSQL: full_load of a table of mixed types
# (numeric, boolean, bytea, timestamptz read in UTC, timestamp, date, jsonb,
# arrays, uuid, text with tabs and backslashes) equals the source value by
# value; incremental on a timestamptz column loads only new and updated
# rows and keeps a UTC bookmark; PATCH of the bookmark with an offset is
# honoured; incremental_with_qualify keeps one row per key.

use strict;
use warnings;

use Test::More;

use SluiceTest;
use JdbcFixture;

my $token = env('SLUICE_DEMO_TOKEN');
my $tag = uniq_tag();
my $src = "ev_$tag";
my $logical = "t68_$tag";
my $schema = wh_schema(env('SLUICE_DEMO_CUSTOMER_ID'), $logical);    # its database

pg_sql(<<"SQL");
CREATE TABLE public.$src (
	id bigserial PRIMARY KEY,
	name text NOT NULL,
	price numeric(10,2),
	ok boolean,
	payload bytea,
	created timestamptz NOT NULL,
	local_ts timestamp,
	day date,
	doc jsonb,
	tags text[],
	score double precision,
	u uuid,
	code varchar(12)
);
INSERT INTO public.$src (name, price, ok, payload, created, local_ts, day, doc, tags, score, u, code)
SELECT 'event ' || g || CASE WHEN g % 7 = 0 THEN E'\\ttab\\\\slash' ELSE '' END,
	g / 8.0, CASE WHEN g % 3 = 0 THEN NULL ELSE g % 2 = 0 END,
	CASE WHEN g % 5 = 0 THEN '\\x00ff0a5c09'::bytea END,
	'2024-01-01 00:00:00+02'::timestamptz + g * interval '1.25 second',
	'2024-01-01'::timestamp + g * interval '1 minute', DATE '2024-01-01' + (g % 300),
	jsonb_build_object('g', g), ARRAY['a', 'b' || g], g / 4.0,
	md5(g::text)::uuid, 'c' || g
FROM generate_series(1, 5000) g;
SQL

my $PG_EXPR = "concat_ws('|', id, name, coalesce(price::text, '~'), coalesce(ok::int::text, '~'), "
	. "coalesce(upper(encode(payload, 'hex')), '~'), "
	. "to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), "
	. "coalesce(to_char(local_ts, 'YYYY-MM-DD HH24:MI:SS.US'), '~'), coalesce(day::text, '~'), "
	. "coalesce(doc::text, '~'), coalesce(tags::text, '~'), coalesce(score::text, '~'), "
	. "coalesce(u::text, '~'), coalesce(code, '~'))";
my $WH_EXPR = "CONCAT_WS('|', id, name, IFNULL(price, '~'), IFNULL(ok, '~'), IFNULL(HEX(payload), '~'), "
	. "created, IFNULL(local_ts, '~'), IFNULL(day, '~'), IFNULL(doc, '~'), IFNULL(tags, '~'), "
	. "IFNULL(score, '~'), IFNULL(u, '~'), IFNULL(code, '~'))";

my $cid = make_connection($token, plugin => 'postgres');

# --- full_load -------------------------------------------------------------------------
my $pf = make_pipeline($token, plugin => 'postgres', connection_id => $cid,
	table => "public.$src", dest_schema => $logical, dest_table => 'full',
	load_type => 'full_load');
my $run = run_and_wait($token, $pf->{pipeline_id});
is($run->{status}, 'SUCCESS', 'PostgreSQL full_load: SUCCESS');
is($run->{rows_loaded}, 5000, 'rows_loaded 5000');
is(wh_table_sig("`$schema`.`full`", $WH_EXPR, 'id'), pg_table_sig("public.$src", $PG_EXPR, 'id'),
   'every value equals the source');
my %type = map { $_->[0] => $_->[1] } wh_sql(
	"SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
	. "WHERE TABLE_SCHEMA = '$schema' AND TABLE_NAME = 'full'");
is_deeply(\%type, {
	id => 'bigint(20)', name => 'longtext', price => 'decimal(10,2)', ok => 'tinyint(1)',
	payload => 'longblob', created => 'datetime(6)', local_ts => 'datetime(6)',
	day => 'date', doc => 'longtext', tags => 'longtext', score => 'double',
	u => 'char(36)', code => 'varchar(12)',
}, 'destination types map the PostgreSQL types');
my @logs = run_logs($token, $run->{run_id});
ok((grep { $_->{message} =~ /connecting to PostgreSQL at 127\.0\.0\.1:\d+, database source, as source/ } @logs),
   'log: what it connected to');
ok((grep { $_->{message} =~ /^query: SELECT .*\("created" AT TIME ZONE 'UTC'\).* FROM "public"\."\Q$src\E"/ } @logs),
   'log: the query (timestamptz read in UTC)');
my $pw = env('SLUICE_PG_PASSWORD');
ok(!(grep { index($_->{message}, $pw) >= 0 } @logs), 'the password is in no log line');

# --- incremental on timestamptz -------------------------------------------------------------
my $pi = make_pipeline($token, plugin => 'postgres', connection_id => $cid,
	table => "public.$src", dest_schema => $logical, dest_table => 'inc',
	load_type => 'incremental', incremental_column_name => 'created',
	incremental_column_type => 'timestamp with time zone');
$run = run_and_wait($token, $pi->{pipeline_id});
is($run->{rows_loaded}, 5000, 'incremental, first run: all 5000 rows');
my $max = pg_sql("SELECT to_char(max(created) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US') FROM public.$src");
$max =~ s/\.?0+\z// if $max =~ /\./;
is(job_bookmark($token, $pi->{pipeline_id}), "${max}Z", "bookmark is the latest created, in UTC ($max" . 'Z)');

pg_sql("INSERT INTO public.$src (name, created) SELECT 'late ' || g, now() + g * interval '1 ms' "
	. "FROM generate_series(1, 50) g; "
	. "UPDATE public.$src SET name = 'updated ' || id, created = now() + interval '1 hour' "
	. "WHERE id IN (10, 20, 30, 40, 50)");
$run = run_and_wait($token, $pi->{pipeline_id});
is($run->{status}, 'SUCCESS', 'incremental run: SUCCESS');
is($run->{rows_loaded}, 55, 'insert 50 + update 5: 55 rows loaded');
is(wh_sql("SELECT COUNT(*) FROM `$schema`.`inc` WHERE name LIKE 'updated %'"), 5,
   'the updated rows arrived');
my $bm = job_bookmark($token, $pi->{pipeline_id});
like($bm, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\z/, "bookmark stays ISO 8601 UTC ($bm)");

# PATCH with an offset: 2024-01-01T02:00:00+02:00 is midnight UTC; rows above it.
my $res = http(PATCH => "/platform/jobs/$pi->{job_id}/input", { token => $token,
	json => { connector => 'jdbc', incremental_column_value => '2024-01-01T02:00:00+02:00' } });
is($res->{status}, 200, 'PATCH bookmark with a +02:00 offset') or diag describe($res);
my $above = pg_sql("SELECT COUNT(*) FROM public.$src WHERE created > '2024-01-01 00:00:00+00'");
$run = run_and_wait($token, $pi->{pipeline_id});
is($run->{rows_loaded}, $above, "the next run loads the $above rows above midnight UTC");

# --- incremental_with_qualify ------------------------------------------------------------------
my $pq = make_pipeline($token, plugin => 'postgres', connection_id => $cid,
	table => $src, dest_schema => $logical, dest_table => 'qual',
	load_type => 'incremental_with_qualify', incremental_column_name => 'created',
	incremental_column_type => 'timestamp with time zone', primary_keys => [ 'id' ]);
run_and_wait($token, $pq->{pipeline_id});
pg_sql("UPDATE public.$src SET price = -1, created = now() + interval '2 hours' WHERE id <= 25");
$run = run_and_wait($token, $pq->{pipeline_id});
is($run->{status}, 'SUCCESS', 'qualify run: SUCCESS');
is($run->{rows_loaded}, 25, '25 updated rows loaded');
is(wh_table_sig("`$schema`.`qual`", $WH_EXPR, 'id'), pg_table_sig("public.$src", $PG_EXPR, 'id'),
   'one row per key, equal to the source (table named without its schema)');

wh_sql("DROP SCHEMA `$schema`");
pg_sql("DROP TABLE public.$src");
done_testing();
