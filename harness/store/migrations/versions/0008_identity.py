"""Identity and revisions: a uid on every entity that travels, campaign names unique within
their site, run.revision

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"

# The tables whose rows get a uid here (run has one since 0005, soak_window since 0007).
# request has none: a request is (its benchmark's uid, idx); run_lock is a live process's.
TABLES = ("site", "campaign", "check", "cell", "benchmark", "signoff", "event", "artifact",
          "host_fact", "engine_process", "series")
BATCH = 10000  # rows given their uid per statement
NEW_UNIQUE = "uq_campaign_site_name"


def _fill(bind: sa.Connection, table: str) -> None:
    """A fresh uuid4 (hex, as schema.new_uid) for every row, in batches by id (a G4 run's
    series hold many rows: never all of them in memory at once). SQLite takes a batch as
    one executemany; PostgreSQL as one UPDATE joined to the batch's arrays (executemany
    there updated ~20 k rows/s, this ~3x that: a G4 store's series are millions)."""
    t = sa.table(table, sa.column("id", sa.Integer), sa.column("uid", sa.String(32)))
    quoted = bind.dialect.identifier_preparer.quote(table)
    postgresql = bind.dialect.name == "postgresql"
    put = (sa.text(f"UPDATE {quoted} SET uid = v.uid FROM unnest(CAST(:ids AS integer[]), "
                   f"CAST(:uids AS varchar[])) AS v(id, uid) WHERE {quoted}.id = v.id")
           if postgresql else
           sa.update(t).where(t.c.id == sa.bindparam("row_id")).values(
               uid=sa.bindparam("row_uid")))
    last = None
    while True:
        q = sa.select(t.c.id).order_by(t.c.id).limit(BATCH)
        if last is not None:
            q = q.where(t.c.id > last)
        ids = [int(i) for i in bind.execute(q).scalars()]
        if not ids:
            return
        if postgresql:
            bind.execute(put, {"ids": ids, "uids": [uuid.uuid4().hex for _ in ids]})
        else:
            bind.execute(put, [{"row_id": i, "row_uid": uuid.uuid4().hex} for i in ids])
        last = ids[-1]


def _campaign(unique_site_name: bool) -> list[Any]:
    """campaign's columns and constraints: at 0008 (uid, unique within its site) or as
    0001 made it (name unique in the store)."""
    cols: list[Any] = [
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("site_id", sa.Integer, sa.ForeignKey("site.id"), nullable=False),
        sa.Column("name", sa.String(200), nullable=False, unique=not unique_site_name),
        sa.Column("created_at", sa.Float, nullable=False),
    ]
    if unique_site_name:
        cols += [sa.Column("uid", sa.String(32), nullable=False),
                 sa.UniqueConstraint("site_id", "name", name=NEW_UNIQUE)]
    return cols


def _rebuild_campaign_on_sqlite(bind: sa.Connection, *, identity: bool) -> None:
    """SQLite cannot drop the unique constraint 0001 put on campaign.name: the table is
    made again. Not by Alembic's batch (copy, drop, rename): dropping campaign, which run
    and run_lock reference, is a foreign key violation, and foreign keys cannot be turned
    off inside the migration's transaction. Deferred to the commit instead, the rows are
    read, the table dropped and made again, and the rows put back: each row put back
    settles the references to it, so SQLite's commit-time check passes, and would refuse
    the migration if any reference were left dangling."""
    raw = bind.connection.driver_connection
    if raw is not None and not getattr(raw, "in_transaction", True):
        # pysqlite outside a transaction (a test driving Alembic itself) would commit each
        # statement alone, and the deferral with it.
        bind.exec_driver_sql("BEGIN")
    bind.exec_driver_sql("PRAGMA defer_foreign_keys = ON")
    rows = [dict(r._mapping) for r in bind.execute(sa.text(
        "SELECT * FROM campaign ORDER BY id"))]
    op.drop_table("campaign")
    table = op.create_table("campaign", *_campaign(identity))
    assert table is not None
    if identity:
        op.create_index("ix_campaign_uid", "campaign", ["uid"], unique=True)
        for row in rows:
            row["uid"] = row.get("uid") or uuid.uuid4().hex
    else:
        for row in rows:
            row.pop("uid", None)
    if rows:
        bind.execute(sa.insert(table), rows)


def _refuse_shared_names(bind: sa.Connection) -> None:
    """Going back to names unique in the store is impossible while two sites share one."""
    shared = list(bind.execute(sa.text(
        "SELECT name FROM campaign GROUP BY name HAVING COUNT(*) > 1 ORDER BY name"))
        .scalars())
    if shared:
        raise RuntimeError(
            "cannot downgrade below 0008: campaign names shared by several sites ("
            + ", ".join(repr(n) for n in shared) + ") must be unique in the store before "
            "0007; rename or remove all but one of each first")


def upgrade() -> None:
    bind = op.get_bind()
    sqlite = bind.dialect.name == "sqlite"
    for table in TABLES:
        if sqlite and table == "campaign":
            _rebuild_campaign_on_sqlite(bind, identity=True)
            continue
        if sqlite:
            # As 0005 did for run.uid: SQLite adds a NOT NULL column only with a default
            # (no table rebuild, which the foreign keys refuse for site and benchmark);
            # the unique index refuses a second row written without a uid.
            op.add_column(table, sa.Column("uid", sa.String(32), nullable=False,
                                           server_default=""))
        else:
            op.add_column(table, sa.Column("uid", sa.String(32), nullable=True))
        _fill(bind, table)
        if not sqlite:
            op.alter_column(table, "uid", existing_type=sa.String(32), nullable=False)
        op.create_index(f"ix_{table}_uid", table, ["uid"], unique=True)
    if not sqlite:
        # A campaign's name is unique within its site: two sites may each have a `poc`.
        for uq in sa.inspect(bind).get_unique_constraints("campaign"):
            if uq["column_names"] == ["name"] and uq["name"]:
                op.drop_constraint(uq["name"], "campaign", type_="unique")
        op.create_unique_constraint(NEW_UNIQUE, "campaign", ["site_id", "name"])
    # The revision of a run's measured content: resume and abort bump it.
    op.add_column("run", sa.Column("revision", sa.Integer, nullable=False,
                                   server_default="1"))


def downgrade() -> None:
    bind = op.get_bind()
    sqlite = bind.dialect.name == "sqlite"
    _refuse_shared_names(bind)
    # Plain DROP COLUMN (SQLite >= 3.35, PostgreSQL), as 0005: a batch rebuild of run
    # would drop it, which the foreign keys of every other table refuse.
    op.execute("ALTER TABLE run DROP COLUMN revision")
    if sqlite:
        _rebuild_campaign_on_sqlite(bind, identity=False)
    else:
        op.drop_constraint(NEW_UNIQUE, "campaign", type_="unique")
        op.create_unique_constraint("campaign_name_key", "campaign", ["name"])
    for table in TABLES:
        if sqlite and table == "campaign":
            continue  # made again above, without uid
        op.drop_index(f"ix_{table}_uid", table)
        op.execute(f'ALTER TABLE "{table}" DROP COLUMN uid')
