"""LSH bucket backends. Each turns bucket entries ``(digest, ref)`` into candidate edges
``(smallest ref in the bucket, other ref)``, so every backend yields the same edge set:

* ``embedded``: numpy sort of one on-disk partition at a time (no server);
* ``redis``: a Redis Cluster holds the buckets (see :mod:`.redis_cluster`);
* ``cudf``: the embedded algorithm on GPU (see :mod:`.gpu`).
"""
