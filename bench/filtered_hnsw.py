"""Recall of a filtered HNSW walk in faiss, with and without widening ``efSearch`` by the inverse
share of the graph the caller may read (``electa.stores.faiss_index.filtered_ef``), in one run.

    python bench/filtered_hnsw.py

Random unit vectors (seeded), one HNSW graph (M 16, efConstruction 200, inner product) holding
every tenant; the caller may read every ``share``-th vector. Recall@k against an exact search
over the caller's own vectors, mean of 30 queries, per configuration.
"""

from __future__ import annotations

import faiss
import numpy as np

from electa.stores.faiss_index import filtered_ef

CONFIGS = [(64, 4000, 4, 16, 40), (128, 4000, 4, 16, 40), (256, 4000, 4, 16, 40), (128, 4000, 8, 16, 40),
           (256, 8000, 8, 32, 40), (64, 20000, 2, 128, 100)]


def main() -> None:
    print(f"{'dim':>4} {'vectors':>8} {'share':>6} {'ef':>4} {'k':>4} {'recall, ef as set':>18} {'widened':>8}")
    for dim, n, every, ef, k in CONFIGS:
        rng = np.random.default_rng(3)
        vecs = rng.standard_normal((n, dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        graph = faiss.IndexHNSWFlat(dim, 16, faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.efConstruction = 200
        index = faiss.IndexIDMap2(graph)
        ids = np.arange(n, dtype=np.int64)
        index.add_with_ids(vecs, ids)
        allowed = ids[ids % every == 0]
        queries = rng.standard_normal((30, dim)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        out = []
        for breadth in (max(ef, k), filtered_ef(max(ef, k), len(allowed), n)):
            recalls = []
            for q in queries:
                truth = set(allowed[np.argsort(-(vecs[allowed] @ q))[:k]].tolist())
                params = faiss.SearchParametersHNSW(sel=faiss.IDSelectorBatch(allowed), efSearch=breadth)
                _, found = index.search(q.reshape(1, -1), k, params=params)
                recalls.append(len(set(found[0].tolist()) & truth) / k)
            out.append(float(np.mean(recalls)))
        print(f"{dim:>4} {n:>8} {'1/' + str(every):>6} {ef:>4} {k:>4} {out[0]:>18.3f} {out[1]:>8.3f}")


if __name__ == "__main__":
    main()
