"""bench/peer/pipelines_fastapi.py - the peer bench/platform.sh compares
GET /platform/pipelines with: FastAPI + uvicorn + PyMySQL, the same JSON
from the same tables, behind the same nginx (location /_bench/peer/).

Written as such a service usually is: the token checked (HS256, exp,
PLATFORM.READ), one query ordered by the database, each job's stored input
and output parsed and the column-held settings added, one json.dumps.
Run by bench/platform.sh as
    SLUICE_DB_SOCKET=... SLUICE_JWT_SECRET_FILE=... \
    uvicorn --app-dir bench/peer pipelines_fastapi:app --uds SOCKET \
            --workers 2 [--loop uvloop --http httptools]
"""
import base64
import hashlib
import hmac
import json
import os
import threading
import time

import pymysql
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

SECRET = open(os.environ["SLUICE_JWT_SECRET_FILE"], "rb").read().strip()
SOCKET = os.environ["SLUICE_DB_SOCKET"]

SELECT = (
    "SELECT p.seq, p.id, p.customer_id, p.created_by, p.name, p.description,"
    " p.cron, p.cron_timezone, p.retries, p.run_timeout_s, p.last_status,"
    " j.seq, j.id, j.job_status, j.connector, j.input, j.output, j.load_type,"
    " j.incremental_column_name, j.incremental_column_type, j.primary_keys,"
    " j.column_include_list, j.memory_allocated_mb, s.incremental_column_value"
    " FROM pipelines p LEFT JOIN jobs j ON j.pipeline_id = p.id"
    " LEFT JOIN job_state s ON s.job_id = j.id"
    " WHERE p.customer_id = %s ORDER BY p.seq, j.job_index")

app = FastAPI()
local = threading.local()


def db():
    conn = getattr(local, "conn", None)
    if conn is None or not conn.open:
        conn = pymysql.connect(unix_socket=SOCKET, user="root", database="sluice",
                               charset="utf8mb4", autocommit=True)
        local.conn = conn
    return conn


def b64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def claims(request):
    """The token's claims, or None when it is not a valid HS256 token."""
    auth = request.headers.get("authorization", "")
    token = auth[7:] if auth.startswith("Bearer ") else auth
    try:
        head, body, sig = token.split(".")
        if json.loads(b64url(head)).get("alg") != "HS256":
            return None
        mac = hmac.new(SECRET, (head + "." + body).encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(mac, b64url(sig)):
            return None
        c = json.loads(b64url(body))
        return c if c.get("exp", 0) > time.time() else None
    except (ValueError, TypeError):
        return None


def job_of(row):
    (_, _, _, _, _, _, _, _, _, _, _, jseq, jid, status, connector, inp, out,
     load_type, inc_name, inc_type, pkeys, columns, memory, inc_value) = row
    i = json.loads(inp)
    if connector == "jdbc":
        i["load_type"] = load_type
    if inc_name is not None:
        i["incremental_column_name"] = inc_name
    if inc_type is not None:
        i["incremental_column_type"] = inc_type
    if pkeys is not None:
        i["primary_keys"] = json.loads(pkeys)
    if columns is not None:
        i["column_include_list"] = json.loads(columns)
    if connector == "jdbc" and inc_value is not None:
        i["incremental_column_value"] = inc_value
    job = {"id": jseq, "job_id": jid, "job_status": status, "input": i,
           "output": json.loads(out)}
    if memory is not None:
        job["memory_allocated_mb"] = memory
    return job


@app.get("/_bench/peer/platform/pipelines")
def pipelines(request: Request):
    c = claims(request)
    if c is None:
        return JSONResponse({"detail": "Not authenticated"}, status_code=401)
    if "PLATFORM.READ" not in c.get("permissions", []):
        return JSONResponse({"detail": "Forbidden"}, status_code=403)
    with db().cursor() as cur:
        cur.execute(SELECT, (c["customer_id"],))
        rows = cur.fetchall()
    out, by_seq = [], {}
    for row in rows:
        p = by_seq.get(row[0])
        if p is None:
            p = {"id": row[0], "pipeline_id": row[1], "customer_id": row[2],
                 "user_id": row[3], "name": row[4], "description": row[5],
                 "cron": row[6]}
            if row[7] is not None:
                p["cron_timezone"] = row[7]
            if row[8]:
                p["retries"] = row[8]
            if row[9] is not None:
                p["run_timeout_s"] = row[9]
            p["last_status"] = row[10]
            p["jobs"] = []
            by_seq[row[0]] = p
            out.append(p)
        if row[11] is not None:
            p["jobs"].append(job_of(row))
    body = json.dumps(out, ensure_ascii=False, separators=(",", ":"))
    return Response(body.encode(), media_type="application/json")
