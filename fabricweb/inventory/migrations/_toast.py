"""How the readings' columns are compressed, for the migrations that add them (a name led by "_": not one)."""


def compress_with_lz4(schema_editor, table: str, columns: tuple[str, ...]) -> None:
    """PostgreSQL built with lz4: the readings, rewritten with every poll, compress in less than half of
    pglz's time (BENCHMARKS.md). Elsewhere the default stays."""
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        row = cursor.fetchone()
    if row and row[0]:
        for column in columns:
            schema_editor.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION lz4")
