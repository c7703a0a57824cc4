"""The pipelining detector (bench/verify/pipelining.py) against the session's real
throwaway PostgreSQL and MariaDB (tests/conftest.py), with real drivers: a client that
waits for each answer must never be flagged, one that does not wait must be."""
from __future__ import annotations

import asyncio
import struct
from concurrent.futures import ThreadPoolExecutor

import asyncpg
import pytest

from bench.infra import db
from bench.verify.pipelining import (MySqlConversation, PostgresConversation, Relay,
                                     Unreadable)

pytestmark = pytest.mark.integration

# the pristine copy of the contract's rows: no other test changes it
ALL_USERS = "SELECT * FROM users_seed ORDER BY user_id"


def rows_of(ep, sql: str) -> list:
    with db.connect(ep) as conn:
        cur = conn.cursor()
        cur.execute(sql)
        return [tuple(row) for row in cur.fetchall()]


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_waiting_client_is_never_pipelined(databases, engine):
    with Relay(databases[engine]) as relay, db.connect(relay.endpoint) as conn:
        relay.reset()
        cur = conn.cursor()
        for i in range(5):
            cur.execute("SELECT %s", (i,))
            assert cur.fetchall()[0][0] in (i, str(i))
        cur.execute(ALL_USERS)         # 10,000 rows: many packets, many relayed chunks
        assert len(cur.fetchall()) == 10_000
        cur.execute("SELECT 1")        # framing still in step after the big answer
        report = relay.report()
    assert (report.connections, report.requests, report.pipelined,
            report.max_outstanding, report.opaque) == (1, 7, 0, 1, 0), report.describe()


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_bytes_are_relayed_unchanged(databases, engine):
    direct = rows_of(databases[engine], ALL_USERS)
    with Relay(databases[engine]) as relay:
        assert rows_of(relay.endpoint, ALL_USERS) == direct
        assert relay.report().connections == 1


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_many_waiting_clients_at_once_are_never_pipelined(databases, engine):
    """Four connections busy at the same time, each waiting for its answers: the
    relay's per-connection bookkeeping must not mix them up."""
    with Relay(databases[engine]) as relay:
        def client(k: int) -> None:
            with db.connect(relay.endpoint) as conn:
                cur = conn.cursor()
                for i in range(50):
                    cur.execute("SELECT %s", (k * 1000 + i,))
                    cur.fetchall()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(client, range(4)))
        report = relay.report()
    assert (report.connections, report.pipelined, report.max_outstanding) == (4, 0, 1)
    assert report.requests >= 200, report.describe()   # + MySQL's per-connection SET


def test_psycopg_pipeline_mode_is_pipelined(databases):
    with Relay(databases["postgres"]) as relay, db.connect(relay.endpoint) as conn:
        cur = conn.cursor()
        relay.reset()
        # psycopg sends Parse/Bind/Describe/Execute five times and one Sync at the end
        with conn.pipeline():
            for i in range(5):
                cur.execute("SELECT %s::int", (i,))
        assert cur.fetchall() == [(4,)]
        report = relay.report()
        assert (report.requests, report.pipelined, report.max_outstanding) == (5, 4, 5), \
            report.describe()
        relay.reset()                  # after the pipeline, waiting again: a clean window
        cur.execute("SELECT 1")
        assert (relay.report().pipelined, relay.report().connections) == (0, 1)


def test_asyncpg_fetch_loop_and_executemany(databases):
    async def session(ep, relay):
        conn = await asyncpg.connect(host=ep.host, port=ep.port, user=ep.user,
                                     password=ep.password, database=ep.name)
        try:
            await conn.execute("CREATE TEMP TABLE seen (x int)")
            relay.reset()
            for i in range(5):       # Bind/Execute/Sync, each awaited: not pipelined
                assert await conn.fetchval("SELECT $1::int", i) == i
            waiting = relay.report()
            relay.reset()
            # asyncpg 0.32's executemany prepares (Parse/Describe/Flush), then sends
            # Bind/Execute for every row and a single Sync: each Execute goes out before
            # the previous one's CommandComplete, which is pipelining as the contract
            # defines it (the next statement before the previous answer)
            await conn.executemany("INSERT INTO seen VALUES ($1)", [(i,) for i in range(5)])
            assert await conn.fetchval("SELECT count(*) FROM seen") == 5
            return waiting, relay.report()
        finally:
            await conn.close()

    with Relay(databases["postgres"]) as relay:
        waiting, batched = asyncio.run(session(relay.endpoint, relay))
    assert (waiting.requests, waiting.pipelined, waiting.max_outstanding) == (5, 0, 1)
    # 5 INSERT executions (4 of them pipelined) + the count(*) that waited
    assert (batched.requests, batched.pipelined, batched.max_outstanding) == (6, 4, 5), \
        batched.describe()


def mysql_packet(payload: bytes, seq: int = 0) -> bytes:
    return len(payload).to_bytes(3, "little") + bytes([seq]) + payload


def test_mysql_two_commands_at_once_are_pipelined(databases):
    with Relay(databases["mysql"]) as relay, db.connect(relay.endpoint) as conn:
        relay.reset()
        # PyMySQL authenticated through the relay; now two COM_QUERY (0x03) in one write
        conn._sock.sendall(mysql_packet(b"\x03SELECT 1") + mysql_packet(b"\x03SELECT 2"))
        answers = []
        for _ in range(2):
            conn._next_seq_id = 1      # each answer starts at sequence id 1
            conn._read_query_result()
            answers.append(conn._result.rows)
        assert answers == [((1,),), ((2,),)]
        report = relay.report()
    assert (report.requests, report.pipelined, report.max_outstanding) == (2, 1, 2), \
        report.describe()


def test_unreachable_database_drops_the_client(databases):
    gone = db.Endpoint("postgres", "127.0.0.1", 1, "bench", "bench")   # nothing listens
    with Relay(gone) as relay:
        with pytest.raises(db.ConnectError):
            db.connect(relay.endpoint, connect_timeout_s=2)
        assert relay.report().connections == 0


# ---- the parsers alone: any chunking of the stream gives the same counts

def pg_message(kind: bytes, body: bytes = b"") -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def feed(conversation, client: bytes, server: bytes, chunk: int) -> list[int]:
    depths = []
    for i in range(0, len(client), chunk):
        depths += conversation.client(client[i:i + chunk])
    for i in range(0, len(server), chunk):
        conversation.server(server[i:i + chunk])
    return depths


@pytest.mark.parametrize("chunk", [1, 3, 7, 1000])
def test_postgres_parser_does_not_depend_on_chunking(chunk):
    conv = PostgresConversation()
    ssl = struct.pack("!ii", 8, 80877103)
    params = b"user\0x\0\0"
    startup = struct.pack("!ii", 8 + len(params), 196608) + params
    assert feed(conv, ssl, b"N", chunk) == []            # SSL refused: plain from here
    assert feed(conv, startup + pg_message(b"p", b"pw\0"),
                pg_message(b"R", b"\0\0\0\0") + pg_message(b"Z", b"I"), chunk) == []
    query = pg_message(b"Q", b"SELECT 1\0")
    # two Query messages in one write: the second is sent while the first is outstanding
    assert feed(conv, query + query, b"", chunk) == [1, 2]
    answer = pg_message(b"T", b"x" * 40) + pg_message(b"D", b"y" * 5000) + \
        pg_message(b"C", b"SELECT 1\0") + pg_message(b"Z", b"I")
    assert feed(conv, b"", answer + answer, chunk) == []
    assert feed(conv, query, b"", chunk) == [1]           # both answered: waiting again
    # answered up to its CommandComplete, not yet its ReadyForQuery: tokio-postgres'
    # row stream is done there and may send the next statement; that one waited
    assert feed(conv, b"", answer[:-6], chunk) == []
    execute = pg_message(b"B", b"\0\0" + bytes(6)) + pg_message(b"E", b"\0" + bytes(4)) + \
        pg_message(b"S")
    assert feed(conv, execute, answer[-6:], chunk) == [1]
    # a dropped statement's Close + Sync, not awaited, then a statement: not pipelined
    close = pg_message(b"C", b"Ss1\0") + pg_message(b"S")
    assert feed(conv, close + execute, b"", chunk) == [2]  # the Execute above is unanswered
    executed = pg_message(b"2") + pg_message(b"C", b"SELECT 1\0") + pg_message(b"Z", b"I")
    closed = pg_message(b"3") + pg_message(b"Z", b"I")
    assert feed(conv, b"", executed + closed + executed, chunk) == []
    assert feed(conv, close + execute, b"", chunk) == [1]


def test_encrypted_or_compressed_connections_are_unreadable():
    conv = PostgresConversation()
    conv.client(struct.pack("!ii", 8, 80877103))
    with pytest.raises(Unreadable):
        conv.server(b"S")
    conv = MySqlConversation()
    conv.server(mysql_packet(b"\x0a5.5.5-greeting\0"))
    with pytest.raises(Unreadable):
        conv.client(mysql_packet((0x800 | 0x200).to_bytes(4, "little") + bytes(28), seq=1))
