-- llm-compactor session store, schema version 1.
-- Applied by PostgresStore on start, inside one transaction under an advisory lock,
-- and recorded in compactor_schema_migrations. Never edit an applied migration: add
-- the next numbered file instead.

-- One row per session. `last_seq` is the session's last event number; appends lock this
-- row (INSERT .. ON CONFLICT DO UPDATE) so that numbers are assigned gap-free by one
-- writer at a time per session, while different sessions append in parallel.
CREATE TABLE compactor_sessions (
    session     TEXT PRIMARY KEY,
    last_seq    BIGINT NOT NULL DEFAULT 0,
    last_ts     TEXT,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- The append-only event log. `line` is the exact transcript envelope text (TEXT keeps
-- the bytes, so an export is byte-identical to the JSONL file); `envelope` is a JSONB
-- copy for queries (NULL for the rare line JSONB cannot hold, e.g. a \u0000 escape).
CREATE TABLE compactor_events (
    session   TEXT NOT NULL REFERENCES compactor_sessions (session) ON DELETE CASCADE,
    seq       BIGINT NOT NULL,
    id        TEXT NOT NULL,
    kind      TEXT NOT NULL,
    line      TEXT NOT NULL,
    ts        TEXT,
    envelope  JSONB,
    PRIMARY KEY (session, seq),
    CONSTRAINT compactor_events_id_unique UNIQUE (session, id)
);

CREATE INDEX compactor_events_kind ON compactor_events (session, kind);

-- The rewrite a proxy serves per session; replaced by compare-and-set on `generation`.
CREATE TABLE compactor_rewrites (
    session          TEXT PRIMARY KEY,
    generation       BIGINT NOT NULL,
    original_len     BIGINT NOT NULL,
    original_digest  TEXT NOT NULL,
    replacement      TEXT NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- The compaction lease: one holder per session until it releases or `expires_at`
-- passes (a crashed holder's lease simply expires). Times are the server's clock, so
-- instances with skewed clocks still agree.
CREATE TABLE compactor_leases (
    session     TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);

-- One append in one round trip: lock the session row (the upsert), skip ids the session
-- holds and repeats within the batch, number the rest gap-free after `last_seq`, and
-- advance the session. VOLATILE plpgsql takes a fresh snapshot per statement, so the
-- id check after the lock sees every append committed before it.
CREATE FUNCTION compactor_append(
    p_session    TEXT,
    p_ids        TEXT[],
    p_kinds      TEXT[],
    p_lines      TEXT[],
    p_ts         TEXT[],
    p_envelopes  TEXT[]
) RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    v_last   BIGINT;
    v_added  BIGINT;
BEGIN
    INSERT INTO compactor_sessions AS s (session) VALUES (p_session)
    ON CONFLICT (session) DO UPDATE SET updated_at = now()
    RETURNING s.last_seq INTO v_last;

    WITH input AS (
        SELECT t.id, t.kind, t.line, t.ts, t.envelope, t.ord
        FROM unnest(p_ids, p_kinds, p_lines, p_ts, p_envelopes)
             WITH ORDINALITY AS t (id, kind, line, ts, envelope, ord)
    ), firsts AS (
        SELECT DISTINCT ON (i.id) i.* FROM input i ORDER BY i.id, i.ord
    ), fresh AS (
        SELECT f.* FROM firsts f
        WHERE NOT EXISTS (
            SELECT 1 FROM compactor_events e WHERE e.session = p_session AND e.id = f.id
        )
    )
    INSERT INTO compactor_events (session, seq, id, kind, line, ts, envelope)
    SELECT p_session, v_last + row_number() OVER (ORDER BY fr.ord),
           fr.id, fr.kind, fr.line, fr.ts, fr.envelope::jsonb
    FROM fresh fr;
    GET DIAGNOSTICS v_added = ROW_COUNT;

    IF v_added > 0 THEN
        UPDATE compactor_sessions
        SET last_seq = v_last + v_added,
            last_ts = COALESCE(
                (SELECT e.ts FROM compactor_events e
                 WHERE e.session = p_session AND e.seq = v_last + v_added),
                last_ts)
        WHERE session = p_session;
    END IF;
    RETURN v_last + v_added;
END
$fn$;
