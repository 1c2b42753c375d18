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
