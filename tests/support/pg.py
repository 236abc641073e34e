"""Fresh PostgreSQL databases on the local server, dropped afterwards."""

from __future__ import annotations

import uuid

import psycopg

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"


def create_database() -> tuple[str, str]:
    name = f"fawn_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name, f"postgresql://postgres@127.0.0.1:5432/{name}"


def drop_database(name: str) -> None:
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
