#!/usr/bin/python3
"""vec_batch.py - FAISS exact search (IndexFlatIP on L2-normalised rows:
cosine) over the rows and queries bench/vec_batch.c wrote, in queries per
second per batch size and thread count, the median of REPS repetitions.

    vec_batch.py dir rows dim reps k threads batch...

Run by bench/vec_batch.sh, which prints both side by side."""
import sys
import time

import faiss
import numpy as np

d, rows, dim, reps, k, threads = sys.argv[1], *map(int, sys.argv[2:7])
batches = [int(b) for b in sys.argv[7:]]
base = np.fromfile(f"{d}/base.f32", dtype=np.float32).reshape(rows, dim).copy()
queries = np.fromfile(f"{d}/queries.f32", dtype=np.float32).reshape(-1, dim).copy()
faiss.normalize_L2(base)
faiss.normalize_L2(queries)
index = faiss.IndexFlatIP(dim)
index.add(base)
faiss.omp_set_num_threads(threads)
nq = len(queries)
print(f"faiss {faiss.__version__} IndexFlatIP, {threads} thread(s)")
for b in batches:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for j in range(0, nq - b + 1, b):
            index.search(queries[j:j + b], k)
        times.append(time.perf_counter() - t0)
    t = sorted(times)[len(times) // 2]
    done = nq // b * b
    print(f"faiss  batch {b:3d}: {done / t:8.1f} queries/s ({t / done * 1e3:.2f} ms a query)")
