"""Benchmark: asyncpg against psycopg 3 on the PostgreSQL store's round trip (two versioned upserts
and a read of one task), on a private PostgreSQL cluster (Debian's postgresql package), at
concurrency 1 and 16; medians of 3. Run: python bench/pg_drivers.py"""

import asyncio
import json
import statistics
import sys
import time

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))
from tests.postgres import Postgres, binaries

pg = Postgres(binaries())
dsn = pg.database()
BODY = json.dumps(
    {"id": "x", "history": [{"role": "user", "parts": [{"text": "hello " * 20}]}] * 3}
).encode()
DDL = "CREATE TABLE t (id text primary key, version int not null, state text, body bytea)"
UPSERT = (
    "INSERT INTO t (id, version, state, body) VALUES ($1, 1, $2, $3) ON CONFLICT (id) DO UPDATE "
    "SET version = t.version + 1, state = EXCLUDED.state, body = EXCLUDED.body WHERE t.version = $4 RETURNING version"
)
GET = "SELECT version, body FROM t WHERE id = $1"


async def run_asyncpg(n, c):
    import asyncpg

    pool = await asyncpg.create_pool(dsn, min_size=c, max_size=c)

    async def one(i):
        async with pool.acquire() as con:
            v = await con.fetchval(UPSERT, f"k{i}", "working", BODY, 0)
            v = await con.fetchval(UPSERT, f"k{i}", "completed", BODY, v)
            await con.fetchrow(GET, f"k{i}")

    t = time.perf_counter()
    cpu = time.process_time()
    for s in range(0, n, c):
        await asyncio.gather(*(one(i) for i in range(s, s + c)))
    out = (time.perf_counter() - t, time.process_time() - cpu)
    await pool.execute("DELETE FROM t")
    await pool.close()
    return out


async def run_psycopg(n, c):
    from psycopg_pool import AsyncConnectionPool

    q1 = UPSERT.replace("$1", "%s").replace("$2", "%s").replace("$3", "%s").replace("$4", "%s")
    q2 = GET.replace("$1", "%s")
    pool = AsyncConnectionPool(dsn, min_size=c, max_size=c, open=False)
    await pool.open()

    async def one(i):
        async with pool.connection() as con:
            cur = await con.execute(q1, (f"k{i}", "working", BODY, 0))
            v = (await cur.fetchone())[0]
            cur = await con.execute(q1, (f"k{i}", "completed", BODY, v))
            await cur.fetchone()
            cur = await con.execute(q2, (f"k{i}",))
            await cur.fetchone()

    t = time.perf_counter()
    cpu = time.process_time()
    for s in range(0, n, c):
        await asyncio.gather(*(one(i) for i in range(s, s + c)))
    out = (time.perf_counter() - t, time.process_time() - cpu)
    async with pool.connection() as con:
        await con.execute("DELETE FROM t")
    await pool.close()
    return out


async def main():
    import asyncpg

    con = await asyncpg.connect(dsn)
    await con.execute(DDL)
    await con.close()
    N = 3000
    rows = []
    for c in (1, 16):
        res = {"asyncpg": [], "psycopg": []}
        for _ in range(3):
            res["asyncpg"].append(await run_asyncpg(N, c))
            res["psycopg"].append(await run_psycopg(N, c))
        for k, v in res.items():
            wall = statistics.median(x[0] for x in v)
            cpu = statistics.median(x[1] for x in v)
            rows.append((k, c, N / wall, cpu / N * 1e6))
    print(f"{'driver':8} {'c':>3} {'round trips/s':>14} {'client CPU µs/trip':>19}")
    for r in rows:
        print(f"{r[0]:8} {r[1]:>3} {r[2]:>14.0f} {r[3]:>19.0f}")


try:
    asyncio.run(main())
finally:
    pg.close()
